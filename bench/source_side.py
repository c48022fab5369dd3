"""Source side benchmark: what a source costs before anything reaches a shard -- check the
file's time order, read and validate its lines, route the updates into shard batches
(both halves of every stream edge, 2 shards) -- rows (``before``) against columns (this
checkout: Arrow kernels over chunks of lines, ``SourceFeed.offer_columns``), in one run.

Two files, each ten time-shifted copies of the real data: CollegeMsg x10 (SNAP, 598,350
lines) and Bitcoin OTC x10 (CSV with a rating per edge, 355,920 lines). Trials alternate
the two trees (A B A B ...) in fresh processes (:mod:`bench.baseline`); the table shows
medians and the ratio. A cProfile of this checkout's columns path gives where the rest of
the time goes. Writes ``source_side.json`` and ``source_side.md``::

    python -m bench.source_side --before 0bae376
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, measure, tree
from bench.report import machine, write_results
from bench.workloads import write_snap
from chronoray.datasets import collegemsg_path

RESULTS = Path(__file__).parent / "results"
DATA = ROOT.parent / "shared" / "data"


def _copies(rows: list[tuple[Any, ...]], copies: int) -> list[tuple[Any, ...]]:
    """``copies`` of ``rows`` (time last), each shifted after the one before."""
    times = [r[-1] for r in rows]
    span = max(times) - min(times) + 1
    return [(*r[:-1], r[-1] + k * span) for k in range(copies) for r in rows]


def _files(workdir: Path, copies: int) -> dict[str, tuple[Path, str]]:
    lines = collegemsg_path().read_text().split("\n")
    college = [tuple(int(x) for x in line.split()) for line in lines if line.strip()]
    snap = workdir / "collegemsg.txt"
    write_snap(snap, sorted(_copies(college, copies), key=lambda r: r[-1]))
    rows = []
    for line in (DATA / "bitcoinotc.csv").read_text().splitlines():
        src, dst, rating, ts = line.split(",")
        rows.append((src, dst, rating, float(ts)))
    csv = workdir / "bitcoinotc.csv"
    shifted = sorted(_copies(rows, copies), key=lambda r: r[-1])
    csv.write_text("".join(f"{s},{d},{r},{t!r}\n" for s, d, r, t in shifted))
    return {
        f"collegemsg x{copies} (snap)": (snap, "snap"),
        f"bitcoin otc x{copies} (csv)": (csv, "bitcoin-csv"),
    }


def _profile(path: Path, fmt: str) -> list[str]:
    """The top lines (by own time) of this checkout's source side on ``path``."""
    from bench.probe import source_side

    profiler = cProfile.Profile()
    profiler.runcall(source_side, str(path), fmt, 2, True, 1000)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    return [line for line in out.getvalue().splitlines() if line.strip()][-14:]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="0bae376", help="Commit of the row path.")
    parser.add_argument("--copies", type=int, default=10, help="Copies of each file.")
    parser.add_argument("--trials", type=int, default=3, help="Trials per tree.")
    args = parser.parse_args(argv)
    trees = {"now": tree(None), "before": tree(args.before)}
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-source-side-"))
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        files = _files(workdir, args.copies)
        for name, (path, fmt) in files.items():
            runs[name] = {"now": [], "before": []}
            for _ in range(args.trials):
                for label, root in trees.items():
                    assert root is not None
                    params = {"file": str(path), "fmt": fmt, "shards": 2, "halves": True}
                    runs[name][label].append(
                        measure(root, "source_side", batch_size=1000, **params)
                    )
        local: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for name, (path, fmt) in files.items():
            local[name] = {"now": [], "before": []}
            for _ in range(args.trials):
                for label, root in trees.items():
                    assert root is not None
                    params = {"file": str(path), "fmt": fmt, "shards": 2}
                    local[name][label].append(
                        measure(root, "local_ingest", workdir=str(workdir), **params)
                    )
        profile = _profile(*files[f"collegemsg x{args.copies} (snap)"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "machine": machine(),
        "before": args.before,
        "runs": runs,
        "local": local,
        "profile": profile,
    }
    write_results(RESULTS, "source_side", result, _table(result))
    return result


def _median(trials: list[dict[str, Any]], key: str) -> float:
    return statistics.median(t[key] for t in trials)


def _table(result: dict[str, Any]) -> str:
    lines = [
        "# Source side: check order, read, route into shard batches (rows vs columns)",
        "",
        f"{result['machine']}. before = {result['before']} (rows), now = this checkout "
        "(columns); 2 shards, both halves of every stream edge, batches of 1,000; medians.",
        "",
        "| file | updates | before cpu s | now cpu s | now updates/s (cpu) | before / now (cpu) "
        "| before wall s | now wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, by_tree in result["runs"].items():
        before, now = by_tree["before"], by_tree["now"]
        assert {t["items"] for t in before} == {t["items"] for t in now}, "not the same items"
        n = now[0]["updates"]
        b, a = _median(before, "cpu_seconds"), _median(now, "cpu_seconds")
        wb, wa = _median(before, "seconds"), _median(now, "seconds")
        lines.append(
            f"| {name} | {n:,} | {b:.2f} | {a:.2f} | {n / a:,.0f} | {b / a:.1f}x | {wb:.2f} "
            f"| {wa:.2f} |"
        )
    lines += [
        "",
        "End to end in one process: `GraphCluster(runtime='local')`, 2 shards with RocksDB logs,",
        "the file ingested through the public API (each tree its own path: before rows and the",
        "general execute steps; now columns and the direct steps); CPU seconds, medians.",
        "",
        "| file | before cpu s | now cpu s | before updates/s (cpu) | now updates/s (cpu) | "
        "before / now |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, by_tree in result["local"].items():
        before, now = by_tree["before"], by_tree["now"]
        assert {t["edges"] for t in before} == {t["edges"] for t in now}, "not the same graph"
        n = result["runs"][name]["now"][0]["updates"]
        b, a = _median(before, "cpu_seconds"), _median(now, "cpu_seconds")
        lines.append(f"| {name} | {b:.1f} | {a:.1f} | {n / b:,.0f} | {n / a:,.0f} | {b / a:.1f}x |")
    lines += ["", "Profile of the columns path (CollegeMsg, cProfile, top by own time):", "```"]
    lines += result["profile"] + ["```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
