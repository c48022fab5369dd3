"""Ring benchmark: logged behavior executions per second, before and after, in one run.

Runs the ring workload (``n`` vertices, ``m`` executions) as:

* ``core-logged``: one ``ShardCore`` in one process with a real RocksDB log (the pure
  shard loop: behavior, encoding, one WriteBatch per batch);
* ``core-ephemeral``: the same loop with logging off;
* each of them against this checkout (``now``) and against the tree of the commit before
  the log format 2 (``before``, see :mod:`bench.baseline`), alternated trial by trial in
  fresh processes, so the ratios hold on a shared machine whose speed drifts;
* ``rocksdict-raw``: ``m`` raw rocksdict WriteBatch puts of the logged bytes per
  execution, 1,000 a batch (what the disk side alone costs);
* ``ray-logged-1``/``ray-logged-2``: the full runtime, shard actors on Ray (this checkout).

Rates are wall-clock executions/s; ``cpu`` rates divide by the process's CPU time (steadier
when other work shares the machine). Writes ``bench/results/ring.json`` and ``ring.md``.

    python -m bench.ring --vertices 1000 --messages 200000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.baseline import BEFORE, measure, tree
from bench.report import machine, median_run, write_results
from bench.workloads import RingVertex, ring_seed

RESULTS = Path(__file__).parent / "results"
ISSUE = {"core-logged": 90_000, "core-ephemeral": 166_000, "logging_cost": 1.86}


def _raw_puts(m: int, value_size: int, workdir: Path) -> dict[str, Any]:
    from rocksdict import Options, Rdict, WriteBatch

    db = Rdict(str(workdir / "raw"), Options(raw_mode=True))
    value = b"x" * max(value_size, 1)
    started = time.perf_counter()
    for start in range(1, m + 1, 1000):
        batch = WriteBatch(raw_mode=True)
        for seq in range(start, min(start + 1000, m + 1)):
            batch.put(seq.to_bytes(8, "big"), value)
        db.write(batch)
    seconds = time.perf_counter() - started
    db.close()
    return {"executions": m, "seconds": seconds, "rate": m / seconds}


def _ray_run(n: int, m: int, shards: int, workdir: Path) -> dict[str, Any]:
    import chronoray as cr

    with cr.GraphCluster(
        num_shards=shards, log_dir=str(workdir / f"ray-{shards}"), vertex_types=[RingVertex]
    ) as g:
        started = time.perf_counter()
        g.ingest(ring_seed(n, m))
        seconds = time.perf_counter() - started
        executions = sum(s.worker_clock for s in g.stats().shards)
    assert executions == m, (executions, m)
    return {"executions": executions, "seconds": seconds, "rate": executions / seconds}


def _median(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median rate, plus every trial's rates."""
    run = median_run(results)
    if "cpu_rate" in run:
        run["cpu_rate"] = statistics.median(r["cpu_rate"] for r in results)
    return run


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--trials", type=int, default=3, help="Runs per mode; median kept.")
    parser.add_argument(
        "--before", default=BEFORE, help="Git revision measured as 'before' ('none': skip)."
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    n, m = args.vertices, args.messages
    trees = {"now": tree(None), "before": tree(args.before)}
    trees = {name: root for name, root in trees.items() if root is not None}
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-"))
    trials: dict[str, list[dict[str, Any]]] = {}
    try:
        # every mode once per trial, alternating the trees, so a slow spell hits them all
        for _ in range(args.trials):
            for name, root in trees.items():
                for logged in (True, False):
                    mode = f"core-{'logged' if logged else 'ephemeral'}"
                    result = measure(
                        root, "ring", vertices=n, messages=m, logged=logged, workdir=str(workdir)
                    )
                    trials.setdefault(f"{mode} ({name})", []).append(result)
            per_execution = trials["core-logged (now)"][-1]["log_bytes"] / m
            trials.setdefault("rocksdict-raw", []).append(
                _raw_puts(m, round(per_execution), workdir)
            )
        if not args.skip_ray:
            from chronoray.config import Config
            from chronoray.connect import ensure_ray

            ensure_ray(Config.load())
            for trial in range(args.trials):
                for shards in (1, 2):
                    trials.setdefault(f"ray-logged-{shards}", []).append(
                        _ray_run(n, m, shards, workdir / f"trial-{trial}")
                    )
    finally:
        if not args.skip_ray:
            import ray

            ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    runs = {name: _median(results) for name, results in trials.items()}
    result = {
        "benchmark": "ring",
        "vertices": n,
        "messages": m,
        "trials": args.trials,
        "before": args.before if "before" in trees else None,
        "machine": machine(),
        "runs": runs,
        "ratios": _ratios(runs),
        "issue": ISSUE,
    }
    write_results(args.out, "ring", result, _table(result))
    return result


def _ratios(runs: dict[str, Any]) -> dict[str, float]:
    ratios = {}
    for name in ("now", "before"):
        logged, ephemeral = runs.get(f"core-logged ({name})"), runs.get(f"core-ephemeral ({name})")
        if logged and ephemeral:
            ratios[f"logging cost, ephemeral / logged ({name})"] = (
                ephemeral["rate"] / logged["rate"]
            )
            ratios[f"logging cost, ephemeral / logged, cpu ({name})"] = (
                ephemeral["cpu_rate"] / logged["cpu_rate"]
            )
    if "core-logged (before)" in runs:
        for mode in ("core-logged", "core-ephemeral"):
            now, before = runs[f"{mode} (now)"], runs[f"{mode} (before)"]
            ratios[f"{mode}: now / before"] = now["rate"] / before["rate"]
            ratios[f"{mode}: now / before, cpu"] = now["cpu_rate"] / before["cpu_rate"]
    ratios["raw puts / logged executions (now)"] = (
        runs["rocksdict-raw"]["rate"] / runs["core-logged (now)"]["rate"]
    )
    if "ray-logged-1" in runs:
        ratios["ray 1 shard / core loop (now)"] = (
            runs["ray-logged-1"]["rate"] / runs["core-logged (now)"]["rate"]
        )
        ratios["ray 2 shards / ray 1 shard"] = (
            runs["ray-logged-2"]["rate"] / runs["ray-logged-1"]["rate"]
        )
    return ratios


def _table(result: dict[str, Any]) -> str:
    before = result["before"]
    lines = [
        f"# Ring benchmark: {result['vertices']:,} vertices, {result['messages']:,} executions",
        "",
        f"Median of {result['trials']} interleaved trials per run, "
        f"{result['machine']['cpus']} CPUs, Python {result['machine']['python']}. "
        + (
            f"'before' = commit {before} (log format 1), measured in the same run. "
            if before
            else ""
        )
        + "cpu rate = executions per CPU second of the process (steadier when the machine "
        "is shared). The issue's numbers (another moment of this VM): 90 k logged, 166 k "
        "ephemeral, logging cost 1.86; targets >= 250 k logged/s, logging cost <= 1.3.",
        "",
        "| run | executions | seconds | executions/s | cpu executions/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, run in result["runs"].items():
        cpu = f"{run['cpu_rate']:,.0f}" if "cpu_rate" in run else ""
        lines.append(
            f"| {name} | {run['executions']:,} | {run['seconds']:.2f} | {run['rate']:,.0f} "
            f"| {cpu} |"
        )
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in result["ratios"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
