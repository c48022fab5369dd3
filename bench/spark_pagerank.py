"""Spark PageRank and WCC: where a DataFrame iteration's time goes, and the block form
against it, in one run and one Spark session (issue 25, item 3).

1. **Where the DataFrame form's iteration goes** (the form of ``--before``, default main at
   d99271b, loaded from git): for one iteration on the CollegeMsg cut, the Python that
   builds the plan, the driver's planning (``queryExecution().executedPlan()``), and the
   jobs that run it (Spark's status tracker and status store: jobs, stages, tasks,
   executor run time); then the same for a plan of 10 nested iterations.
2. **Seconds per iteration**, CollegeMsg at ``--at`` (tol 1e-10): the DataFrame form and
   the block form (one job for all iterations, and a job per iteration), each its first
   run in the session ("cold") and the median of ``--trials`` later runs ("warm"); whole
   run / iterations, and for the block form the iterations alone.
3. **WCC** on the same cut: label propagation (before) vs components per partition.
4. **1 M-edge generated graph, 20 iterations**: block form vs networkx (build + 20
   iterations); the DataFrame form too unless ``--no-before-big``.

Writes ``spark_pagerank.json`` and ``spark_pagerank.md`` under ``--out``.

    python -m bench.spark_pagerank
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import ray

import chronoray as cr
from bench.analyses import ITERATIONS, _max_error, _nx_from_lines, _nx_iterations
from bench.report import machine, write_results
from bench.spark import synthetic_snapshot
from chronoray.datasets import collegemsg_path

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parent.parent
TOL = 1e-10


def _before(commit: str, name: str, workdir: Path) -> Any:
    """``spark_bridge/analyses/<name>.py`` as it was at ``commit``, as a module."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:spark_bridge/analyses/{name}.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    path = workdir / f"before_{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"before_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _stage_times(spark: Any, stage_ids: set[int]) -> dict[str, float | None]:
    """Executor run and deserialise time (ms) of ``stage_ids``' last attempts, from the
    status store; ``None`` where the store does not answer."""
    store = spark.sparkContext._jsc.sc().statusStore()
    run = deserialize = 0.0
    try:
        for stage in stage_ids:
            data = store.lastStageAttempt(stage)
            run += data.executorRunTime()
            deserialize += data.executorDeserializeTime()
    except Exception:  # noqa: BLE001 -- the store's Scala API is not a stable contract
        return {"executor_run_ms": None, "executor_deserialize_ms": None}
    return {"executor_run_ms": run, "executor_deserialize_ms": deserialize}


def _tracked(spark: Any, run: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """``run()`` under a job group of its own: wall time, jobs, stages, tasks, and the
    executors' run time of its stages."""
    context = spark.sparkContext
    group = f"bench-spark-pagerank-{time.monotonic_ns()}"
    context.setJobGroup(group, "measured")
    started = time.perf_counter()
    try:
        result = run()
    finally:
        seconds = time.perf_counter() - started
        context.setLocalProperty("spark.jobGroup.id", None)
    tracker = context.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
    stage_ids = {s for job in jobs if job is not None for s in job.stageIds}
    stages = [tracker.getStageInfo(s) for s in stage_ids]
    tasks = sum(s.numTasks for s in stages if s is not None)
    info = {"seconds": seconds, "jobs": len(jobs), "stages": len(stage_ids), "tasks": tasks}
    return result, {**info, **_stage_times(spark, stage_ids)}


def _where_it_goes(spark: Any, old: Any, snap: Any) -> dict[str, Any]:
    """One DataFrame iteration, then 10 nested ones: Python, planning, jobs."""
    from pyspark.sql import functions as F

    from spark_bridge.analyses._graph import graph_frames

    vertices, edges = graph_frames(spark, snap)
    vertices = vertices.localCheckpoint()
    n = vertices.count()
    pairs = edges.select("src", "dst", F.lit(1.0).alias("w"))
    out_w = pairs.groupBy("src").agg(F.sum("w").alias("out_w"))
    transitions = pairs.join(out_w, "src").select(
        "src", "dst", (F.col("w") / F.col("out_w")).alias("p"), F.lit(False).alias("own")
    )
    transitions = transitions.union(vertices.select("vertex", "vertex", F.lit(0.0), F.lit(True)))
    transitions = transitions.repartition(1, "dst").cache()
    transitions.count()
    ranks = vertices.select("vertex", F.lit(1.0 / n).alias("rank")).localCheckpoint()
    out: dict[str, Any] = {}
    for depth in (1, 1, 10, 10):  # each twice: the first of each warms the JVM
        started = time.perf_counter()
        step = ranks
        for _ in range(depth):
            step = old._step(step, transitions, 0.85, 0.15 / n, n)
        python = time.perf_counter() - started
        started = time.perf_counter()
        step._jdf.queryExecution().executedPlan()  # analysis, optimisation, physical plan
        planning = time.perf_counter() - started
        _, work = _tracked(spark, lambda s=step: s.localCheckpoint(eager=True))
        out[f"depth_{depth}"] = {"python_seconds": python, "planning_seconds": planning, **work}
    transitions.unpersist()
    return out


def _runs(trials: int, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The first run ("cold") and the median of ``trials`` more ("warm")."""
    cold = run()
    warm = [run() for _ in range(trials)]
    pick = sorted(warm, key=lambda r: r["seconds"])[len(warm) // 2]
    return {"cold": cold, "warm": pick, "warm_seconds": [r["seconds"] for r in warm]}


def _pagerank_run(spark: Any, fn: Callable[..., Any], snap: Any, ref: dict, **kw: Any) -> Any:
    from spark_bridge import PageRankRun, to_pandas

    def run() -> dict[str, Any]:
        runs: list[PageRankRun] = []
        table, work = _tracked(spark, lambda: to_pandas(fn(spark, snap, run=runs, **kw)))
        last = runs[-1]
        got = dict(zip(table["vertex"], table["pagerank"], strict=True))
        out = {**work, "iterations": last.iterations, "partitions": last.partitions}
        out["seconds_per_iteration"] = work["seconds"] / last.iterations
        if hasattr(last, "iterating_seconds"):
            out["iterating_seconds_per_iteration"] = last.iterating_seconds / last.iterations
        out["max_error"] = _max_error(got, ref) if ref else None
        return out

    return run


def _wcc_run(spark: Any, fn: Callable[..., Any], snap: Any, expected: set) -> Any:
    from spark_bridge import to_pandas

    def run() -> dict[str, Any]:
        table, work = _tracked(spark, lambda: to_pandas(fn(spark, snap)))
        groups: dict[Any, set] = {}
        for v, c in zip(table["vertex"], table["component"], strict=True):
            groups.setdefault(c, set()).add(v)
        return {**work, "equal_to_networkx": {frozenset(g) for g in groups.values()} == expected}

    return run


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", type=float, default=1090000000.0, help="CollegeMsg cut.")
    parser.add_argument("--before", default="d99271b", help="Commit of the DataFrame form.")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--big", type=int, default=1_000_000, help="Generated graph edges.")
    parser.add_argument("--before-big", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-spark-pagerank-"))
    ray.init(address="local", num_cpus=2, object_store_memory=512 * 1024 * 1024,
             include_dashboard=False, log_to_driver=False)  # fmt: skip
    from spark_bridge import pagerank, spark_session, stop_spark, weakly_connected_components

    old_pr, old_wcc = (
        _before(args.before, "pagerank", workdir),
        _before(args.before, "wcc", workdir),
    )
    result: dict[str, Any] = {"benchmark": "spark_pagerank", "machine": machine()}
    result["before"], result["trials"] = args.before, args.trials
    result["load_average"] = [os.getloadavg()]
    try:
        with cr.GraphCluster(num_shards=2, log_dir=str(workdir / "college")) as g:
            g.ingest(cr.SnapEdgeSource(collegemsg_path()))
            snap = g.snapshot(at=args.at)
            graph = _nx_from_lines(collegemsg_path(), args.at)
            ref = nx.pagerank(graph, tol=1e-13, max_iter=1000)
            started = time.perf_counter()
            spark = spark_session()
            result["session_seconds"] = time.perf_counter() - started
            college: dict[str, Any] = {"vertices": snap.meta.vertices, "edges": snap.meta.edges}
            college["blocks_one_job"] = _runs(
                args.trials, _pagerank_run(spark, pagerank, snap, ref, tol=TOL)
            )
            college["dataframe"] = _runs(
                args.trials, _pagerank_run(spark, old_pr.pagerank, snap, ref, tol=TOL)
            )
            college["blocks_job_per_iteration"] = _runs(
                args.trials,
                _pagerank_run(spark, pagerank, snap, ref, tol=TOL, one_job=False),
            )
            college["blocks_2_partitions"] = _runs(
                args.trials,
                _pagerank_run(spark, pagerank, snap, ref, tol=TOL, partitions=2),
            )
            college["where_dataframe_time_goes"] = _where_it_goes(spark, old_pr, snap)
            expected = {frozenset(c) for c in nx.weakly_connected_components(graph)}
            college["wcc_blocks"] = _runs(
                args.trials, _wcc_run(spark, weakly_connected_components, snap, expected)
            )
            college["wcc_label_propagation"] = _runs(
                args.trials, _wcc_run(spark, old_wcc.weakly_connected_components, snap, expected)
            )
            result["college"] = college
            result["load_average"].append(os.getloadavg())
        result["big"] = _big(args, spark, pagerank, old_pr)
        result["load_average"].append(os.getloadavg())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        stop_spark()
        ray.shutdown()
    write_results(args.out, "spark_pagerank", result, _markdown(result), show=False)
    return result


def _big(args: Any, spark: Any, pagerank: Any, old: Any) -> dict[str, Any]:
    snap = synthetic_snapshot(args.big, 2)
    import pyarrow as pa

    edges = pa.concat_tables(ray.get(snap.edge_refs))
    src, dst = edges["src"].to_numpy(), edges["dst"].to_numpy()
    out: dict[str, Any] = {"edges": args.big, "vertices": snap.meta.vertices}
    started = time.perf_counter()
    _nx_iterations(src, dst)()
    out["networkx_seconds"] = time.perf_counter() - started
    fixed = {"tol": 0.0, "max_iter": ITERATIONS}
    out["blocks_one_job"] = _runs(1, _pagerank_run(spark, pagerank, snap, {}, **fixed))
    out["blocks_2_partitions"] = _runs(
        1, _pagerank_run(spark, pagerank, snap, {}, partitions=2, **fixed)
    )
    if args.before_big:
        out["dataframe"] = _pagerank_run(
            spark, old.pagerank, snap, {}, check_every=ITERATIONS, **fixed
        )()
    return out


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms"


def _cell(r: dict[str, Any], key: str = "seconds_per_iteration") -> str:
    return f"{r['cold'][key]:.4f} / {r['warm'][key]:.4f}"


def _markdown(r: dict[str, Any]) -> str:
    c, b = r["college"], r["big"]
    loads = ", ".join(str(tuple(round(x, 1) for x in load)) for load in r["load_average"])
    lines = [
        "# Spark PageRank and WCC: DataFrame iterations vs numpy blocks (issue 25, item 3)",
        "",
        f"{r['machine']['cpus']} CPUs; one Spark session (RayDP, 1 executor, 1 core; started "
        f"in {r['session_seconds']:.1f} s); load average (1, 5, 15 min) at the start, after "
        f"the CollegeMsg part and at the end: {loads}. Before = `spark_bridge/analyses` at "
        f"{r['before']} (the DataFrame form). Cold: the form's first run in the session; warm: "
        f"median of {r['trials']} more.",
        "",
        f"## PageRank, CollegeMsg cut ({c['vertices']:,} vertices, {c['edges']:,} edges), "
        f"tol {TOL:g}",
        "",
        "| form | iterations | s per iteration, whole run (cold / warm) | s per iteration, "
        "iterations alone | jobs (warm) | max abs diff vs networkx |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, name in (
        ("dataframe", "before: DataFrame, broadcast join per iteration"),
        ("blocks_one_job", "blocks, 1 partition, all iterations in one job"),
        ("blocks_job_per_iteration", "blocks, 1 partition, a job per iteration"),
        ("blocks_2_partitions", "blocks, 2 partitions, a job per iteration"),
    ):
        row = c[key]
        alone = (
            _cell(row, "iterating_seconds_per_iteration")
            if "iterating_seconds_per_iteration" in row["warm"]
            else ""
        )
        lines.append(
            f"| {name} | {row['warm']['iterations']} | {_cell(row)} | {alone} | "
            f"{row['warm']['jobs']} | {row['warm']['max_error']:.2e} |"
        )
    w = c["where_dataframe_time_goes"]
    lines += [
        "",
        "Where a DataFrame iteration's time goes (before; ranks checkpointed, transitions "
        "cached; 2nd measurement of each depth):",
        "",
        "| iterations in the plan | Python builds the plan | driver plans it | runs it "
        "(jobs, stages, tasks) | executors' run time | executors' deserialise time |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for depth in (1, 10):
        d = w[f"depth_{depth}"]
        lines.append(
            f"| {depth} | {d['python_seconds'] * 1000:.0f} ms | "
            f"{d['planning_seconds'] * 1000:.0f} ms | {d['seconds'] * 1000:.0f} ms "
            f"({d['jobs']}, {d['stages']}, {d['tasks']}) | {_ms(d['executor_run_ms'])} | "
            f"{_ms(d['executor_deserialize_ms'])} |"
        )
    lines += [
        "",
        "## WCC, same cut",
        "",
        "| form | seconds (cold / warm) | jobs (warm) | equal to networkx |",
        "|---|---:|---:|---|",
    ]
    for key, name in (
        ("wcc_label_propagation", "before: label propagation, DataFrame"),
        ("wcc_blocks", "components per partition, merged on the driver"),
    ):
        row = c[key]
        lines.append(
            f"| {name} | {row['cold']['seconds']:.2f} / {row['warm']['seconds']:.2f} | "
            f"{row['warm']['jobs']} | {row['warm']['equal_to_networkx']} |"
        )
    lines += [
        "",
        f"## {b['edges'] / 1e6:g} M-edge generated graph ({b['vertices']:,} vertices), "
        f"{ITERATIONS} iterations",
        "",
        "| engine | seconds (whole run) | iterations alone |",
        "|---|---:|---:|",
        f"| networkx: build + {ITERATIONS} iterations | {b['networkx_seconds']:.2f} | |",
    ]
    for key, name in (
        ("blocks_one_job", "Spark blocks, 1 partition, one job"),
        ("blocks_2_partitions", "Spark blocks, 2 partitions, a job per iteration"),
    ):
        row = b[key]["warm"]
        lines.append(
            f"| {name} | {row['seconds']:.2f} | "
            f"{row['iterating_seconds_per_iteration'] * row['iterations']:.2f} |"
        )
    if "dataframe" in b:
        lines.append(f"| Spark before: DataFrame | {b['dataframe']['seconds']:.2f} | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
