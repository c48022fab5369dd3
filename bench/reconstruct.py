"""Reconstruction benchmark: log replay rate and snapshot latency, in one run, with real logs.

Builds 1-shard graphs in this process (``LocalRuntime``, a real RocksDB log per graph in a
temporary directory) from SNAP CollegeMsg -- about 120k log entries -- repeated
``--repeat`` times with times shifted by ``k * (span + 1)`` (source ``rep{k}``), so the
history is ``repeat`` times longer over the same 1,899 vertices. One graph per shard
checkpoint interval: ``none`` (a huge interval, no checkpoint is ever written) and each
of ``--intervals`` (default 100,000 and 25,000 entries). Ingest time is reported but is
not part of the measurements, which read the closed log through a read-only handle:

1. **Reconstruction rate**: ``rebuild_part`` at the end of the log, per interval:
   entries replayed, replay seconds, entries/s and snapshot latency (open the read-only
   store + rebuild). The full replay rate is the ``none`` case.
2. **Latency versus history length**: with ``none`` and with the first of
   ``--intervals``, ``rebuild_part(at=T)`` for ``T`` at 25/50/75/100 % of the time span.

Every measurement is taken ``--trials`` times; the median is reported. Writes
``reconstruct.json`` and ``reconstruct.md`` under ``--out`` (default ``bench/results``).

    python -m bench.reconstruct --repeat 4
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from itertools import takewhile
from pathlib import Path
from typing import Any

from bench.report import machine, write_results
from chronoray.datasets import collegemsg_path
from chronoray.sources import SnapEdgeSource
from shards.core import load_shard_checkpoint
from shards.local import LocalRuntime
from shards.logstore import LogName, RocksLogStore
from snapshot.reconstruct import ShardPart, rebuild_part
from vertex.records import Update

RESULTS = Path(__file__).parent / "results"
NO_CHECKPOINTS = 10**12  # a shard checkpoint interval no run reaches
FRACTIONS = (0.25, 0.5, 0.75, 1.0)
VERTEX_CHECKPOINT_INTERVAL = 64  # LocalRuntime's default per-vertex checkpoint interval
REFERENCE = {
    "system": "Java chronograph (thesis prototype)",
    "replay_rate": 455_000,
    "latency_seconds": 0.1,
    "shard_checkpoint_interval": 100_000,
    "note": "replayed ~455k entries/s; answered in ~0.1 s with a checkpoint every 100k entries",
}


def _base_edges(limit_lines: int | None) -> list[tuple[int, int, float]]:
    """``(src, dst, ts)`` of CollegeMsg's lines (only the first ``limit_lines``, if given)."""
    updates = SnapEdgeSource(collegemsg_path()).read()
    if limit_lines is not None:
        updates = takewhile(lambda u: u.offset <= limit_lines, updates)
    return [(u.vertex, u.dst, u.ts) for u in updates]


def _build(
    edges: list[tuple[int, int, float]], repeat: int, interval: int, path: Path
) -> dict[str, Any]:
    """Ingest ``repeat`` time-shifted copies of ``edges`` into a fresh 1-shard graph whose
    log lives at ``path``; close it. Returns ingest figures and the log's extent."""
    t_min = min(ts for _, _, ts in edges)
    span = max(ts for _, _, ts in edges) - t_min
    rt = LocalRuntime(
        1,
        store_factory=lambda k: RocksLogStore(path),
        checkpoint_interval=VERTEX_CHECKPOINT_INTERVAL,
        shard_checkpoint_interval=interval,
    )
    seconds = 0.0
    try:
        for k in range(repeat):
            shift = k * (span + 1)
            updates = [Update.add_edge(src, dst, ts + shift) for src, dst, ts in edges]
            started = time.perf_counter()
            rt.ingest(updates, source=f"rep{k}")
            seconds += time.perf_counter() - started
        core = rt.cores[0]
        entries = core.worker_clock
        checkpoints = [wc for wc, _ in core.checkpoints]
    finally:
        rt.close()
    return {
        "updates": len(edges) * repeat,
        "entries": entries,
        "checkpoints": checkpoints,
        "seconds": seconds,
        "rate": entries / seconds if seconds else 0.0,
        "t_min": t_min,
        "t_max": t_min + (repeat - 1) * (span + 1) + span,
    }


