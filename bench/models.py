"""Processing-model benchmark: PageRank on one snapshot with every model, in one run.

Ingests a data set (CollegeMsg by default) into a 2-shard ``GraphCluster`` on a local Ray
instance, takes the snapshot at the end and one at ``--shift-at`` of the lines, and
measures, each ``--trials`` times (median reported):

1. **networkx**: ``nx.pagerank(tol=1e-12)`` on the snapshot's DiGraph of distinct pairs
   (building the graph from the Arrow tables is reported apart);
2. **Pregel** and **scatter/gather** PageRank to ``tol=1e-10``, in this process
   (``local``, 1 partition) and on Ray with each of ``--partitions`` (one actor per
   partition; actors are pooled, so the first Ray run with a partition count also pays
   actor start-up: it is reported in its own row, ``ray cold``). Each row gives run seconds,
   iterations, the largest difference from networkx, and the ratio to networkx;
3. **pause/shift/resume**: Pregel PageRank on each earlier snapshot (``--shift-at``,
   fractions of the lines) for ``--pause`` supersteps (and, again, until it converged
   there), shift to the final snapshot, resume to convergence; supersteps and seconds
   versus a fresh run on the final one;
4. **Spark**: the same PageRank with ``spark_bridge.pagerank`` (DataFrame operations on
   RayDP executors in the same Ray cluster; ``--no-spark`` skips it).

Writes ``models.json`` and ``models.md`` under ``--out`` (default ``bench/results``).

    python -m bench.models --partitions 1,4
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

import chronoray as cr
from bench.report import machine, write_results
from chronoray.datasets import bitcoinotc_path, collegemsg_path
from snapshot.algorithms import pagerank, pagerank_job, pagerank_shift
from snapshot.models.result import ModelResult

RESULTS = Path(__file__).parent / "results"
TOL = 1e-10


def _source(dataset: str, limit: int | None, workdir: Path) -> tuple[cr.Source, list[str]]:
    path = collegemsg_path() if dataset == "college" else bitcoinotc_path()
    lines = path.read_text().splitlines()
    if limit is not None:
        lines = lines[:limit]
    cut = workdir / path.name
    cut.write_text("\n".join(lines) + "\n")
    source = cr.SnapEdgeSource(cut) if dataset == "college" else cr.BitcoinCsvSource(cut)
    return source, lines


def _time_of(line: str, dataset: str) -> float:
    return float(line.split(",")[3] if dataset == "bitcoin" else line.split()[2])


def timed_median(trials: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """``(median seconds of trials runs, the last run's result)``."""
    seconds, last = [], None
    for _ in range(trials):
        started = time.perf_counter()
        last = run()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), last


def _error(result: ModelResult, expected: dict[Any, float]) -> float:
    ranks = result.to_dict("rank")
    assert ranks.keys() == expected.keys(), "the model saw other vertices than networkx"
    return max(abs(ranks[v] - expected[v]) for v in expected)


def _iterations(result: ModelResult) -> int:
    return int(result.info.get("supersteps", result.info.get("iterations", 0)))


