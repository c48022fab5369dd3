"""Snapshot of a stopped graph through the CLI: ``chronoray snapshot --at T --log-dir``
on a graph that is not running, this checkout (reads the shard logs in the command's own
process) against the tree of ``--before`` (0bae376: opens the graph on a local Ray, shard
actors recover the whole graph, then rebuild the cut; fcdd218: reads the logs, importing
Ray and pandas, typing the tables row by row), and against a plain Python scan of the
stream file computing the same edges at ``T`` (pair counts) -- each a whole command in a
fresh process, as a user runs it, trials alternating. Each command runs once untimed
first (its modules' bytecode cached, as an installed package has it; the files in the
page cache for all three), and once more under cProfile for the profile's top lines.

The graph: the skewed 600 k-event stream (:func:`bench.workloads.skewed_stream`, hubs of
>= 10 k edges) ingested into 2 shards, cut at the middle of its time span. Writes
``stopped_snapshot.json`` and ``stopped_snapshot.md``::

    python -m bench.stopped_snapshot --before fcdd218
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import resource
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
from bench.workloads import skewed_graph

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


def _env(root: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # run from cached bytecode, as installed
    if root is not None:
        env["PYTHONPATH"] = str(root)
    return env


def _timed(argv: list[str], root: Path | None) -> tuple[float, str]:
    seconds, _, printed = _run(argv, root)
    return seconds, printed


def _run(argv: list[str], root: Path | None) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system, of the command and its children) and
    what ``argv`` printed."""
    env = _env(root)
    cpu = _children_cpu()
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root)
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"{argv} failed:\n{out.stderr[-3000:]}")
    return seconds, _children_cpu() - cpu, out.stdout


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="fcdd218", help="Commit to compare with.")
    parser.add_argument("--events", type=int, default=600_000, help="Stream length.")
    parser.add_argument("--trials", type=int, default=3, help="Trials per command.")
    parser.add_argument("--profile-lines", type=int, default=30, help="Profile lines shown.")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="chronoray-stopped-"))
    trees = {"now": tree(None), "before": tree(args.before)}
    try:
        path, at, log_dir, ingest_seconds = skewed_graph(workdir, args.events)
        times: dict[str, list[float]] = {"now": [], "before": [], "scan": []}
        cpu: dict[str, list[float]] = {"now": [], "before": [], "scan": []}
        built: dict[str, list[float]] = {"now": [], "before": []}
        edges: dict[str, int] = {}
        scan = [sys.executable, "-c", _SCAN, str(path), str(at)]

        def cli(label: str, trial: str) -> list[str]:
            out = workdir / f"snap-{label}-{trial}"
            return [
                *("-m", "chronoray.cli", "snapshot", "--at", str(at)),
                *("--out", str(out), "--log-dir", str(log_dir)),
            ]

        for label, root in trees.items():
            _timed([sys.executable, *cli(label, "warm")], root)
        _timed(scan, None)
        for trial in range(args.trials):
            for label, root in trees.items():
                seconds, used, printed = _run([sys.executable, *cli(label, str(trial))], root)
                times[label].append(seconds)
                cpu[label].append(used)
                built[label].append(_built_seconds(printed))
                edges[label] = len(pd.read_parquet(workdir / f"snap-{label}-{trial}/edges.parquet"))
            seconds, used, printed = _run(scan, None)
            times["scan"].append(seconds)
            cpu["scan"].append(used)
            edges["scan"] = int(printed)
        assert len(set(edges.values())) == 1, f"the three disagree: {edges}"
        profiles = {
            label: _profile(cli(label, "profile"), root, workdir / f"{label}.prof", args)
            for label, root in trees.items()
        }
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
        "cpu_seconds": cpu,
        "built_seconds": built,
        "profiles": profiles,
    }
    write_results(RESULTS, "stopped_snapshot", result, _table(result))
    return result


def _built_seconds(printed: str) -> float:
    """The build time the command prints ("... built in 0.58 s, ...")."""
    found = re.search(r"built in ([0-9.]+) s", " ".join(printed.split()))
    return float(found.group(1)) if found else float("nan")


def _profile(argv: list[str], root: Path | None, out: Path, args: argparse.Namespace) -> str:
    """The command's profile under cProfile: its top lines by cumulative time, without
    the import machinery's and click's frames (what they call is shown)."""
    _timed([sys.executable, "-m", "cProfile", "-o", str(out), *argv], root)
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda item: -item[1][3])
    shown = [
        f"{ct:8.3f} {tt:8.3f} {nc:9d}  {_where(key, root)}"
        for key, (_, nc, tt, ct, _) in rows
        if not key[0].startswith("<frozen") and "/click/" not in key[0] and key[0] != "~"
    ]
    header = "cumtime  tottime    ncalls  function"
    return "\n".join([header, *shown[: args.profile_lines]])


def _where(key: tuple[str, int, str], root: Path | None) -> str:
    path, line, name = key
    for prefix in (f"{root}/", "/site-packages/"):
        if prefix in path:
            path = path.split(prefix, 1)[1]
    return f"{path}:{line}({name})"


def _table(result: dict[str, Any]) -> str:
    med = {k: statistics.median(v) for k, v in result["seconds"].items()}
    cpu = {k: statistics.median(v) for k, v in result["cpu_seconds"].items()}
    built = {k: statistics.median(v) for k, v in result["built_seconds"].items()}
    lines = [
        "# Snapshot of a stopped graph through the CLI",
        "",
        f"{result['machine']}. Skewed stream of {result['events']:,} events in 2 shards, "
        f"`chronoray snapshot --at {result['at']:.0f}` (the middle of its time span: "
        f"{result['edges_at']:,} edges), each a whole command in a fresh process, each run "
        f"once untimed first; medians of {len(result['seconds']['now'])} trials. before = "
        f"{result['before']}, now = this checkout. CPU: user + system seconds of the "
        "command's process (the fairer figure when other work shares the machine).",
        "",
        "| command | wall seconds | CPU seconds | of which the build it prints |",
        "|---|---:|---:|---:|",
        f"| chronoray snapshot, before | {med['before']:.2f} | {cpu['before']:.2f} "
        f"| {built['before']:.2f} |",
        f"| chronoray snapshot, now | {med['now']:.2f} | {cpu['now']:.2f} | {built['now']:.2f} |",
        f"| plain Python scan of the file (pair counts at T) | {med['scan']:.2f} "
        f"| {cpu['scan']:.2f} | |",
        "",
        "| ratio | wall | CPU |",
        "|---|---:|---:|",
    ]
    for name, (a, b) in {
        "before / now": ("before", "now"),
        "now / plain scan": ("now", "scan"),
        "before / plain scan": ("before", "scan"),
    }.items():
        lines.append(f"| {name} | {med[a] / med[b]:.2f}x | {cpu[a] / cpu[b]:.2f}x |")
    lines += [
        "",
        "Every trial, wall seconds: "
        + "; ".join(f"{k} {', '.join(f'{s:.2f}' for s in v)}" for k, v in result["seconds"].items())
        + ".",
        "",
    ]
    for label in ("before", "now"):
        lines += [
            f"## Profile, {label} (cProfile of one run, top lines by cumulative time)",
            "",
            "```",
            result["profiles"][label],
            "```",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
