"""Reconstruction benchmark: replay rate, time-cut latency and recovery, before and after.

Builds 1-shard logs (a real RocksDB log in a temporary directory) from SNAP CollegeMsg --
about 120k log entries -- repeated ``--repeat`` times with times shifted by
``k * (span + 1)``, so the history is ``repeat`` times longer over the same 1,899
vertices (4 copies: 478,680 entries). Two logs per tree: with the runtime's **default**
shard checkpoints, and with **none** (no checkpoint is ever written). Then, reading the
closed log through a read-only handle, each median of ``--trials``:

1. **Full replay**: ``rebuild_part`` at the end of the log without checkpoints: entries/s.
2. **Snapshot latency**: ``rebuild_part(at=T)`` (open the store + rebuild) for ``T`` at
   25/50/75/100 % of the time span, on the default log (and on the one without).
3. **Recovery**: a ``ShardCore`` reopened over the default log (replay with incoming edges
   and outboxes), entries/s.

Both trees -- this checkout (``now``) and the commit before log format 2 (``before``, see
:mod:`bench.baseline`) -- run the same probe in fresh processes. Writes
``reconstruct.json`` and ``reconstruct.md`` under ``--out`` (default ``bench/results``).

    python -m bench.reconstruct --repeat 4
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from itertools import islice
from pathlib import Path
from typing import Any

from bench.baseline import BEFORE, measure, tree
from bench.report import machine, write_results
from chronoray.datasets import collegemsg_path

RESULTS = Path(__file__).parent / "results"
NO_CHECKPOINTS = 10**12  # a shard checkpoint interval no run reaches
FRACTIONS = [0.25, 0.5, 0.75, 1.0]
ISSUE = {"full_replay_rate": 184_000, "latency_25": 1.9, "latency_100": 0.5}
REFERENCE = {
    "system": "Java chronograph (thesis prototype)",
    "replay_rate": 455_000,
    "latency_seconds": 0.1,
    "note": "replayed ~455k entries/s; answered in ~0.1 s with a checkpoint every 100k entries",
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=4, help="Time-shifted copies of the edges (history length)."
    )
    parser.add_argument(
        "--limit-lines", type=int, default=None, help="Use only the first N lines of the file."
    )
    parser.add_argument(
        "--interval",
        type=int,
        default=None,
        help="Shard checkpoint interval of the 'default' log (default: the runtime's).",
    )
    parser.add_argument("--trials", type=int, default=3, help="Rebuilds per measurement.")
    parser.add_argument(
        "--before", default=BEFORE, help="Git revision measured as 'before' ('none': skip)."
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.trials < 1:
        parser.error("--repeat and --trials must be >= 1")
    trees = {"now": tree(None), "before": tree(args.before)}
    trees = {name: root for name, root in trees.items() if root is not None}
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-reconstruct-"))
    runs: dict[str, dict[str, Any]] = {}
    try:
        source = workdir / "edges.txt"
        with collegemsg_path().open() as f, source.open("w") as out:
            out.writelines(islice(f, args.limit_lines))
        for name, root in trees.items():
            for log, interval in (("default", args.interval), ("none", NO_CHECKPOINTS)):
                path = str(workdir / f"{name}-{log}")
                built = measure(
                    root,
                    "build_log",
                    file=str(source),
                    repeat=args.repeat,
                    interval=interval,
                    path=path,
                )
                read = measure(
                    root,
                    "read_log",
                    path=path,
                    fractions=FRACTIONS,
                    t_min=built["t_min"],
                    t_max=built["t_max"],
                    trials=args.trials,
                )
                runs[f"{name}, {log}"] = {"build": built, **read}
                shutil.rmtree(path, ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "benchmark": "reconstruct",
        "dataset": "collegemsg",
        "limit_lines": args.limit_lines,
        "repeat": args.repeat,
        "trials": args.trials,
        "before": args.before if "before" in trees else None,
        "entries": runs["now, none"]["entries"],
        "machine": machine(),
        "runs": runs,
        "summary": _summary(runs),
        "issue": ISSUE,
        "reference": REFERENCE,
    }
    write_results(args.out, "reconstruct", result, _table(result))
    return result


def _rate(cut: dict[str, Any]) -> float:
    return cut["replayed"] / cut["replay_seconds"] if cut["replay_seconds"] else 0.0


def _summary(runs: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for name in ("now", "before"):
        if f"{name}, none" not in runs:
            continue
        plain, default = runs[f"{name}, none"], runs[f"{name}, default"]
        summary[f"full replay entries/s ({name})"] = _rate(plain["end"])
        summary[f"full replay entries per cpu second ({name})"] = (
            plain["end"]["replayed"] / plain["end"]["latency_cpu"]
        )
        summary[f"recovery entries per cpu second ({name})"] = (
            plain["entries"] / plain["recovery_cpu_seconds"]
        )
        for cut in default["cuts"]:
            key = f"latency at {cut['fraction']:.0%}, default checkpoints"
            summary[f"{key} ({name})"] = cut["latency"]
            summary[f"{key}, cpu ({name})"] = cut["latency_cpu"]
    if "before, none" in runs:
        summary["full replay: now / before"] = (
            summary["full replay entries/s (now)"] / summary["full replay entries/s (before)"]
        )
    return summary


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def _table(result: dict[str, Any]) -> str:
    ref = result["reference"]
    before = result["before"]
    lines = [
        f"# Reconstruction benchmark: CollegeMsg x {result['repeat']}, "
        f"{result['entries']:,} log entries, 1 shard",
        "",
        f"RocksDB log, rebuilt through a read-only handle after the writer closed; median of "
        f"{result['trials']} trials; {result['machine']['cpus']} CPUs, Python "
        f"{result['machine']['python']}. Logs: 'default' = the runtime's default shard "
        "checkpoints, 'none' = no checkpoint. "
        + (f"'before' = commit {before} (log format 1), same run. " if before else "")
        + f"Reference: {ref['system']}, ~{ref['replay_rate']:,} entries/s, "
        f"~{_ms(ref['latency_seconds'])} ms with a checkpoint every 100k entries.",
        "",
        "## Build, full replay and recovery",
        "",
        "replay entries/s = entries replayed / replay time at the end of the log (from the "
        "newest checkpoint); latency = open the store + rebuild (wall, and CPU time of the "
        "process: steadier on a shared machine); recovery = a shard core reopened over the "
        "log (CPU time).",
        "",
        "| tree, log | entries | checkpoints | build s | started from | replayed | replay s "
        "| entries/s | latency ms | latency cpu ms | recovery cpu s | recovery entries/cpu s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, run in result["runs"].items():
        end, build = run["end"], run["build"]
        lines.append(
            f"| {name} | {run['entries']:,} | {len(build['checkpoints'])} | "
            f"{build['seconds']:.2f} | {end['checkpoint']:,} | {end['replayed']:,} | "
            f"{end['replay_seconds']:.3f} | {_rate(end):,.0f} | {_ms(end['latency'])} | "
            f"{_ms(end['latency_cpu'])} | {run['recovery_cpu_seconds']:.3f} | "
            f"{run['entries'] / run['recovery_cpu_seconds']:,.0f} |"
        )
    lines += [
        "",
        "## Snapshot latency at a time T (`at=T`)",
        "",
        "T at a fraction of the time span; in cut = entries with time <= T after the start "
        "checkpoint; decoded = entries decoded to answer (format 2 reads block headers and "
        "decodes only blocks holding an entry <= T; format 1 decoded to the end of the log).",
        "",
        "| tree, log | T at | started from | in cut | decoded | replay s | latency ms "
        "| latency cpu ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, run in result["runs"].items():
        for cut in run["cuts"]:
            decoded = "" if cut["decoded"] is None else f"{cut['decoded']:,}"
            lines.append(
                f"| {name} | {cut['fraction']:.0%} | {cut['checkpoint']:,} | {cut['replayed']:,} "
                f"| {decoded} | {cut['replay_seconds']:.3f} | {_ms(cut['latency'])} "
                f"| {_ms(cut['latency_cpu'])} |"
            )
    lines += ["", "## Summary", "", "| measure | value |", "|---|---:|"]
    for key, value in result["summary"].items():
        shown = _ms(value) + " ms" if key.startswith("latency") else f"{value:,.2f}"
        lines.append(f"| {key} | {shown} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