def _spark_pagerank(
    snapshot: cr.Snapshot, expected: dict[Any, float], trials: int
) -> dict[str, Any]:
    """Spark's PageRank (``spark_bridge.pagerank``, DataFrame ``vertex, pagerank``) on the
    same snapshot, through the RayDP session; the session start (~10 s) is reported apart."""
    from spark_bridge import pagerank, spark_session, to_pandas

    started = time.perf_counter()
    spark = spark_session()
    session_seconds = time.perf_counter() - started

    def run() -> Any:
        return to_pandas(pagerank(spark, snapshot, tol=TOL))

    seconds, ranks = timed_median(trials, run)
    got = dict(zip(ranks["vertex"], ranks["pagerank"], strict=True))
    return {
        "available": True,
        "seconds": seconds,
        "session_seconds": session_seconds,
        "max_error": max(abs(got[v] - expected[v]) for v in expected),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("college", "bitcoin"), default="college")
    parser.add_argument("--limit-lines", type=int, default=None, help="Only the first N lines.")
    parser.add_argument("--partitions", default="1,4", help="Ray partition counts, e.g. 1,4.")
    parser.add_argument(
        "--shift-at", default="0.9,0.99", help="Earlier snapshots, as fractions of the lines."
    )
    parser.add_argument("--pause", type=int, default=30, help="Supersteps before the shift.")
    parser.add_argument("--trials", type=int, default=3, help="Runs per measurement.")
    parser.add_argument(
        "--spark",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Also run Spark PageRank.",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    parts = [int(p) for p in args.partitions.split(",") if p.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-models-"))
    try:
        source, lines = _source(args.dataset, args.limit_lines, workdir)
        times = sorted(_time_of(line, args.dataset) for line in lines if line.strip())
        fractions = [float(f) for f in args.shift_at.split(",") if f.strip()]
        with cr.GraphCluster(num_shards=2, log_dir=str(workdir / "g")) as g:
            g.ingest(source)
            snap = g.snapshot()
            earlier = [(f, g.snapshot(at=times[int(len(times) * f) - 1])) for f in fractions]
            tables = (snap.vertices(), snap.edges())
            result = _measure(args, parts, snap, earlier, tables)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result.update(
        {
            "benchmark": "models",
            "dataset": args.dataset,
            "limit_lines": args.limit_lines,
            "trials": args.trials,
            "tol": TOL,
            "machine": machine(),
        }
    )
    write_results(args.out, "models", result, _markdown(result), show=False)
    return result


def _measure(
    args: Any, parts: list[int], snap: Any, earlier: list[tuple[float, Any]], tables: Any
) -> dict[str, Any]:
    build_started = time.perf_counter()
    graph = nx.DiGraph()
    graph.add_nodes_from(tables[0]["id"].to_pylist())
    graph.add_edges_from(
        zip(tables[1]["src"].to_pylist(), tables[1]["dst"].to_pylist(), strict=True)
    )
    graph.add_nodes_from(tables[1]["dst"].to_pylist())
    build = time.perf_counter() - build_started
    nx_seconds, expected = timed_median(
        args.trials, lambda: nx.pagerank(graph, tol=1e-12, max_iter=1000)
    )
    rows: list[dict[str, Any]] = [
        {"model": "networkx", "where": "driver", "partitions": 1, "seconds": nx_seconds,
         "iterations": None, "max_error": 0.0}
    ]  # fmt: skip
    warm: set[int] = set()  # partition counts whose pooled actors have started
    for model in ("pregel", "scatter_gather"):
        runs: list[tuple[str, Any, int]] = [("local", tables, 1)]
        runs += [("ray", snap, p) for p in parts]
        for where, data, p in runs:

            def run(data: Any = data, p: int = p, model: Any = model) -> ModelResult:
                return pagerank(data, model=model, tol=TOL, num_partitions=p)

            if where == "ray" and p not in warm:
                warm.add(p)
                cold, _ = timed_median(1, run)
                rows.append(
                    {
                        "model": model,
                        "where": "ray cold",
                        "partitions": p,
                        "seconds": cold,
                        "iterations": None,
                        "max_error": None,
                    }
                )
            seconds, res = timed_median(args.trials, run)
            rows.append(
                {
                    "model": model,
                    "where": where,
                    "partitions": p,
                    "seconds": seconds,
                    "iterations": _iterations(res),
                    "max_error": _error(res, expected),
                }
            )
    for row in rows:
        row["x networkx"] = row["seconds"] / nx_seconds
    p = max(parts)
    fresh_seconds, fresh = timed_median(
        args.trials, lambda: pagerank(snap, model="pregel", tol=TOL, num_partitions=p)
    )

    def shifted(earlier: Any, pause: int | None) -> tuple[ModelResult, float, float]:
        with pagerank_job(earlier, tol=TOL, num_partitions=p) as job:
            started = time.perf_counter()
            job.run(supersteps=pause)
            paused = time.perf_counter() - started
            job.shift(snap, pagerank_shift)
            resumed = job.run()
        return resumed, paused, time.perf_counter() - started - paused

    shift: dict[str, Any] = {
        "partitions": p,
        "final": {"vertices": snap.meta.vertices, "edges": snap.meta.edges},
        "fresh_supersteps": fresh.info["supersteps"],
        "fresh_seconds": fresh_seconds,
        "runs": [],
    }
    for fraction, before_snap in earlier:
        for pause in (args.pause, None):  # paused mid-way, and once converged on it
            _, (resumed, before, after) = timed_median(
                args.trials, lambda b=before_snap, pause=pause: shifted(b, pause)
            )
            shift["runs"].append(
                {
                    "earlier_at_fraction": fraction,
                    "earlier": {
                        "vertices": before_snap.meta.vertices,
                        "edges": before_snap.meta.edges,
                    },
                    "pause_after": pause if pause is not None else "converged",
                    "resumed_supersteps": resumed.info["supersteps"],
                    "before_pause_seconds": before,
                    "shift_and_resume_seconds": after,
                    "max_error": _error(resumed, expected),
                }
            )
    return {
        "snapshot": {"vertices": snap.meta.vertices, "edges": snap.meta.edges},
        "networkx_build_seconds": build,
        "pagerank": rows,
        "pause_shift_resume": shift,
        "spark": _spark_pagerank(snap, expected, args.trials)
        if args.spark
        else {"available": False, "note": "skipped (--no-spark)"},
    }


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: blank for ``None``, small floats in scientific notation."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2e}" if 0 < abs(value) < 1e-3 else f"{value:.{digits}f}"
    return str(value)


