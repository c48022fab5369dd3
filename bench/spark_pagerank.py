"""Spark PageRank and WCC from a snapshot: where a whole run's time goes, before (``--before``,
default main) and after in one run and one Spark session (issue 25, item 3).

1. **Where a run goes**, CollegeMsg at ``--at``: each step of a PageRank run timed on its
   own (wall clock, and the Spark jobs it scheduled, from Spark's status tracker), for
   both hand-overs: before, the snapshot becomes DataFrames through RayDP (``to_spark``),
   one distinct job collects the ids and the block's task reads the edges as Arrow
   batches; after, the ids come from the snapshot's tables on the driver and the task
   reads its share of the parts from the object store. Then the result's way back
   (``to_pandas``, through Ray) the same way.
2. **Seconds per iteration**, same cut (tol 1e-10), before and after, one partition (every
   iteration in one job) and after with 2 partitions (a job per iteration): the first
   run in the session ("cold") and the median of ``--trials`` later ones ("warm"), the
   whole run (PageRank and the result to pandas) and the iterations alone; jobs per run.
3. **WCC** on the same cut, before and after.
4. **1 M-edge generated graph, 20 iterations**: after and before vs networkx (build + 20
   iterations).

The "before" modules (``spark_bridge/analyses/{_graph,pagerank,wcc}.py`` at ``--before``)
are loaded from git. Writes ``spark_pagerank.json`` and ``spark_pagerank.md`` under
``--out``.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import networkx as nx
import ray
from pyspark import cloudpickle

import chronoray as cr
from bench.analyses import ITERATIONS, _max_error, _nx_from_lines, _nx_iterations
from bench.report import machine, write_results
from bench.spark import synthetic_snapshot
from chronoray.datasets import collegemsg_path
from spark_bridge.analyses.metrics import counting_jobs

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parent.parent
TOL = 1e-10


def _before(commit: str, workdir: Path) -> dict[str, Any]:
    """``spark_bridge/analyses/{_graph,pagerank,wcc}.py`` as they were at ``commit``, as
    modules (``before__graph``, ``before_pagerank``, ``before_wcc``) that import each other."""
    modules = {}
    for name in ("_graph", "pagerank", "wcc"):
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:spark_bridge/analyses/{name}.py"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        text = text.replace("spark_bridge.analyses._graph", "before__graph")
        path = workdir / f"before_{name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"before_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclass looks itself up there
        spec.loader.exec_module(module)
        cloudpickle.register_pickle_by_value(module)  # the executors cannot import it
        modules[name] = module
    return modules


def _tracked(spark: Any, run: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """``run()`` under a job group of its own (:func:`counting_jobs`): its wall time, and
    the jobs, stages and tasks Spark scheduled for it."""
    seconds: list[float] = []

    def timed() -> Any:
        started = time.perf_counter()
        try:
            return run()
        finally:
            seconds.append(time.perf_counter() - started)

    result, work = counting_jobs(spark, timed)
    return result, {"seconds": seconds[0], **work.as_dict()}


def _steps_before(spark: Any, old: dict[str, Any], snap: Any) -> list[dict[str, Any]]:
    """A PageRank run of the before form, step by step."""
    from pyspark.sql import functions as F

    from spark_bridge import to_pandas
    from spark_bridge.convert import snapshot_to_spark

    g, pr = old["_graph"], old["pagerank"]
    steps: list[dict[str, Any]] = []

    def step(name: str, run: Callable[[], Any]) -> Any:
        result, work = _tracked(spark, run)
        steps.append({"step": name, **work})
        return result

    frames = step("snapshot to DataFrames (RayDP to_spark)", lambda: snapshot_to_spark(spark, snap))
    vertices, edges = step("vertex union (plan only)", lambda: g.graph_frames(spark, frames))
    ids = step("ids: distinct + toPandas", lambda: g.sorted_ids(spark, vertices))
    rows = edges.select("src", "dst", F.lit(1.0).alias("w")).coalesce(1)
    solve = pr._solver(pr._block_builder(ids), 0.85, TOL, 300)
    found = step(
        "block + iterations (to_spark's pass, mapInArrow)",
        lambda: g.partition_blocks(rows, pr.COLUMNS, solve).collect(),
    )
    frame = step(
        "ranks to a DataFrame", lambda: g.vertex_frame(spark, ids, "pagerank", found[0][0])
    )
    step("result to pandas (through Ray)", lambda: to_pandas(frame))
    return steps


def _steps_after(spark: Any, snap: Any) -> list[dict[str, Any]]:
    """A PageRank run of the after form, step by step."""
    from spark_bridge import to_pandas
    from spark_bridge.analyses import _graph
    from spark_bridge.analyses import pagerank as _  # noqa: F401 -- the module, below

    pr = sys.modules["spark_bridge.analyses.pagerank"]
    steps: list[dict[str, Any]] = []

    def step(name: str, run: Callable[[], Any]) -> Any:
        result, work = _tracked(spark, run)
        steps.append({"step": name, **work})
        return result

    graph = step("ids from the snapshot's tables (driver)", lambda: _graph.array_graph(spark, snap))
    solve = pr._solver(pr._block_builder(graph.ids), 0.85, TOL, 300)

    def solved() -> Any:
        with graph.blocks({"src": "src", "dst": "dst", "w": None}, solve, 1) as blocks:
            return blocks.collect()

    found = step("block + iterations (the task reads the parts)", solved)
    frame = step(
        "ranks to a DataFrame",
        lambda: _graph.vertex_frame(spark, graph.ids, "pagerank", found[0][0]),
    )
    step("result to pandas (through Ray)", lambda: to_pandas(frame))
    return steps


def _runs(trials: int, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The first run ("cold") and the median of ``trials`` more ("warm")."""
    cold = run()
    warm = [run() for _ in range(trials)]
    pick = sorted(warm, key=lambda r: r["seconds"])[len(warm) // 2]
    return {"cold": cold, "warm": pick, "warm_seconds": [r["seconds"] for r in warm]}


def _pagerank_run(spark: Any, fn: Callable[..., Any], snap: Any, ref: dict, **kw: Any) -> Any:
    from spark_bridge import to_pandas

    def run() -> dict[str, Any]:
        runs: list[Any] = []
        table, work = _tracked(spark, lambda: to_pandas(fn(spark, snap, run=runs, **kw)))
        last = runs[-1]
        got = dict(zip(table["vertex"], table["pagerank"], strict=True))
        out = {**work, "iterations": last.iterations, "partitions": last.partitions}
        out["seconds_per_iteration"] = work["seconds"] / last.iterations
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
    parser.add_argument("--before", default="main", help="Commit of the before form.")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--big", type=int, default=1_000_000, help="Generated graph edges.")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-spark-pagerank-"))
    ray.init(address="local", num_cpus=2, object_store_memory=512 * 1024 * 1024,
             include_dashboard=False, log_to_driver=False)  # fmt: skip
    from spark_bridge import pagerank, spark_session, stop_spark, weakly_connected_components

    old = _before(args.before, workdir)
    result: dict[str, Any] = {"benchmark": "spark_pagerank", "machine": machine()}
    result["date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    result["before"] = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.before],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    result["trials"], result["load_average"] = args.trials, [os.getloadavg()]
    try:
        with cr.GraphCluster(num_shards=2, log_dir=str(workdir / "college")) as g:
            g.ingest(cr.SnapEdgeSource(collegemsg_path()))
            snap = g.snapshot(at=args.at)
            graph = _nx_from_lines(collegemsg_path(), args.at)
            ref = nx.pagerank(graph, tol=1e-13, max_iter=1000)
            started = time.perf_counter()
            spark = spark_session()
            result["session_seconds"] = time.perf_counter() - started
            c: dict[str, Any] = {"vertices": snap.meta.vertices, "edges": snap.meta.edges}
            old_pr, old_wcc = old["pagerank"].pagerank, old["wcc"].weakly_connected_components
            c["before_one_job"] = _runs(
                args.trials, _pagerank_run(spark, old_pr, snap, ref, tol=TOL)
            )
            c["blocks_one_job"] = _runs(
                args.trials, _pagerank_run(spark, pagerank, snap, ref, tol=TOL)
            )
            c["blocks_2_partitions"] = _runs(
                args.trials, _pagerank_run(spark, pagerank, snap, ref, tol=TOL, partitions=2)
            )
            c["steps_before"] = [_steps_before(spark, old, snap) for _ in range(2)][-1]
            c["steps_after"] = [_steps_after(spark, snap) for _ in range(2)][-1]
            expected = {frozenset(x) for x in nx.weakly_connected_components(graph)}
            c["wcc_before"] = _runs(args.trials, _wcc_run(spark, old_wcc, snap, expected))
            c["wcc_blocks"] = _runs(
                args.trials, _wcc_run(spark, weakly_connected_components, snap, expected)
            )
            result["college"] = c
            result["load_average"].append(os.getloadavg())
        result["big"] = _big(args, spark, pagerank, old["pagerank"].pagerank)
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
    out["before_one_job"] = _runs(1, _pagerank_run(spark, old, snap, {}, **fixed))
    return out


def _cell(r: dict[str, Any], key: str = "seconds_per_iteration") -> str:
    return f"{r['cold'][key]:.4f} / {r['warm'][key]:.4f}"


def _markdown(r: dict[str, Any]) -> str:
    c, b = r["college"], r["big"]
    loads = ", ".join(str(tuple(round(x, 1) for x in load)) for load in r["load_average"])
    lines = [
        "# Spark PageRank and WCC from a snapshot: the hand-over, before and after (issue 25)",
        "",
        f"{r['date']}, {r['machine']['cpus']} CPUs; one Spark session (RayDP, 1 executor, 1 "
        f"core; started in {r['session_seconds']:.1f} s); load average (1, 5, 15 min) at the "
        f"start, after the CollegeMsg part and at the end: {loads}. Before = "
        f"`spark_bridge/analyses` at {r['before']}. Cold: the form's first run in the "
        f"session; warm: median of {r['trials']} more. Written by `python -m "
        "bench.spark_pagerank`.",
        "",
        f"## PageRank, CollegeMsg cut ({c['vertices']:,} vertices, {c['edges']:,} edges), "
        f"tol {TOL:g}",
        "",
        "Whole run = `to_pandas(pagerank(spark, snapshot))`: the hand-over, the iterations "
        "and the result back to pandas through Ray.",
        "",
        "| form | iterations | s per iteration, whole run (cold / warm) | s per iteration, "
        "iterations alone (cold / warm) | jobs per run (warm) | max abs diff vs networkx |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, name in (
        ("before_one_job", "before: RayDP DataFrames, ids by a distinct job, 1 partition"),
        ("blocks_one_job", "after: ids on the driver, the task reads the parts, 1 partition"),
        ("blocks_2_partitions", "after, 2 partitions (a job per iteration)"),
    ):
        row = c[key]
        lines.append(
            f"| {name} | {row['warm']['iterations']} | {_cell(row)} | "
            f"{_cell(row, 'iterating_seconds_per_iteration')} | {row['warm']['jobs']} | "
            f"{row['warm']['max_error']:.2e} |"
        )
    lines += [
        "",
        "Where a warm run's time goes, step by step (each step timed alone, its Spark jobs "
        "from the status tracker; the second of two runs):",
        "",
        "| side | step | ms | Spark jobs |",
        "|---|---|---:|---:|",
    ]
    for side in ("before", "after"):
        steps = c[f"steps_{side}"]
        for s in steps:
            lines.append(f"| {side} | {s['step']} | {s['seconds'] * 1000:.0f} | {s['jobs']} |")
        total = sum(s["seconds"] for s in steps)
        jobs = sum(s["jobs"] for s in steps)
        lines.append(f"| {side} | **all steps** | **{total * 1000:.0f}** | **{jobs}** |")
    lines += [
        "",
        "## WCC, same cut",
        "",
        "| form | seconds (cold / warm) | jobs (warm) | equal to networkx |",
        "|---|---:|---:|---|",
    ]
    for key, name in (
        ("wcc_before", "before: RayDP DataFrames, ids by a distinct job"),
        ("wcc_blocks", "after: ids on the driver, the tasks read the parts"),
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
        "| engine | seconds (whole run, after a cold run) | iterations alone | jobs |",
        "|---|---:|---:|---:|",
        f"| networkx: build + {ITERATIONS} iterations | {b['networkx_seconds']:.2f} | | |",
    ]
    for key, name in (
        ("before_one_job", "Spark before, 1 partition, one job"),
        ("blocks_one_job", "Spark after, 1 partition, one job"),
    ):
        row = b[key]["warm"]
        lines.append(
            f"| {name} | {row['seconds']:.2f} | "
            f"{row['iterating_seconds_per_iteration'] * row['iterations']:.2f} | {row['jobs']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