def _rebuild(path: Path, trials: int, at: float | None = None) -> tuple[ShardPart, dict[str, Any]]:
    """Rebuild shard 0 from a read-only handle on ``path``, ``trials`` times."""
    latencies: list[float] = []
    replays: list[float] = []
    loads: list[float] = []
    part: ShardPart | None = None
    last = 0
    for _ in range(trials):
        started = time.perf_counter()
        store = RocksLogStore(path, read_only=True)
        try:
            part = rebuild_part(store, 0, at=at)
            latencies.append(time.perf_counter() - started)
            last = store.last_seq(LogName.EVENTS)
            if part.checkpoint:  # the load alone, again (warm): part of part.seconds
                loaded = time.perf_counter()
                load_shard_checkpoint(store, part.checkpoint)
                loads.append(time.perf_counter() - loaded)
        finally:
            store.close()
        replays.append(part.seconds)
    assert part is not None
    seconds = statistics.median(replays)
    return part, {
        "history": part.bound,
        "replayed": part.replayed,
        "checkpoint": part.checkpoint,
        "cut": part.checkpoint + part.replayed,
        "scanned": last - part.checkpoint,
        "seconds": seconds,
        "rate": part.replayed / seconds if seconds else 0.0,
        "checkpoint_load_seconds": statistics.median(loads) if loads else 0.0,
        "latency": statistics.median(latencies),
        "latency_all": latencies,
        "vertices": len(part.vertices),
        "edges": sum(len(r.out_edges) for r in part.vertices.values()),
    }


