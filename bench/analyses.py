"""Analyses at speed: the targets of issue 25 and the engines' crossover, in one run.

1. **PageRank on a snapshot** (CollegeMsg at ``--at``, ingested into 2 shards):
   ``cr.algorithms.pagerank(snap)`` (the kernel: tables from the object store, index,
   iterations) versus networkx (build the graph from the file's lines, then
   ``pagerank``) and versus Raphtory (``g.before(T + 1)`` + ``pagerank``, in another
   Python that has Raphtory: ``--raphtory-python``, by default the pinned environment
   :mod:`bench.envs` makes; skipped, saying why, if it cannot be installed);
2. **WCC and BFS on the skewed 600 k stream's snapshot** (``bench.workloads.skewed_stream``,
   its tables put in the object store as 2 shard parts) versus networkx and Raphtory;
3. **Pregel PageRank on Ray, 2 partitions**: the array form and the per-vertex form, versus
   networkx's ``pagerank`` on the same graph;
4. **Spark** (``--spark``): PageRank of the CollegeMsg snapshot, seconds per iteration and
   the jobs and tasks Spark scheduled for them (its status tracker); PageRank of a
   generated 1 M-edge graph, 20 iterations, versus networkx (build + 20 iterations);
5. **Crossover**: PageRank (20 iterations) on generated graphs of ``--sizes`` edges with
   every engine (kernel, Ray Pregel arrays with 2 partitions, Spark, networkx), whole
   wall time as a user waits for it; drawn in ``analyses_crossover.png``.

Profiles: the top lines of a cProfile of the kernel and of the Ray Pregel driver.
Writes ``analyses.json``, ``analyses.md`` and the PNG under ``--out``.

The page is all generated: the tables of this run; in the targets table, the Pregel-on-Ray
row from ``bench/pregel_ray.py``'s focused run (``--pregel-json``) and the Spark rows from
``bench/spark_pagerank.py``'s (``--spark-json``) when those files exist, each row naming
the run, its date and load; then the hand-written sections, included from ``--notes``
(``bench/results/analyses_notes.md``: edit there, not in the page). ``--render`` writes
the page again from the JSON files alone, measuring nothing.

    python -m bench.analyses [--raphtory-python PY]
    python -m bench.analyses --render
"""

from __future__ import annotations

import argparse
import json
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
import numpy as np
import pyarrow as pa
import ray

import chronoray as cr
from bench.models import fmt, timed_median
from bench.report import machine, profile_top
from bench.spark import synthetic_snapshot
from bench.workloads import skewed_stream, write_snap
from chronoray.datasets import collegemsg_path
from snapshot.algorithms import connected_components, pagerank, shortest_paths
from snapshot.algorithms.csr import GraphIndex
from snapshot.algorithms.pagerank import pagerank_arrays, pagerank_kernel, pagerank_program
from snapshot.models import partitions_of, pregel
from snapshot.snapshot import Snapshot, SnapshotMeta

RESULTS = Path(__file__).parent / "results"
RAPHTORY_SIDE = Path(__file__).with_name("raphtory_side.py")
TOL = 1e-10
ITERATIONS = 20  # the fixed iteration count of the crossover and the 1 M-edge run


def _nx_from_lines(path: Path, at: float) -> nx.DiGraph:
    graph = nx.DiGraph()
    with open(path) as f:
        for line in f:
            src, dst, ts = line.split()
            if float(ts) <= at:
                graph.add_edge(int(src), int(dst))
    return graph


def _max_error(got: dict[Any, float], expected: dict[Any, float]) -> float:
    return max(abs(got[v] - expected[v]) for v in expected)


def _raphtory_env() -> Path | None:
    """The pinned Raphtory environment (made on first use); ``None``, with the reason
    printed, when it cannot be installed here."""
    from bench import envs

    try:
        return envs.ensure("raphtory")
    except RuntimeError as exc:
        print(f"Raphtory side skipped: {exc}")
        return None