def _markdown(r: dict[str, Any]) -> str:
    s = r["snapshot"]
    out = [
        f"# Processing models: PageRank on a {r['dataset']} snapshot "
        f"({s['vertices']:,} vertices, {s['edges']:,} edges)",
        "",
        f"Median of {r['trials']} runs; models to tol {r['tol']:g} (largest change per "
        f"iteration), networkx `pagerank(tol=1e-12)`; {r['machine']['cpus']} CPUs, Python "
        f"{r['machine']['python']}. `ray cold` = the first run of that size, which also "
        "starts the pooled partition actors. Building the networkx graph from the Arrow "
        f"tables took {r['networkx_build_seconds']:.3f} s (not included).",
        "",
        "| model | where | partitions | seconds | x networkx | iterations "
        "| max abs diff vs networkx |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in r["pagerank"]:
        out.append(
            f"| {row['model']} | {row['where']} | {row['partitions']} | {fmt(row['seconds'])} "
            f"| {fmt(row['x networkx'], 1)} | {fmt(row['iterations'])} "
            f"| {fmt(row['max_error'])} |"
        )
    spark = r["spark"]
    if spark["available"]:
        out.append(
            f"| spark (RayDP) | ray | | {fmt(spark['seconds'])} "
            f"| {fmt(spark['seconds'] / r['pagerank'][0]['seconds'], 1)} | "
            f"| {fmt(spark['max_error'])} |"
        )
        out.append(f"\nSpark session start: {spark['session_seconds']:.1f} s (not included).")
    else:
        out.append(f"| spark | | | *{spark['note']}* | | | |")
    p = r["pause_shift_resume"]
    out += [
        "",
        f"## Pause/shift/resume (Pregel PageRank, {p['partitions']} partitions on Ray)",
        "",
        f"Final snapshot {p['final']['vertices']:,} vertices / {p['final']['edges']:,} edges. "
        "A job on an earlier snapshot (taken after a fraction of the lines) is paused, "
        "shifted to the final snapshot and resumed to convergence; supersteps and seconds "
        "count the run on the final snapshot only.",
        "",
        "| run on the final snapshot | earlier snapshot (vertices / edges) | paused after "
        "| supersteps | seconds | max abs diff vs networkx |",
        "|---|---|---|---:|---:|---:|",
        f"| fresh | | | {p['fresh_supersteps']} | {fmt(p['fresh_seconds'])} | |",
    ]
    for run in p["runs"]:
        e = run["earlier"]
        out.append(
            f"| resumed | {run['earlier_at_fraction']:.0%} of the lines ({e['vertices']:,} / "
            f"{e['edges']:,}) | {run['pause_after']} | {run['resumed_supersteps']} | "
            f"{fmt(run['shift_and_resume_seconds'])} | {fmt(run['max_error'])} |"
        )
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    main()