def _label(interval: int) -> str:
    return "none" if interval >= NO_CHECKPOINTS else str(interval)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=4, help="Time-shifted copies of the edges (history length)."
    )
    parser.add_argument(
        "--limit-lines", type=int, default=None, help="Ingest only the first N lines of the file."
    )
    parser.add_argument(
        "--intervals",
        default="100000,25000",
        help="Shard checkpoint intervals besides 'none', comma-separated; the first is also "
        "used for latency versus history length.",
    )
    parser.add_argument("--trials", type=int, default=3, help="Rebuilds per measurement.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.trials < 1:
        parser.error("--repeat and --trials must be >= 1")
    intervals = [NO_CHECKPOINTS] + [int(x) for x in args.intervals.split(",") if x.strip()]
    edges = _base_edges(args.limit_lines)
    if not edges:
        parser.error("no edges to ingest")
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-reconstruct-"))
    try:
        ingest: dict[str, dict[str, Any]] = {}
        paths: dict[str, Path] = {}
        for interval in intervals:
            name = _label(interval)
            paths[name] = workdir / f"shard-{name}"
            ingest[name] = _build(edges, args.repeat, interval, paths[name])
            ingest[name]["interval"] = None if name == "none" else interval
        names = list(paths)
        entries = ingest["none"]["entries"]
        t_min, t_max = ingest["none"]["t_min"], ingest["none"]["t_max"]

        rate: dict[str, dict[str, Any]] = {}
        full: ShardPart | None = None
        for name in names:
            part, row = _rebuild(paths[name], args.trials)
            if full is None:
                full = part
            else:  # every interval must rebuild the same graph
                assert part.vertices == full.vertices, f"interval {name}: graph differs"
            rate[name] = row

        latency: dict[str, list[dict[str, Any]]] = {}
        for name in dict.fromkeys(names[:2]):
            rows = []
            for fraction in FRACTIONS:
                at = t_min + fraction * (t_max - t_min)
                _, row = _rebuild(paths[name], args.trials, at=at)
                rows.append({"fraction": fraction, "at": at, **row})
            latency[name] = rows
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    summary: dict[str, Any] = {
        "full_replay_rate": rate["none"]["rate"],
        "full_replay_latency": rate["none"]["latency"],
        "full_replay_rate / reference": rate["none"]["rate"] / REFERENCE["replay_rate"],
    }
    for name in names[1:]:
        summary[f"latency at end, interval {name}"] = rate[name]["latency"]
    result = {
        "benchmark": "reconstruct",
        "dataset": "collegemsg",
        "base_edges": len(edges),
        "limit_lines": args.limit_lines,
        "repeat": args.repeat,
        "trials": args.trials,
        "entries": entries,
        "timeline": {"t_min": t_min, "t_max": t_max},
        "vertex_checkpoint_interval": VERTEX_CHECKPOINT_INTERVAL,
        "machine": machine(),
        "ingest": ingest,
        "rate": rate,
        "latency_vs_history": latency,
        "summary": summary,
        "reference": REFERENCE,
    }
    write_results(args.out, "reconstruct", result, _table(result))
    return result


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def _table(result: dict[str, Any]) -> str:
    ref = result["reference"]
    lines = [
        f"# Reconstruction benchmark: CollegeMsg x {result['repeat']}, "
        f"{result['entries']:,} log entries, 1 shard",
        "",
        f"{result['base_edges']:,} edges per copy, {result['repeat']} time-shifted copies; "
        f"RocksDB log, rebuilt from a read-only handle after the writer closed; "
        f"median of {result['trials']} trials; {result['machine']['cpus']} CPUs, "
        f"Python {result['machine']['python']}. Per-vertex checkpoint every "
        f"{result['vertex_checkpoint_interval']} executions.",
        "",
        "## Ingest (not part of the measurements)",
        "",
        "| shard checkpoint interval | updates | log entries | shard checkpoints | seconds "
        "| entries/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, run in result["ingest"].items():
        lines.append(
            f"| {name} | {run['updates']:,} | {run['entries']:,} | {len(run['checkpoints'])} "
            f"| {run['seconds']:.2f} | {run['rate']:,.0f} |"
        )
    lines += [
        "",
        "## Reconstruction at the end of the log",
        "",
        "replay s = `rebuild_part` time (checkpoint load + replay; the load alone is measured "
        "again after it); entries/s = replayed / replay s; latency = open the read-only "
        "store + rebuild.",
        "",
        "| shard checkpoint interval | started from | replayed | checkpoint load ms | replay s "
        "| entries/s | latency ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, run in result["rate"].items():
        lines.append(
            f"| {name} | {run['checkpoint']:,} | {run['replayed']:,} "
            f"| {_ms(run['checkpoint_load_seconds'])} | {run['seconds']:.3f} "
            f"| {run['rate']:,.0f} | {_ms(run['latency'])} |"
        )
    lines.append(
        f"| *reference: {ref['system']}* | | | | | *~{ref['replay_rate']:,}* "
        f"| *~{_ms(ref['latency_seconds'])} (checkpoint every "
        f"{ref['shard_checkpoint_interval']:,})* |"
    )
    lines += [
        "",
        "Full replay rate (interval none): "
        f"{result['summary']['full_replay_rate']:,.0f} entries/s = "
        f"{result['summary']['full_replay_rate / reference']:.2f} x the reference.",
        "",
        "## Snapshot latency versus history length (`at=T`)",
        "",
        "T at a fraction of the time span; history = entries up to the part's bound (the "
        "worker clock of the last entry with time <= T); in cut = entries with time <= T "
        "(start checkpoint + replayed); scanned = entries read after the start checkpoint "
        "(a time cut reads to the end of the log and skips later entries).",
        "",
        "| interval | T at | history | in cut | started from | replayed | scanned | replay s "
        "| latency ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rows in result["latency_vs_history"].items():
        for row in rows:
            lines.append(
                f"| {name} | {row['fraction']:.0%} | {row['history']:,} | {row['cut']:,} "
                f"| {row['checkpoint']:,} "
                f"| {row['replayed']:,} | {row['scanned']:,} | {row['seconds']:.3f} "
                f"| {_ms(row['latency'])} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
