"""The evaluation runner: ``python -m bench WORKLOAD ...`` (and ``chronoray bench``).

For each size: the workload's GraphTides stream is generated (seeded), replayed into
chronoray ``--trials`` times (:func:`bench.replay.replay_once`; each metric reported as
the median with a 95 % distribution-free interval), and -- with ``--compare`` -- run side
by side with the other systems (:func:`bench.compare.compare`), whose environments are
made first (:mod:`bench.envs`). The results go to ``OUT/framework/<workload>.json``, and
the results page (``OUT/README.md``, :mod:`bench.page`) is made anew.

    python -m bench college --compare raphtory,networkx,spark
    python -m bench social --sizes 3000,30000,300000 --trials 6
    python -m bench ring --runtime local --rate 20000
    python -m bench page          # only the page, from the results there are
    python -m bench all           # every section of the page again, as recorded, then the page
    python -m bench curves        # the long scaling curves (minutes to hours)
    python -m bench list          # the workloads
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.compare import COMPARABLE, compare
from bench.envs import ensure
from bench.generators import WORKLOADS, describe, workload
from bench.replay import RUNTIMES, replay_once
from bench.report import machine, median_interval
from shards.progress import progress_reporter

__all__ = ["RESULTS", "context", "main", "run_workload"]

RESULTS = Path(__file__).resolve().parent / "results"
METRICS = (
    "seconds",
    "updates_per_second",
    "executions_per_second",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "rss_bytes_per_vertex",
    "rss_bytes_per_edge",
    "log_bytes_per_event",
    "snapshot_mid_cold_seconds",
    "snapshot_mid_seconds",
    "reopen_seconds",
)


def context(note: str = "") -> dict[str, Any]:
    """What every figure names: the date, the machine and its load, the versions."""
    root = Path(__file__).resolve().parent.parent
    revision = subprocess.run(
        ["git", "-C", str(root), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    versions = {"chronoray": revision or "unknown"}
    for package in ("ray", "rocksdict", "pyarrow", "networkx", "pyspark", "raydp"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            **machine(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
            "system": f"{platform.system()} {platform.release()}",
        },
        "load": list(os.getloadavg()),
        "versions": versions,
        "note": note,
    }


def _aggregate(trials: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in METRICS:
        values = [t[metric] for t in trials if t.get(metric) is not None]
        if values:
            out[metric] = median_interval(values)
    cpu = {k for t in trials for k in t["cpu_us_per_update"]}
    out["cpu_us_per_update"] = {
        k: median_interval([t["cpu_us_per_update"][k] for t in trials]) for k in sorted(cpu)
    }
    last = trials[-1]
    out["graph"] = {k: last[k] for k in ("updates", "executions", "vertices", "edges")}
    return out


def run_workload(
    name: str,
    sizes: list[int],
    *,
    systems: list[str],
    runtime: str = "ray",
    rate: float | None = None,
    shards: int = 2,
    trials: int = 5,
    at_fraction: float = 0.75,
    out: Path = RESULTS,
    workdir: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run ``name`` at each of ``sizes`` (see the module docstring); returns the result
    that was written to ``out/framework/<name>.json``."""
    spec = workload(name)
    if systems and spec.kind != "graph":
        raise ValueError(f"{name} is an actor workload (chronoray only): no --compare")
    own = workdir is None
    work = Path(tempfile.mkdtemp(prefix="chronoray-bench-")) if own else Path(workdir)
    steps = len(sizes) * (1 + trials + (1 if systems else 0)) + len(systems)
    done = 0
    result: dict[str, Any] = {
        "workload": name,
        "summary": spec.summary,
        "kind": spec.kind,
        "config": {
            "runtime": runtime,
            "rate": rate,
            "shards": shards,
            "trials": trials,
            "compare": systems,
            "at_fraction": at_fraction,
        },
        "context": context(),
        "sizes": [],
    }
    bar = progress_reporter(
        progress,
        f"bench {name}",
        steps,
        unit="steps",
        completed=lambda v: v[0],
        describe=lambda v: v[1],
    )
    try:
        with bar:
            for system in systems:
                bar((done, f"environment: {system}"))
                ensure(system)
                done += 1
            for size in sizes:
                bar((done, f"size {size:,}: generate"))
                stream = spec.write(work / f"{name}-{size}.tides", size)
                done += 1
                runs = []
                for trial in range(trials):
                    bar((done, f"size {size:,}: replay {trial + 1}/{trials} ({runtime})"))
                    runs.append(replay_once(stream, runtime, rate=rate, shards=shards))  # type: ignore[arg-type]
                    done += 1
                entry: dict[str, Any] = {
                    "stream": describe(stream),
                    "replay": _aggregate(runs),
                    "trials": runs,
                }
                if systems:

                    def step(label: str, size: int = size, at: int = done) -> None:
                        bar((at, f"size {size:,}: compare: {label}"))

                    entry["compare"] = compare(
                        stream,
                        systems,
                        work / f"compare-{size}",
                        at_fraction=at_fraction,
                        shards=shards,
                        progress=step,
                    )
                    done += 1
                result["sizes"].append(entry)
                stream.path.unlink()
            bar((done, "done"))
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    result["context"]["load_after"] = list(os.getloadavg())
    where = out / "framework"
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def _sizes(text: str | None, name: str) -> list[int]:
    if not text:
        return [workload(name).default_size]
    return [int(s.replace("_", "")) for s in text.split(",") if s.strip()]


