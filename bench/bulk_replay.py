"""Replay of the built-in temporal class's entries logged as columns (log format 5), this
checkout against ``--before`` (aaacfe1: every entry rebuilt as a row and applied one by
one) -- CPU seconds, since the machine is shared.

The graph: the skewed 600 k-event stream ingested into 2 in-process shards with RocksDB
logs (:func:`bench.workloads.skewed_graph`, as :mod:`bench.stopped_snapshot` has it; the
runtime's shard checkpoints). Both trees read the same logs, in fresh processes,
trials alternating (:func:`bench.baseline.measure`, task ``replay_log`` of
:mod:`bench.probe`): the whole log with incoming edges from no checkpoint (``full``),
the cut at the middle of the stream's time span a snapshot rebuilds (``cut``) and a
shard's recovery (``recovery``), then this checkout's ``full`` under cProfile. Writes
``bulk_replay.json`` and ``bulk_replay.md``::

    python -m bench.bulk_replay --before aaacfe1
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import measure, tree
from bench.report import machine, write_results
from bench.workloads import skewed_graph

RESULTS = Path(__file__).parent / "results"
KINDS = {
    "full": "whole log, incoming edges, no checkpoint",
    "cut": "snapshot cut at mid T (newest usable checkpoint, no incoming edges)",
    "recovery": "recovery (ShardCore reopened over the log: the entries after its newest "
    "checkpoint, blocks applied one at a time)",
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="aaacfe1", help="Commit to compare with.")
    parser.add_argument("--events", type=int, default=600_000, help="Stream length.")
    parser.add_argument("--trials", type=int, default=3, help="Probe processes per tree.")
    parser.add_argument("--repeat", type=int, default=2, help="Runs per kind per process.")
    args = parser.parse_args(argv)
    from shards.codec import ColumnsBlock
    from shards.logstore import RocksLogStore
    from shards.replay import LogReplay

    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bulk-replay-"))
    trees = {"before": tree(args.before), "now": tree(None)}
    try:
        _, at, log_dir, ingest_seconds = skewed_graph(workdir, args.events)
        entries = as_columns = 0
        for k in range(2):
            store = RocksLogStore(log_dir / f"shard-{k}", read_only=True)
            for block in LogReplay(store, checkpoint=False).blocks():
                entries += len(block.vertex)
                if isinstance(block, ColumnsBlock):
                    as_columns += len(block.logged_entries)
            store.close()
        params = {"log_dir": str(log_dir), "shards": 2, "at": at, "repeat": args.repeat}
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "now": []}
        for _ in range(args.trials):
            for label, root in trees.items():
                assert root is not None
                runs[label].append(measure(root, "replay_log", **params))
        now = trees["now"]
        assert now is not None
        profile = measure(now, "replay_log", **{**params, "repeat": 1, "profile": 10})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    cpu = {
        label: {kind: sorted(s for run in found for s in run[kind]["runs"]) for kind in KINDS}
        for label, found in runs.items()
    }
    replayed = {kind: runs["now"][0][kind]["entries"] for kind in KINDS}
    same = {kind: runs["before"][0][kind]["entries"] == replayed[kind] for kind in KINDS}
    result = {
        "machine": machine(),
        "before": args.before,
        "events": args.events,
        "at": at,
        "log_entries": entries,
        "as_columns": as_columns,
        "ingest_seconds": ingest_seconds,
        "entries": replayed,
        "same_entries": same,
        "cpu_seconds": cpu,
        "profile": profile["profile"],
    }
    write_results(RESULTS, "bulk_replay", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    cpu = result["cpu_seconds"]
    lines = [
        "# Replay of entries logged as columns, applied from their columns",
        "",
        f"{result['machine']['cpus']} CPUs (shared), Python {result['machine']['python']}. "
        f"Skewed stream of {result['events']:,} events in 2 in-process "
        f"shards with RocksDB logs: {result['log_entries']:,} log entries, "
        f"{result['as_columns']:,} of them logged as columns (format 5). before = "
        f"{result['before']} (each such entry rebuilt as a row and applied one by one), now "
        "= this checkout (runs of them applied at once from their columns, up to 65,536 "
        "entries of consecutive blocks). CPU seconds (user + "
        "system) of the replay in the probe process, both shards; median of every run "
        f"({len(cpu['now']['full'])} per tree: processes alternating between the trees).",
        "",
        "| replay | entries | before CPU s | now CPU s | before / now |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, what in KINDS.items():
        b, n = statistics.median(cpu["before"][kind]), statistics.median(cpu["now"][kind])
        lines.append(f"| {what} | {result['entries'][kind]:,} | {b:.2f} | {n:.2f} | {b / n:.2f}x |")
    lines += [
        "",
        "Every run, CPU seconds: "
        + "; ".join(
            f"{label} {kind} {', '.join(f'{s:.2f}' for s in runs)}"
            for label, kinds in cpu.items()
            for kind, runs in kinds.items()
        )
        + ".",
        "",
        "## Profile, now: the whole log (cProfile, top 10 by own time)",
        "",
        "```",
        result["profile"].strip(),
        "```",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
