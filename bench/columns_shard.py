"""Column batches in the shard (issue 21, items 1-3): in-process ingest (``GraphCluster
(runtime="local")``, 2 shards, RocksDB logs) of CollegeMsg x10 and of the skewed stream,
before and after in one run.

Each stream is written as a SNAP file (:func:`bench.ingest._streams`) and ingested by both
trees -- this checkout (``now``: stream edge batches travel, run and are logged as columns)
and ``--before`` (default: the lead's main it branched from) -- in fresh processes, in turn
(A B A B ...), ``--trials`` times; the fastest trial counts (the machine is shared:
other work only ever adds time), every trial is listed. Reported: µs per log entry (wall
seconds of the ingest / executions logged), log bytes per event once the graph is closed,
and ``uptime``'s load before each trial. Then the cProfile top 20 (own time) of ``now`` on
CollegeMsg x10. Writes ``columns_shard.json`` and ``columns_shard.md``::

    python -m bench.columns_shard --before 4562625
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import measure, tree
from bench.ingest import _streams
from bench.report import machine, write_results

RESULTS = Path(__file__).parent / "results"
BEFORE = "4562625"  # main when issue 21's column batches branched off


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} {five:.1f} {fifteen:.1f}"


def _trial(root: Path, path: Path, shards: int, workdir: Path) -> dict[str, Any]:
    load = _load()
    out = measure(
        root, "shard_ingest", timeout=3600, file=str(path), shards=shards, workdir=str(workdir)
    )
    out["load"] = load
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10, help="CollegeMsg copies.")
    parser.add_argument("--skewed-events", type=int, default=600_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--before", default=BEFORE, help="Git revision measured as 'before'.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    trees = {"now": tree(None), "before": tree(args.before)}
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-columns-"))
    runs: dict[str, dict[str, Any]] = {}
    profile = ""
    try:
        streams = _streams(workdir, args.copies, args.skewed_events)
        for stream, (path, _mid) in streams.items():
            events = sum(1 for line in path.open() if line.strip())
            trials: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
            for _ in range(args.trials):
                for name, root in trees.items():
                    assert root is not None
                    trials[name].append(_trial(root, path, args.shards, workdir / name))
            for name, done in trials.items():
                seconds = min(t["seconds"] for t in done)  # the least disturbed trial
                cpu = min(t["cpu_seconds"] for t in done)
                entries, log_bytes = done[0]["entries"], done[0]["log_bytes"]
                runs[f"{stream} ({name})"] = {
                    "events": events,
                    "entries": entries,
                    "seconds": seconds,
                    "us_per_entry": seconds / entries * 1e6,
                    "cpu_seconds": cpu,
                    "cpu_us_per_entry": cpu / entries * 1e6,
                    "log_bytes": log_bytes,
                    "log_bytes_per_event": log_bytes / events,
                    "edges": done[0]["edges"],
                    "loads": [t["load"] for t in done],
                    "trials": [t["seconds"] for t in done],
                    "cpu_trials": [t["cpu_seconds"] for t in done],
                }
        college = next(iter(streams.values()))[0]
        profile = measure(
            trees["now"],
            "shard_ingest",
            timeout=3600,
            file=str(college),  # type: ignore[arg-type]
            shards=args.shards,
            workdir=str(workdir / "profile"),
            profile=20,
        )["profile"]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "benchmark": "columns_shard",
        "shards": args.shards,
        "before": args.before,
        "machine": machine(),
        "runs": runs,
        "profile_now_collegemsg": profile,
    }
    write_results(args.out, "columns_shard", result, _markdown(result))
    return result


def _markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Column batches in the shard: in-process ingest, 2 shards, RocksDB logs",
        "",
        f"{result['machine']['cpus']} CPUs, Python {result['machine']['python']}. "
        f"'before' = commit {result['before']}, same run, trees in turn. "
        'µs per entry = wall seconds of `GraphCluster(runtime="local").ingest` / log entries '
        "(executions: two per stream edge update, one per half); cpu = CPU seconds of the "
        "process over the ingest (steadier than wall on a shared machine; the driver's "
        "parsing and routing included, in process); log bytes = all files of the log "
        "directory after close; load = `uptime` before each trial.",
        "",
        "| stream (tree) | events | log entries | best s | µs/entry | best cpu s "
        "| cpu µs/entry | log B/event | trials s | trials cpu s | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for name, run in result["runs"].items():
        lines.append(
            f"| {name} | {run['events']:,} | {run['entries']:,} | {run['seconds']:.1f} | "
            f"{run['us_per_entry']:.2f} | {run.get('cpu_seconds', float('nan')):.1f} | "
            f"{run.get('cpu_us_per_entry', float('nan')):.2f} | "
            f"{run['log_bytes_per_event']:.0f} | "
            f"{', '.join(f'{t:.1f}' for t in run['trials'])} | "
            f"{', '.join(f'{t:.1f}' for t in run.get('cpu_trials', []))} | "
            f"{'; '.join(run['loads'])} |"
        )
    lines += ["", "## cProfile of 'now', CollegeMsg x10 (top 20, own time)", "", "```"]
    lines += [result["profile_now_collegemsg"], "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