def rerun_all(argv: list[str]) -> int:
    """``python -m bench all``: run every section of the results page again with the
    configuration its JSON recorded (workload, sizes, runtime, rate, shards, trials,
    systems compared, cut; the curves' sizes and parts), then make the page: one
    command reproduces every table and plot."""
    parser = argparse.ArgumentParser(prog="python -m bench all", description=rerun_all.__doc__)
    parser.add_argument("--out", type=Path, default=RESULTS, help="Results directory.")
    parser.add_argument("--no-curves", action="store_true", help="Skip the long curves.")
    args = parser.parse_args(argv)
    framework = args.out / "framework"
    for path in sorted(framework.glob("*.json")):
        if path.name == "curves.json":
            continue
        recorded = json.loads(path.read_text())
        config = recorded["config"]
        print(f"== {recorded['workload']}: {config}", flush=True)
        run_workload(
            recorded["workload"],
            [size["stream"]["size"] for size in recorded["sizes"]],
            systems=config["compare"],
            runtime=config["runtime"],
            rate=config["rate"],
            shards=config["shards"],
            trials=config["trials"],
            at_fraction=config["at_fraction"],
            out=args.out,
            progress=sys.stdout.isatty(),
        )
    curves = framework / "curves.json"
    if curves.exists() and not args.no_curves:
        from bench.curves import main as run_curves

        print("== curves", flush=True)
        run_curves(["--out", str(args.out), *_curve_args(json.loads(curves.read_text()))])
    from bench.page import write_page

    print(f"wrote {write_page(args.out)}")
    return 0


def _curve_args(recorded: dict[str, Any]) -> list[str]:
    """The ``bench curves`` arguments that make ``recorded`` (a ``curves.json``) again."""
    out = ["--parts", ",".join(p for p in ("stream", "shards", "spark") if p in recorded)]
    sizes = {
        "stream": "--sizes",
        "spark": "--graph-sizes",
    }
    for part, option in sizes.items():
        if part in recorded:
            out += [option, ",".join(str(p["events"]) for p in recorded[part]["points"])]
    if "shards" in recorded and recorded["shards"]["points"]:
        out += ["--shard-size", str(recorded["shards"]["points"][0]["events"])]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["page"]:
        from bench.page import main as page

        return page(argv[1:])
    if argv[:1] == ["curves"]:
        from bench.curves import main as curves

        return curves(argv[1:])
    if argv[:1] == ["all"]:
        return rerun_all(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "workload",
        choices=[*WORKLOADS, "list"],
        metavar="WORKLOAD",
        help=f"one of {', '.join(WORKLOADS)}; or page, curves, list",
    )
    parser.add_argument("--sizes", help="Stream sizes in events, e.g. 3000,30000.")
    parser.add_argument("--compare", default="", help=f"Systems: {','.join(COMPARABLE)}.")
    parser.add_argument("--runtime", choices=RUNTIMES, default="ray")
    parser.add_argument("--rate", type=float, default=None, help="Updates/s offered.")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--trials", type=int, default=5, help="Replays per size (>= 5).")
    parser.add_argument("--at", type=float, default=0.75, help="Cut T at this fraction.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Results directory.")
    parser.add_argument("--no-page", action="store_true", help="Do not remake README.md.")
    args = parser.parse_args(argv)
    if args.workload == "list":
        for w in WORKLOADS.values():
            print(f"{w.name:15} {w.kind:7} default {w.default_size:>10,}  {w.summary}")
        return 0
    systems = [s.strip() for s in args.compare.split(",") if s.strip()]
    result = run_workload(
        args.workload,
        _sizes(args.sizes, args.workload),
        systems=systems,
        runtime=args.runtime,
        rate=args.rate,
        shards=args.shards,
        trials=args.trials,
        at_fraction=args.at,
        out=args.out,
        progress=sys.stdout.isatty(),
    )
    print(f"wrote {args.out / 'framework' / (args.workload + '.json')}")
    if not args.no_page:
        from bench.page import write_page

        print(f"wrote {write_page(args.out)}")
    return 0 if result else 1