def _raphtory(python: str | None, path: Path, at: float, source: int, trials: int) -> dict:
    if not python or not Path(python).exists():
        return {"available": False, "note": f"no Python with Raphtory at {python!r}"}
    done = subprocess.run(
        [python, str(RAPHTORY_SIDE), str(path), "--at", str(at), "--source", str(source),
         "--trials", str(trials)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        return {"available": False, "note": done.stderr.strip().splitlines()[-1:]}
    return {"available": True, **json.loads(done.stdout.strip().splitlines()[-1])}


def _snapshot(edges: pa.Table, parts: int, at: float) -> Snapshot:
    """``edges`` (with the default vertex class's columns) as a time-cut snapshot in the
    object store, split over ``parts`` shard parts by the shards' hash of the source."""
    ids = pa.concat_arrays([edges["src"].combine_chunks(), edges["dst"].combine_chunks()])
    ids = np.unique(ids.to_numpy())
    owner = partitions_of(edges["src"], parts)
    vertex_owner = partitions_of(ids, parts)
    vertex_refs, edge_refs, sizes = [], [], []
    for part in range(parts):
        mine = ids[vertex_owner == part]
        vertex_refs.append(ray.put(pa.table({"id": mine, "type": ["TemporalVertex"] * len(mine),
                                             "clock": np.ones(len(mine), np.int64),
                                             "time": np.zeros(len(mine))})))  # fmt: skip
        part_edges = edges.filter(pa.array(owner == part))
        edge_refs.append(ray.put(part_edges))
        sizes.append((len(mine), part_edges.num_rows))
    meta = SnapshotMeta(
        "time", at=at, vertices=len(ids), edges=edges.num_rows,
        part_vertices=[v for v, _ in sizes], part_edges=[e for _, e in sizes],
    )  # fmt: skip
    return Snapshot(vertex_refs, edge_refs, meta)


def _skewed_edges(events: int) -> tuple[pa.Table, Path, float]:
    """The skewed stream's distinct pairs (count, first and last time) and its SNAP file."""
    stream = skewed_stream(events)
    path = Path(tempfile.mkdtemp(prefix="chronoray-skewed-")) / "skewed.txt"
    write_snap(path, stream)
    arr = np.array(stream, dtype=np.int64)
    table = pa.table({"src": arr[:, 0], "dst": arr[:, 1], "ts": arr[:, 2].astype(np.float64)})
    edges = table.group_by(["src", "dst"]).aggregate(
        [("ts", "count"), ("ts", "min"), ("ts", "max")]
    )
    edges = edges.rename_columns(["src", "dst", "count", "first_ts", "last_ts"])
    return edges, path, float(arr[-1, 2])


def _college(args: Any, workdir: Path) -> dict[str, Any]:
    path = collegemsg_path()
    if args.limit_lines is not None:  # a shorter file (the smoke test's)
        lines = path.read_text().splitlines(keepends=True)[: args.limit_lines]
        path = workdir / "collegemsg.txt"
        path.write_text("".join(lines))
    with cr.GraphCluster(num_shards=2, log_dir=str(workdir / "college")) as g:
        g.ingest(cr.SnapEdgeSource(path))
        snap = g.snapshot(at=args.at)
        nx_seconds, nx_ranks = timed_median(
            args.trials, lambda: nx.pagerank(_nx_from_lines(path, args.at), tol=TOL)
        )
        graph = _nx_from_lines(path, args.at)
        algo_seconds, _ = timed_median(args.trials, lambda: nx.pagerank(graph, tol=TOL))
        reference = nx.pagerank(graph, tol=1e-13, max_iter=1000)
        kernel_seconds, kernel = timed_median(args.trials, lambda: pagerank(snap))
        pregel_rows = _pregel_rows(args, snap, reference)
        spark = _spark_college(args, snap, reference) if args.spark else None
        profile = profile_top(lambda: pagerank(snap))
    raph = _raphtory(args.raphtory_python, path, args.at, 9, args.trials)
    if raph.get("available"):
        got = {int(k): v for k, v in raph.pop("ranks").items()}
        raph["max_error"] = _max_error(got, reference)
    return {
        "at": args.at,
        "vertices": snap.meta.vertices,
        "edges": snap.meta.edges,
        "networkx_build_and_pagerank_seconds": nx_seconds,
        "networkx_pagerank_seconds": algo_seconds,
        "networkx_max_error": _max_error(nx_ranks, reference),
        "kernel_seconds": kernel_seconds,
        "kernel_iterations": kernel.info["iterations"],
        "kernel_max_error": _max_error(kernel.to_dict("rank"), reference),
        "kernel_engine_reason": kernel.info["engine_reason"],
        "kernel_profile": profile,
        "pregel": pregel_rows,
        "raphtory": raph,
        "spark": spark,
    }


def _pregel_rows(args: Any, snap: Snapshot, reference: dict) -> list[dict[str, Any]]:
    rows = []
    for form, make in (("arrays", pagerank_arrays), ("vertex", pagerank_program)):
        program = make(0.85, TOL, 200)
        pregel(snap, program, num_partitions=2, executor="ray")  # starts the pooled actors
        seconds, result = timed_median(
            args.trials, lambda p=program: pregel(snap, p, num_partitions=2, executor="ray")
        )
        rows.append(
            {
                "form": form,
                "seconds": seconds,
                "setup_seconds": result.info["setup_seconds"],
                "supersteps": result.info["supersteps"],
                "max_error": _max_error(result.to_dict("rank"), reference),
            }
        )
    arrays = pagerank_arrays(0.85, TOL, 200)
    rows[0]["profile"] = profile_top(lambda: pregel(snap, arrays, num_partitions=2, executor="ray"))
    return rows


def _skewed(args: Any) -> dict[str, Any]:
    edges, path, last = _skewed_edges(args.skewed_events)
    snap = _snapshot(edges, 2, last)
    src, dst = edges["src"].to_pylist(), edges["dst"].to_pylist()
    hub = int(np.bincount(edges["src"].to_numpy()).argmax())

    def build() -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_edges_from(zip(src, dst, strict=True))
        return graph

    graph = build()
    out: dict[str, Any] = {
        "events": args.skewed_events, "vertices": snap.meta.vertices, "edges": snap.meta.edges,
        "bfs_source": hub,
    }  # fmt: skip
    out["networkx_build_seconds"], _ = timed_median(args.trials, build)
    for name, ours, theirs in (
        ("wcc", lambda: connected_components(snap),
         lambda: list(nx.weakly_connected_components(graph))),
        ("bfs", lambda: shortest_paths(snap, hub),
         lambda: nx.single_source_shortest_path_length(graph, hub)),
    ):  # fmt: skip
        out[f"{name}_kernel_seconds"], _ = timed_median(args.trials, ours)
        out[f"{name}_networkx_seconds"], _ = timed_median(args.trials, theirs)
    raph = _raphtory(args.raphtory_python, path, last, hub, args.trials)
    raph.pop("ranks", None)
    out["raphtory"] = raph
    shutil.rmtree(path.parent, ignore_errors=True)
    return out


def _spark_college(args: Any, snap: Snapshot, reference: dict) -> dict[str, Any]:
    from spark_bridge import PageRankRun, spark_session, to_pandas
    from spark_bridge import pagerank as spark_pagerank
    from spark_bridge.analyses.metrics import counting_jobs

    started = time.perf_counter()
    spark = spark_session()
    session_seconds = time.perf_counter() - started
    to_pandas(spark_pagerank(spark, snap, tol=TOL))  # warm-up: the JVM's first plans
    runs: list[PageRankRun] = []
    started = time.perf_counter()
    ranks, work = counting_jobs(
        spark, lambda: to_pandas(spark_pagerank(spark, snap, tol=TOL, run=runs))
    )
    seconds = time.perf_counter() - started
    got = dict(zip(ranks["vertex"], ranks["pagerank"], strict=True))
    iterations = runs[-1].iterations
    return {
        "form": "numpy blocks, the snapshot read by the task from the object store",
        "session_seconds": session_seconds,
        "seconds": seconds,
        "iterations": iterations,
        "seconds_per_iteration": seconds / iterations,
        "iterating_seconds_per_iteration": runs[-1].iterating_seconds / iterations,
        "partitions": runs[-1].partitions,
        "max_error": _max_error(got, reference),
        "spark_work": work.as_dict(),
    }


def _nx_iterations(src: np.ndarray, dst: np.ndarray) -> Callable[[], Any]:
    """networkx: build the graph, then exactly ``ITERATIONS`` power iterations (it raises
    when they do not converge; the ranks are not the point here, the time is)."""

    def run() -> None:
        graph = nx.DiGraph()
        graph.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
        try:
            nx.pagerank(graph, tol=0.0, max_iter=ITERATIONS)
        except nx.PowerIterationFailedConvergence:
            pass

    return run


def _engines(snap: Snapshot, spark: Any) -> dict[str, Callable[[], Any]]:
    """Every engine's PageRank of ``snap`` for exactly ``ITERATIONS`` iterations."""

    def kernel() -> Any:
        return pagerank_kernel(GraphIndex.of(snap), 0.85, 0.0, ITERATIONS)

    def ray_arrays() -> Any:
        program = pagerank_arrays(0.85, 0.0, ITERATIONS)
        return pregel(snap, program, num_partitions=2, executor="ray")

    engines = {"kernel": kernel, "ray pregel arrays (2)": ray_arrays}
    if spark is not None:
        from spark_bridge import pagerank as spark_pagerank

        engines["spark"] = lambda: spark_pagerank(spark, snap, tol=0.0, max_iter=ITERATIONS).count()
    return engines


def _crossover(args: Any, spark: Any) -> list[dict[str, Any]]:
    rows = []
    for size in args.sizes:
        snap = synthetic_snapshot(size, 2)
        edges = pa.concat_tables(ray.get(snap.edge_refs))
        src, dst = edges["src"].to_numpy(), edges["dst"].to_numpy()
        row: dict[str, Any] = {"edges": size, "vertices": snap.meta.vertices}
        row["networkx"], _ = timed_median(1, _nx_iterations(src, dst))
        for name, run in _engines(snap, spark).items():
            run()  # warm: pooled actors, the JVM's first plans
            row[name], _ = timed_median(1, run)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", type=float, default=1090000000.0, help="CollegeMsg cut.")
    parser.add_argument("--limit-lines", type=int, default=None, help="CollegeMsg's first N.")
    parser.add_argument("--skewed-events", type=int, default=600_000)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="Crossover edges.")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument(
        "--raphtory-python",
        default=None,
        help="A Python with Raphtory (default: the pinned one bench.envs makes).",
    )
    parser.add_argument("--spark", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--notes", type=Path, default=RESULTS / "analyses_notes.md")
    parser.add_argument("--pregel-json", type=Path, default=RESULTS / "pregel_ray.json")
    parser.add_argument("--spark-json", type=Path, default=RESULTS / "spark_pagerank.json")
    parser.add_argument(
        "--render", action="store_true", help="Only write the page from --out's JSON files."
    )
    args = parser.parse_args(argv)
    if args.raphtory_python is None and not args.render:
        found = _raphtory_env()
        args.raphtory_python = None if found is None else str(found)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.render:
        result = json.loads((args.out / "analyses.json").read_text())
        result.setdefault("date", _committed(args.out / "analyses.json"))
        _write_page(args, result)
        return result
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-analyses-"))
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(address="local", num_cpus=2, object_store_memory=512 * 1024 * 1024,
                 include_dashboard=False, log_to_driver=False)  # fmt: skip
    try:
        load = os.getloadavg()
        result: dict[str, Any] = {
            "benchmark": "analyses",
            "machine": machine(),
            "trials": args.trials,
            "date": _now(),
        }
        result["college"] = _college(args, workdir)
        result["skewed"] = _skewed(args)
        spark = None
        if args.spark:
            from spark_bridge import spark_session

            spark = spark_session()
        result["crossover"] = _crossover(args, spark)
        result["load_average"] = [load, os.getloadavg()]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if started_ray:
            from spark_bridge import stop_spark

            stop_spark()
            ray.shutdown()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "analyses.json").write_text(json.dumps(result, indent=2) + "\n")
    _write_page(args, result)
    return result


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _write_page(args: Any, result: dict[str, Any]) -> None:
    """``analyses.md`` (and the crossover PNG) from ``result`` and the other runs' files."""
    _plot(result["crossover"], args.out / "analyses_crossover.png")
    others = {"pregel": _focused(args.pregel_json), "spark": _focused(args.spark_json)}
    notes = args.notes.read_text() if args.notes.exists() else ""
    (args.out / "analyses.md").write_text(_markdown(result, others) + notes)


def _focused(path: Path) -> dict[str, Any] | None:
    """A focused run's JSON (``None`` if absent), with where and when it was written."""
    if not path.exists():
        return None
    got = json.loads(path.read_text())
    if isinstance(got, list):  # JSON lines folded into a list: the last "after" side
        got = [g for g in got if "before" not in str(g.get("label", ""))][-1]
    return {**got, "_file": path.name, "_date": got.get("date") or _committed(path)}


def _committed(path: Path) -> str:
    """When git last committed ``path`` (for results written before they kept a date)."""
    done = subprocess.run(
        ["git", "-C", str(path.parent), "log", "-1", "--format=%cd", "--date=format:%Y-%m-%d",
         "--", path.name],
        capture_output=True, text=True,
    )  # fmt: skip
    day = done.stdout.strip()
    return f"committed {day}" if day else "date not recorded"


def _loads(loads: list[list[float]]) -> str:
    """The 1-minute load averages of a run, first to last: ``"6.2-9.8"``."""
    ones = [load[0] for load in loads]
    return f"{min(ones):.1f}-{max(ones):.1f}" if ones else "?"


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    engines = [k for k in rows[0] if k not in ("edges", "vertices")]
    for engine in engines:
        ax.loglog([r["edges"] for r in rows], [r[engine] for r in rows], "o-", label=engine)
    ax.set(
        xlabel="edges (generated graph, 10 per vertex)",
        ylabel=f"seconds for {ITERATIONS} PageRank iterations",
        title="PageRank engines by graph size (whole wall time)",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pregel_target(
    focused: dict[str, Any] | None, arrays: dict[str, Any], c: dict[str, Any], this: str
) -> str:
    """The Pregel-on-Ray target row: from ``pregel_ray.json`` if there is one."""
    head = "| Pregel PageRank (array form) on Ray, 2 partitions, vs networkx | 11x | "
    if focused is None:
        ratio = arrays["seconds"] / c["networkx_pagerank_seconds"]
        return head + f"{ratio:.2f}x ({this}) | <= 2x |"
    ours, theirs = focused["arrays"]["seconds"], focused["networkx_pagerank_seconds"]
    from_file = focused.get("networkx_file_seconds")
    built = (
        ""
        if from_file is None
        else f"{ours / from_file:.2f}x of networkx building the graph from the file and "
        f"running pagerank ({from_file:.3f} s, the issue's own 11x baseline); "
    )
    return head + (
        f"{built}{ours / theirs:.2f}x of networkx's pagerank call alone "
        f"({ours:.3f} s vs {theirs:.3f} s; `bench/pregel_ray.py`, "
        f"`{focused['_file']}`, {focused.get('label', '')}, {focused['_date']}, load "
        f"{_loads(focused.get('load', []))}) | <= 2x |"
    )


def _spark_targets(
    focused: dict[str, Any] | None, spark: dict[str, Any] | None, big: dict[str, Any], this: str
) -> list[str]:
    """The two Spark target rows: from ``spark_pagerank.json`` if there is one."""
    college = (
        "| Spark PageRank, seconds per iteration, CollegeMsg at T (whole run / iterations "
        "alone) | 0.48 s | "
    )
    million = (
        f"| Spark PageRank, 1 M-edge generated graph, {ITERATIONS} iterations, vs networkx "
        "| (measure) | "
    )
    if focused is not None:
        run = (
            f"`bench/spark_pagerank.py`, `{focused['_file']}`, {focused['_date']}, load "
            f"{_loads(focused.get('load_average', []))}"
        )
        warm, b = focused["college"]["blocks_one_job"]["warm"], focused["big"]
        mine, theirs = b["blocks_one_job"]["warm"]["seconds"], b["networkx_seconds"]
        return [
            college + f"{warm['seconds_per_iteration']:.3f} s / "
            f"{warm['iterating_seconds_per_iteration']:.4f} s (warm; {run}) | <= 0.05 s |",
            million + f"{mine:.1f} s vs {theirs:.1f} s ({mine / theirs:.2f}x; {run}) | faster |",
        ]
    rows = []
    if spark:
        alone = spark.get("iterating_seconds_per_iteration")
        rows.append(
            college
            + f"{spark['seconds_per_iteration']:.3f} s / "
            + (f"{alone:.4f} s" if alone is not None else "n/a")
            + f" ({this}) | <= 0.05 s |"
        )
    if "spark" in big:
        rows.append(
            million + f"{big['spark']:.1f} s vs {big['networkx']:.1f} s "
            f"({big['spark'] / big['networkx']:.2f}x, {big['edges']:,} edges; {this}) | faster |"
        )
    return rows


def _markdown(r: dict[str, Any], others: dict[str, dict[str, Any] | None]) -> str:
    c, s = r["college"], r["skewed"]
    nx_build = c["networkx_build_and_pagerank_seconds"]
    raph, sraph = c["raphtory"], s["raphtory"]
    arrays = next(p for p in c["pregel"] if p["form"] == "arrays")
    vertex = next(p for p in c["pregel"] if p["form"] == "vertex")
    spark = c["spark"]
    loads = r.get("load_average", [])
    this = f"this run, load {_loads(loads)}"
    lines = [
        "# Analyses at speed (issue 25)",
        "",
        "<!-- Written by `python -m bench.analyses` (`--render`: from the JSON files); the "
        "hand-written sections at the end come from `bench/results/analyses_notes.md`. -->",
        "",
        f"{r['machine']['cpus']} CPUs, Python {r['machine']['python']}; this run: "
        f"{r.get('date', 'date not recorded')}, load average (1, 5, 15 min) at the start "
        + " and at the end ".join(str(tuple(round(x, 1) for x in load)) for load in loads)
        + f" (a shared machine: compare within a run). Median of {r['trials']} unless said. "
        "Each row of the targets says which run it comes from.",
        "",
        "## Targets",
        "",
        "| measure | issue: before | now (run) | target |",
        "|---|---:|---:|---:|",
        f"| PageRank on a snapshot (CollegeMsg at {c['at']:.0f}), vs networkx build + "
        f"pagerank | 17x | {c['kernel_seconds'] / nx_build:.2f}x ({this}) | <= 1x |",
        "| same, vs Raphtory view + pagerank | ~100x | "
        + (
            f"{c['kernel_seconds'] / raph['pagerank_seconds']:.2f}x ({this})"
            if raph["available"]
            else "n/a"
        )
        + " | <= 3x |",
        f"| WCC on the skewed {s['events'] // 1000} k stream's snapshot, vs networkx | "
        f"(measure) | {s['wcc_kernel_seconds'] / s['wcc_networkx_seconds']:.2f}x ({this}) "
        "| <= 1x |",
        f"| BFS on it, vs networkx | (measure) | "
        f"{s['bfs_kernel_seconds'] / s['bfs_networkx_seconds']:.2f}x ({this}) | <= 1x |",
        _pregel_target(others["pregel"], arrays, c, this),
        *_spark_targets(others["spark"], spark, r["crossover"][-1], this),
    ]
    lines += [
        "",
        f"## PageRank, CollegeMsg at {c['at']:.0f} ({c['vertices']:,} vertices, "
        f"{c['edges']:,} edges), tol {TOL:g}",
        "",
        "| engine | seconds | iterations | max abs diff vs networkx (tol 1e-13) |",
        "|---|---:|---:|---:|",
        f"| networkx: build from the file + pagerank | {fmt(nx_build)} | | "
        f"{fmt(c['networkx_max_error'])} |",
        f"| networkx: pagerank only | {fmt(c['networkx_pagerank_seconds'])} | | |",
        f"| `cr.algorithms.pagerank(snap)` (kernel, tables from the object store) | "
        f"{fmt(c['kernel_seconds'])} | {c['kernel_iterations']} | {fmt(c['kernel_max_error'])} |",
        f"| Pregel on Ray, 2 partitions, array form | {fmt(arrays['seconds'])} | "
        f"{arrays['supersteps']} | {fmt(arrays['max_error'])} |",
        f"| Pregel on Ray, 2 partitions, per-vertex form | {fmt(vertex['seconds'])} | "
        f"{vertex['supersteps']} | {fmt(vertex['max_error'])} |",
    ]
    if raph["available"]:
        lines.append(
            f"| Raphtory {raph['version']}: `before(T+1)` + pagerank (max_diff 1e-10) | "
            f"{fmt(raph['pagerank_seconds'])} | | {fmt(raph['max_error'])} |"
        )
    else:
        lines.append(f"| Raphtory | *{raph['note']}* | | |")
    if spark:
        w = spark["spark_work"]
        lines += [
            f"| Spark (RayDP), {spark['partitions']} partition(s), "
            f"{spark.get('form', 'form not recorded')} | "
            f"{fmt(spark['seconds'])} | {spark['iterations']} | {fmt(spark['max_error'])} |",
            "",
            f"Spark, where the {spark['seconds']:.2f} s of one run went (its status tracker): "
            f"{w['jobs']} jobs, {w['stages']} stages, {w['tasks']} tasks for "
            f"{spark['iterations']} iterations, i.e. {w['jobs'] / spark['iterations']:.2f} "
            f"jobs and {w['tasks'] / spark['iterations']:.1f} tasks per iteration, "
            f"{spark['seconds'] / max(w['jobs'], 1) * 1000:.0f} ms per job (the snapshot's "
            "hand-over to Spark and the result's way back included). Session start "
            f"{spark['session_seconds']:.1f} s (not included).",
        ]
    lines += [
        "",
        f"Choice: {c['kernel_engine_reason']}.",
        "",
        f"## WCC and BFS, skewed stream ({s['events']:,} events: {s['vertices']:,} vertices, "
        f"{s['edges']:,} distinct edges; BFS from the hub {s['bfs_source']})",
        "",
        "| algorithm | kernel | networkx (graph built) | networkx build | Raphtory |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in ("wcc", "bfs"):
        theirs = fmt(sraph.get(f"{name}_seconds")) if sraph.get("available") else "n/a"
        lines.append(
            f"| {name} | {fmt(s[f'{name}_kernel_seconds'])} | "
            f"{fmt(s[f'{name}_networkx_seconds'])} | {fmt(s['networkx_build_seconds'])} | "
            f"{theirs} |"
        )
    engines = [k for k in r["crossover"][0] if k not in ("edges", "vertices")]
    lines += [
        "",
        f"## Crossover: {ITERATIONS} PageRank iterations on generated graphs "
        "(`analyses_crossover.png`)",
        "",
        "Whole wall time a user waits for, one run each after a warm-up: the kernel "
        "includes fetching the tables and indexing them, Ray includes loading the "
        "partitions into the pooled actors, Spark the hand-over of the snapshot, "
        "networkx building its graph.",
        "",
        "| edges | vertices | " + " | ".join(engines) + " |",
        "|---:|---:|" + "---:|" * len(engines),
    ]
    for row in r["crossover"]:
        lines.append(
            f"| {row['edges']:,} | {row['vertices']:,} | "
            + " | ".join(fmt(row[e]) for e in engines)
            + " |"
        )
    lines += [
        "",
        "## Profiles",
        "",
        "`cr.algorithms.pagerank(snap)` on the CollegeMsg cut:",
        "",
        "```",
        c["kernel_profile"],
        "```",
        "",
        "Pregel PageRank, array form, on Ray (the driver's side: it waits for the actors):",
        "",
        "```",
        arrays["profile"],
        "```",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
