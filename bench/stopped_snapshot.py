"""Snapshot of a stopped graph through the CLI: ``chronoray snapshot --at T --log-dir``
on a graph that is not running, this checkout (reads the shard logs in the command's own
process) against the tree before it (opens the graph on a local Ray: shard actors recover
the whole graph, then rebuild the cut), and against a plain Python scan of the stream
file computing the same edges at ``T`` (pair counts) -- each a whole command in a fresh
process, as a user runs it, trials alternating.

The graph: the skewed 600 k-event stream (:func:`bench.workloads.skewed_stream`, hubs of
>= 10 k edges) ingested into 2 shards, cut at the middle of its time span. Writes
``stopped_snapshot.json`` and ``stopped_snapshot.md``::

    python -m bench.stopped_snapshot --before 0bae376
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from bench.baseline import tree
from bench.report import machine, write_results
from bench.workloads import skewed_stream, write_snap

RESULTS = Path(__file__).parent / "results"

_SCAN = """
import sys
at = float(sys.argv[2])
counts = {}
with open(sys.argv[1], "rb") as f:
    for line in f:
        src, dst, ts = line.split()
        if int(ts) <= at:
            key = (int(src), int(dst))
            counts[key] = counts.get(key, 0) + 1
print(len(counts))
"""


def _timed(argv: list[str], root: Path | None) -> tuple[float, str]:
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root)
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"{argv} failed:\n{out.stderr[-3000:]}")
    return seconds, out.stdout


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="0bae376", help="Commit before the direct read.")
    parser.add_argument("--events", type=int, default=600_000, help="Stream length.")
    parser.add_argument("--trials", type=int, default=3, help="Trials per command.")
    args = parser.parse_args(argv)
    import chronoray as cr

    workdir = Path(tempfile.mkdtemp(prefix="chronoray-stopped-"))
    trees = {"now": tree(None), "before": tree(args.before)}
    try:
        stream = skewed_stream(args.events, edges=max(args.events * 58 // 600, 100))
        path = workdir / "skewed.txt"
        write_snap(path, stream)
        at = float((stream[0][2] + stream[-1][2]) // 2)
        log_dir = workdir / "graph"
        started = time.perf_counter()
        with cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(log_dir)) as graph:
            graph.ingest(cr.SnapEdgeSource(path))
        ingest_seconds = time.perf_counter() - started
        times: dict[str, list[float]] = {"now": [], "before": [], "scan": []}
        edges: dict[str, int] = {}
        for trial in range(args.trials):
            for label, root in trees.items():
                out = workdir / f"snap-{label}-{trial}"
                cli = [sys.executable, "-m", "chronoray.cli", "snapshot", "--at", str(at)]
                seconds, _ = _timed([*cli, "--out", str(out), "--log-dir", str(log_dir)], root)
                times[label].append(seconds)
                edges[label] = len(pd.read_parquet(out / "edges.parquet"))
            seconds, printed = _timed([sys.executable, "-c", _SCAN, str(path), str(at)], None)
            times["scan"].append(seconds)
            edges["scan"] = int(printed)
        assert len(set(edges.values())) == 1, f"the three disagree: {edges}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "machine": machine(),
        "before": args.before,
        "events": args.events,
        "at": at,
        "edges_at": edges["now"],
        "ingest_seconds": ingest_seconds,
        "seconds": times,
    }
    write_results(RESULTS, "stopped_snapshot", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    med = {k: statistics.median(v) for k, v in result["seconds"].items()}
    lines = [
        "# Snapshot of a stopped graph through the CLI",
        "",
        f"{result['machine']}. Skewed stream of {result['events']:,} events in 2 shards, "
        f"`chronoray snapshot --at {result['at']:.0f}` (the middle of its time span: "
        f"{result['edges_at']:,} edges), each a whole command in a fresh process; medians of "
        f"{len(result['seconds']['now'])} trials. before = {result['before']} (opens the graph "
        "on Ray), now = reads the logs in the command's process.",
        "",
        "| command | seconds |",
        "|---|---:|",
        f"| chronoray snapshot, before | {med['before']:.2f} |",
        f"| chronoray snapshot, now | {med['now']:.2f} |",
        f"| plain Python scan of the file (pair counts at T) | {med['scan']:.2f} |",
        "",
        "| ratio | value |",
        "|---|---:|",
        f"| before / now | {med['before'] / med['now']:.1f}x |",
        f"| now / plain scan | {med['now'] / med['scan']:.2f}x |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
