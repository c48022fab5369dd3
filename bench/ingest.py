"""Ingest benchmark: end-to-end updates/s on Ray, log bytes per event, shard memory, a
snapshot in the middle of the stream -- before and after, in one run.

Two streams, each written as a SNAP edge file and ingested with ``GraphCluster.ingest``
(the public API) into 2 shard actors on a fresh local Ray instance:

* **CollegeMsg x 10**: the real data repeated ten times, each copy shifted after the
  previous one (598,350 events over the same 1,899 vertices and 20,296 edges);
* **skewed**: :func:`bench.workloads.skewed_stream`, 600,000 events with Zipf endpoints
  (about 20 k vertices, 57.9 k distinct edges, a hub with 13.8 k out-edges): the stream on
  which format 1 wrote 1.2 KB per event, because a hub was checkpointed whole every 64 of
  its executions.

For each: updates/s (wall), CPU seconds of the shard processes and the driver, the log's
bytes on disk per event once the graph is closed, the shards' resident memory growth per
vertex and per edge, and (skewed) the latency of ``snapshot(at=T)`` at the middle of the
stream's time span. Both trees -- this checkout (``now``) and the commit before log
format 2 (``before``, see :mod:`bench.baseline`) -- run the same probe in fresh processes.
Writes ``ingest.json`` and ``ingest.md`` (``--name``: other names, e.g. the cost of
event time, issue 13, against the commit before it)::

    python -m bench.ingest
    python -m bench.ingest --before 749e83b --copies 3 --skewed-events 200000 --name event_time
    python -m bench.ingest --before fcdd218 --raphtory --name ingest_columns

``--raphtory`` also times Raphtory's bulk load of each file (pyarrow CSV read and
``load_edges``, median of 3) in its own environment, the issue-21 comparison.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import BEFORE, measure, tree
from bench.envs import python_of
from bench.report import machine, write_results
from bench.workloads import skewed_stream, write_snap
from chronoray.datasets import collegemsg_path

RESULTS = Path(__file__).parent / "results"
RAPHTORY_SIDE = Path(__file__).with_name("raphtory_side.py")
ISSUE = {
    "collegemsg x10": {"rate": 34_000},
    "skewed": {"seconds": 49.9, "log_bytes_per_event": 1200, "snapshot_mid_seconds": 9.9},
}


def _streams(workdir: Path, copies: int, skewed_events: int) -> dict[str, tuple[Path, float]]:
    """The two streams as SNAP files, with the middle of each one's time span."""
    lines = collegemsg_path().read_text().split("\n")
    edges = [tuple(int(x) for x in line.split()) for line in lines if line.strip()]
    t0 = min(e[2] for e in edges)
    span = max(e[2] for e in edges) - t0
    college = [(s, d, t + k * (span + 1)) for k in range(copies) for s, d, t in edges]
    skewed = skewed_stream(skewed_events, edges=max(skewed_events * 58 // 600, 100))
    out = {}
    for name, stream in ((f"collegemsg x{copies}", college), ("skewed", skewed)):
        path = workdir / f"{name.replace(' ', '-')}.txt"
        write_snap(path, stream)
        out[name] = (path, (stream[0][2] + stream[-1][2]) / 2)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10, help="CollegeMsg copies.")
    parser.add_argument("--skewed-events", type=int, default=600_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument(
        "--before", default=BEFORE, help="Git revision measured as 'before' ('none': skip)."
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    parser.add_argument("--name", default="ingest", help="Results file name (NAME.json/.md).")
    parser.add_argument(
        "--raphtory",
        action="store_true",
        help="Also time Raphtory's load_edges of each file (its environment: bench.envs).",
    )
    args = parser.parse_args(argv)
    trees = {"now": tree(None, warm=True), "before": tree(args.before, warm=True)}
    trees = {name: root for name, root in trees.items() if root is not None}
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-ingest-"))
    runs: dict[str, dict[str, Any]] = {}
    try:
        for stream, (path, mid) in _streams(workdir, args.copies, args.skewed_events).items():
            for name, root in trees.items():
                runs[f"{stream} ({name})"] = measure(
                    root,
                    "ray_ingest",
                    timeout=3600,
                    file=str(path),
                    shards=args.shards,
                    workdir=str(workdir / name),
                    mid_t=mid if stream == "skewed" else None,
                )
            if args.raphtory:
                runs[f"{stream} (raphtory)"] = _raphtory_load(path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "benchmark": "ingest",
        "shards": args.shards,
        "copies": args.copies,
        "skewed_events": args.skewed_events,
        "before": args.before if "before" in trees else None,
        "machine": machine(),
        "runs": runs,
        "ratios": _ratios(runs),
        "issue": ISSUE,
    }
    write_results(args.out, args.name, result, _table(result))
    return result


def _raphtory_load(path: Path) -> dict[str, Any]:
    """Raphtory's bulk load of a SNAP file (pyarrow CSV read + ``load_edges``, median of 3:
    :mod:`bench.raphtory_side` ``--load-only``), in its own environment (made by
    :func:`bench.envs.ensure`)."""
    python = python_of("raphtory")
    if python is None:
        raise SystemExit("no Raphtory environment: python -m bench.envs raphtory")
    side = [str(python), str(RAPHTORY_SIDE), str(path), "--load-only", "--trials", "3"]
    out = subprocess.run(side, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    seconds, updates = result["load_seconds"], sum(1 for line in path.open() if line.strip())
    return {
        "seconds": seconds,
        "edges": result["edges"],
        "updates": updates,
        "rate": updates / seconds,
    }


def _ratios(runs: dict[str, Any]) -> dict[str, float]:
    ratios = {}
    for key in [k for k in runs if k.endswith("(raphtory)")]:
        stream = key.removesuffix(" (raphtory)")
        for tree_name in ("now", "before"):
            mine = runs.get(f"{stream} ({tree_name})")
            if mine is not None:
                ratios[f"{stream}: ingest seconds {tree_name} / raphtory load"] = (
                    mine["seconds"] / runs[key]["seconds"]
                )
    for key in [k for k in runs if k.endswith("(now)")]:
        stream = key.removesuffix(" (now)")
        before = runs.get(f"{stream} (before)")
        if before is None:
            continue
        now = runs[key]
        ratios[f"{stream}: updates/s now / before"] = now["rate"] / before["rate"]
        ratios[f"{stream}: log bytes before / now"] = (
            before["log_bytes_per_event"] / now["log_bytes_per_event"]
        )
        shard_cpu = sum(now["shard_cpu_seconds"]) / sum(before["shard_cpu_seconds"])
        ratios[f"{stream}: shard cpu now / before"] = shard_cpu
        if "snapshot_mid_seconds" in now:
            ratios[f"{stream}: snapshot at mid T before / now"] = (
                before["snapshot_mid_seconds"] / now["snapshot_mid_seconds"]
            )
    return ratios


def _table(result: dict[str, Any]) -> str:
    before = result["before"]
    format_1 = before == BEFORE
    lines = [
        f"# Ingest benchmark: Ray, {result['shards']} shards, `GraphCluster.ingest` of SNAP files",
        "",
        f"{result['machine']['cpus']} CPUs, Python {result['machine']['python']}. "
        + (
            f"'before' = commit {before}{' (log format 1)' * format_1}, same run. "
            if before
            else ""
        )
        + "cpu = CPU seconds of the shard processes (summed) and of the driver during the "
        "ingest; rss = growth of the shards' resident memory over the ingest, per vertex and "
        "per edge of the graph; log bytes = all files of the log directory after close."
        + (
            " The issue's numbers: CollegeMsg x 10 34 k updates/s; skewed 49.9 s, ~1,200 "
            "B/event, snapshot at mid T 9.9 s."
            if format_1
            else ""
        ),
        "",
        "| stream (tree) | updates | seconds | updates/s | shard cpu s | driver cpu s "
        "| log B/event | rss B/vertex | rss B/edge | snapshot mid T s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, run in result["runs"].items():
        if name.endswith("(raphtory)"):
            lines.append(
                f"| {name} | {run['updates']:,} | {run['seconds']:.2f} | {run['rate']:,.0f} "
                "| | | | | | |"
            )
            continue
        snap = f"{run['snapshot_mid_seconds']:.2f}" if "snapshot_mid_seconds" in run else ""
        lines.append(
            f"| {name} | {run['updates']:,} | {run['seconds']:.1f} | {run['rate']:,.0f} "
            f"| {sum(run['shard_cpu_seconds']):.1f} | {run['driver_cpu_seconds']:.1f} "
            f"| {run['log_bytes_per_event']:,.0f} | {run['rss_bytes_per_vertex']:,.0f} "
            f"| {run['rss_bytes_per_edge']:,.0f} | {snap} |"
        )
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in result["ratios"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
