"""The shard hot path: a profile of the core loop, memory per vertex and per edge, and the
issue's table (previous numbers beside the new ones) from every result of this run.

1. **Profile** (cProfile, this checkout, in this process): the core loop on the ring
   workload and on CollegeMsg (default vertex class, 2 in-process shards), each with a
   RocksDB log; the top functions by own time.
2. **Memory** (tracemalloc, one shard core without a log, before and after trees): bytes
   per vertex beyond its state dict, and per edge, for 20 k vertices and 60 k edges.
3. **The table of the issue**, from ``ring.json``, ``reconstruct.json`` and
   ``ingest.json`` in ``--out`` (run ``bench.ring``, ``bench.reconstruct`` and
   ``bench.ingest`` first; ``./run bench`` does) and the memory above.

Writes ``hotpath.json`` and ``hotpath.md``.

    python -m bench.hotpath
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import BEFORE, measure, tree
from bench.report import machine, write_results

RESULTS = Path(__file__).parent / "results"


def _profile(name: str, workdir: Path, scale: float, lines: int) -> dict[str, Any]:
    from bench.workloads import RingVertex, ring_seed
    from chronoray.datasets import collegemsg_path
    from chronoray.sources import SnapEdgeSource
    from shards.local import LocalRuntime
    from shards.logstore import RocksLogStore
    from vertex import VertexTypes

    path = workdir / name
    if name == "ring":
        rt = LocalRuntime(
            1, VertexTypes([RingVertex]), lambda k: RocksLogStore(path), batch_size=1000
        )
        seed = ring_seed(1000, max(1000, int(200_000 * scale) // 1000 * 1000))
        work = lambda: rt.ingest(seed)  # noqa: E731
    else:
        updates = list(SnapEdgeSource(collegemsg_path()).read())
        updates = updates[: max(1000, int(len(updates) * scale))]
        rt = LocalRuntime(2, None, lambda k: RocksLogStore(path / str(k)))
        work = lambda: rt.ingest(updates)  # noqa: E731
    profiler = cProfile.Profile()
    profiler.runcall(work)
    executions = sum(core.worker_clock for core in rt.cores)
    rt.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(lines)
    text = out.getvalue()
    top = text[text.index("   ncalls") :].rstrip() if "   ncalls" in text else text
    return {
        "executions": executions,
        "profiled_seconds": stats.total_tt,  # type: ignore[attr-defined]
        "top": top.replace(str(Path.cwd()) + "/", ""),
    }


def _load(out: Path, name: str) -> dict[str, Any] | None:
    path = out / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="Fraction of the workloads.")
    parser.add_argument("--lines", type=int, default=18, help="Profile lines kept.")
    parser.add_argument(
        "--before", default=BEFORE, help="Git revision measured as 'before' ('none': skip)."
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-hotpath-"))
    try:
        profiles = {
            name: _profile(name, workdir, args.scale, args.lines) for name in ("ring", "collegemsg")
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    sizes = {
        "vertices": max(100, int(20_000 * args.scale)),
        "edges": max(300, int(60_000 * args.scale)),
    }
    trees = {"now": tree(None), "before": tree(args.before)}
    memory = {name: measure(root, "memory", **sizes) for name, root in trees.items() if root}
    result = {
        "benchmark": "hotpath",
        "scale": args.scale,
        "before": args.before if trees["before"] else None,
        "machine": machine(),
        "profiles": profiles,
        "memory": memory,
    }
    result["table"] = _issue_table(args.out, memory)
    write_results(args.out, "hotpath", result, _markdown(result))
    return result


def _issue_table(out: Path, memory: dict[str, Any]) -> list[list[str]]:
    """Rows ``[measure, issue (before), before (same run), now, target]``."""
    ring, recon, ingest = _load(out, "ring"), _load(out, "reconstruct"), _load(out, "ingest")
    rows: list[list[str]] = []

    def num(value: float | None, fmt: str = "{:,.0f}") -> str:
        return "" if value is None else fmt.format(value)

    if ring:
        runs, ratios = ring["runs"], ring["ratios"]

        def rate(tree_name: str) -> str:
            run = runs.get(f"core-logged ({tree_name})")
            return "" if run is None else f"{run['rate']:,.0f} ({run['cpu_rate']:,.0f} cpu)"

        def cost(tree_name: str) -> str:
            wall = ratios.get(f"logging cost, ephemeral / logged ({tree_name})")
            cpu = ratios.get(f"logging cost, ephemeral / logged, cpu ({tree_name})")
            return "" if wall is None else f"{wall:.2f}x ({cpu:.2f}x cpu)"

        rows.append(
            [
                "logged executions/s, core loop, ring",
                "90 k",
                rate("before"),
                rate("now"),
                ">= 250 k",
            ]
        )
        rows.append(
            ["logging cost (ephemeral / logged)", "1.86x", cost("before"), cost("now"), "<= 1.3x"]
        )
    if recon:
        s = recon["summary"]
        rows.append(
            [
                "full replay, entries/s",
                "184 k",
                num(s.get("full replay entries/s (before)")),
                num(s.get("full replay entries/s (now)")),
                ">= 1 M",
            ]
        )
        for fraction in ("25%", "50%", "75%", "100%"):
            key = f"latency at {fraction}, default checkpoints, cpu"
            rows.append(
                [
                    f"snapshot at {fraction}, {recon['entries']:,}-entry log, default "
                    "checkpoints (cpu time)",
                    {"25%": "1.9 s", "100%": "0.5 s"}.get(fraction, ""),
                    num(s.get(f"{key} (before)"), "{:.3f} s"),
                    num(s.get(f"{key} (now)"), "{:.3f} s"),
                    "<= 0.1 s",
                ]
            )
    if ingest:
        runs = ingest["runs"]
        college = next(
            (
                k.removesuffix(" (now)")
                for k in runs
                if k.startswith("collegemsg") and k.endswith("(now)")
            ),
            None,
        )
        for stream, label in ((college, "CollegeMsg x 10"), ("skewed", "skewed 600 k stream")):
            now, before = runs.get(f"{stream} (now)"), runs.get(f"{stream} (before)")
            if now is None:
                continue
            rows.append(
                [
                    f"ingest on Ray, {ingest['shards']} shards, updates/s, {label}",
                    "34 k" if stream == college else "12 k",
                    num(before and before["rate"]),
                    num(now["rate"]),
                    ">= 150 k" if stream == college else "(<= 5 s)",
                ]
            )
            rows.append(
                [
                    f"ingest seconds, {label}",
                    "" if stream == college else "49.9 s",
                    num(before and before["seconds"], "{:.1f} s"),
                    num(now["seconds"], "{:.1f} s"),
                    "" if stream == college else "<= 5 s",
                ]
            )
            rows.append(
                [
                    f"log bytes per stream event, {label}",
                    "" if stream == college else "~1,200 B",
                    num(before and before["log_bytes_per_event"], "{:,.0f} B"),
                    num(now["log_bytes_per_event"], "{:,.0f} B"),
                    "<= 250 B, flat as hubs grow",
                ]
            )
            rows.append(
                [
                    f"shard resident memory growth per vertex / per edge, {label}",
                    "",
                    _rss(before),
                    _rss(now),
                    "",
                ]
            )
            if "snapshot_mid_seconds" in now:
                rows.append(
                    [
                        f"snapshot at mid T, {label}",
                        "9.9 s",
                        num(before and before["snapshot_mid_seconds"], "{:.2f} s"),
                        num(now["snapshot_mid_seconds"], "{:.2f} s"),
                        "<= 0.5 s",
                    ]
                )
    rows.append(
        [
            "memory per vertex beyond its state (in-process core)",
            "(measure)",
            num(memory.get("before", {}).get("bytes_per_vertex_beyond_state"), "{:,.0f} B"),
            num(memory["now"]["bytes_per_vertex_beyond_state"], "{:,.0f} B"),
            "<= 300 B",
        ]
    )
    return rows


def _rss(run: dict[str, Any] | None) -> str:
    if run is None:
        return ""
    return f"{run['rss_bytes_per_vertex']:,.0f} / {run['rss_bytes_per_edge']:,.0f} B"


def _markdown(result: dict[str, Any]) -> str:
    before = result["before"]
    lines = [
        "# The shard hot path: the issue's table, memory, and a profile of the core loop",
        "",
        f"{result['machine']['cpus']} CPUs, Python {result['machine']['python']}. "
        "'issue' = the numbers the issue quotes (another moment of this VM); "
        + (
            f"'before' = commit {before} (log format 1) measured in the same run as 'now'. "
            if before
            else ""
        )
        + "Details: ring.md, reconstruct.md, ingest.md.",
        "",
        "| measure | issue | before | now | target |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in result["table"]]
    lines += [
        "",
        "## Memory (tracemalloc, one core without a log)",
        "",
        "| tree | vertices | edges | B/vertex | state B/vertex | B/vertex beyond state | B/edge |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in result["memory"].items():
        sizes = (
            m["bytes_per_vertex"],
            m["state_bytes_per_vertex"],
            m["bytes_per_vertex_beyond_state"],
            m["bytes_per_edge"],
        )
        lines.append(
            f"| {name} | {m['vertices']:,} | {m['edges']:,} | "
            + " | ".join(f"{x:,.0f}" for x in sizes)
            + " |"
        )
    for name, profile in result["profiles"].items():
        lines += [
            "",
            f"## Profile of the core loop: {name} ({profile['executions']:,} logged executions, "
            f"{profile['profiled_seconds']:.2f} s under cProfile)",
            "",
            "```",
            profile["top"],
            "```",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
