"""Spark ingestion benchmark: rows/s into the graph from a Parquet table through Spark
versus the file source on the same data, in one run.

The data: CollegeMsg repeated, each copy shifted after the previous one in time, cut at
``--rows`` rows (default 1,000,000), written once as a SNAP edge file and once as a
Parquet file (``src``, ``dst``, ``time``, int64). Each trial ingests both, each into a new
graph of ``--shards`` shard actors on this process's local Ray, interleaved so a slow spell
of the shared machine hits both:

* **file**: ``GraphCluster.ingest(SnapEdgeSource(path))``, one source actor parsing the
  file line by line;
* **spark**: ``GraphCluster.ingest_spark(spark.read.parquet(path), ...)``: Spark (one
  executor, RayDP) checks, parts and orders the rows and hands them to Ray as Arrow
  blocks; one source actor per part feeds them. Its seconds include Spark's part (also
  given alone), not the session's start and warm-up (a first small ingest; paid once per
  process, given apart).

Rates are rows over the driver's wall time from the call to the graph being idle; the
median of ``--trials`` is kept, and both graphs are checked equal (per-pair counts).
Writes ``spark_ingest.json`` and ``.md`` under ``--out`` (default ``bench/results``).

    python -m bench.spark_ingest
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.report import machine, median_run, write_results
from bench.workloads import write_snap

__all__ = ["main"]

RESULTS = Path(__file__).parent / "results"


def _data(workdir: Path, rows: int) -> tuple[Path, Path]:
    """CollegeMsg copies shifted in time, cut at ``rows``: a SNAP file and a Parquet file."""
    from chronoray.datasets import collegemsg_path

    lines = collegemsg_path().read_text().split()
    edges = [tuple(int(x) for x in lines[i : i + 3]) for i in range(0, len(lines), 3)]
    t0, t1 = edges[0][2], edges[-1][2]
    stream = [
        (s, d, t + k * (t1 - t0 + 1)) for k in range(rows // len(edges) + 1) for s, d, t in edges
    ][:rows]
    snap, parquet = workdir / "edges.txt", workdir / "edges.parquet"
    write_snap(snap, stream)
    columns = zip(*stream, strict=True)
    pq.write_table(
        pa.table(dict(zip(("src", "dst", "time"), map(list, columns), strict=True))), parquet
    )
    return snap, parquet


def _ingest(
    mode: str, snap: Path, parquet: Path, logs: Path, shards: int, limit: int | None = None
) -> tuple[dict[str, Any], dict[tuple[int, int], int]]:
    """One ingest of the data by ``mode`` (the first ``limit`` rows, for ``spark``): its
    figures, and the graph's per-pair counts."""
    import chronoray as cr

    with cr.GraphCluster(num_shards=shards, log_dir=str(logs)) as graph:
        started = time.perf_counter()
        if mode == "file":
            report = graph.ingest(cr.SnapEdgeSource(snap))
            spark_s = 0.0
        else:
            frame = graph.spark().read.parquet(str(parquet))
            frame = frame if limit is None else frame.limit(limit)
            report = graph.ingest_spark(frame, src="src", dst="dst", time="time", source="bench")
            spark_s = report.spark_seconds
        seconds = time.perf_counter() - started
        counts = {(s, d): p["count"] for s, d, p in graph.edges()}
    run = {
        "rows": report.updates,
        "seconds": seconds,
        "rate": report.updates / seconds,
        "spark_seconds": spark_s,
        "feed_rate": report.updates / (seconds - spark_s),
    }
    return run, counts


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="Rows of the table.")
    parser.add_argument("--trials", type=int, default=3, help="Runs per path; median kept.")
    parser.add_argument("--shards", type=int, default=2, help="Shard actors per graph.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.trials < 1:
        parser.error("--rows and --trials must be >= 1")
    from bench.spark import spark_ray
    from chronoray.connect import driver_log_path
    from spark_bridge import spark_session

    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-spark-ingest-"))
    trials: dict[str, list[dict[str, Any]]] = {"file": [], "spark": []}
    expected: dict[tuple[int, int], int] | None = None
    try:
        snap, parquet = _data(workdir, args.rows)
        with spark_ray():
            begun = time.perf_counter()
            spark_session(log_file=driver_log_path())
            # the first use of a session starts Spark's Python workers and JIT-compiles: a
            # small ingest first, so every trial sees the same warm session
            _ingest("spark", snap, parquet, workdir / "warm-up", args.shards, limit=1000)
            session_s = time.perf_counter() - begun
            for trial in range(args.trials):
                for mode in trials:
                    logs = workdir / f"{mode}-{trial}"
                    run, counts = _ingest(mode, snap, parquet, logs, args.shards)
                    expected = counts if expected is None else expected
                    if counts != expected:
                        raise AssertionError(f"{mode} (trial {trial}) built another graph")
                    trials[mode].append(run)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    runs = {mode: median_run(results) for mode, results in trials.items()}
    result = {
        "benchmark": "spark_ingest",
        "machine": machine(),
        "rows": args.rows,
        "shards": args.shards,
        "trials": args.trials,
        "session_start_seconds": session_s,
        "runs": runs,
        "spark / file": runs["spark"]["rate"] / runs["file"]["rate"],
    }
    write_results(args.out, "spark_ingest", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    file, spark = result["runs"]["file"], result["runs"]["spark"]
    return "\n".join(
        [
            f"# Ingestion from Spark: {result['rows']:,} rows, {result['shards']} shards",
            "",
            f"{result['machine']['cpus']} CPUs, Python {result['machine']['python']}; median "
            f"of {result['trials']} interleaved trials; one Spark executor (1 core); session "
            f"start and warm-up {result['session_start_seconds']:.1f} s (once per process, not "
            "counted). "
            "Seconds are the driver's, from the call to the graph being idle.",
            "",
            "| path | seconds | rows/s | Spark seconds | rows/s after Spark | trials (rows/s) |",
            "|---|---:|---:|---:|---:|---|",
            _row("file source (SNAP text, one source actor)", file),
            _row(f"Spark (Parquet -> Arrow blocks, {result['shards']} source actors)", spark),
            "",
            f"**Spark / file: {result['spark / file']:.2f}x** rows/s.",
            "",
        ]
    )


def _row(name: str, run: dict[str, Any]) -> str:
    trials = ", ".join(f"{r:,}" for r in run["trial_rates"])
    return (
        f"| {name} | {run['seconds']:.1f} | {run['rate']:,.0f} | {run['spark_seconds']:.1f} | "
        f"{run['feed_rate']:,.0f} | {trials} |"
    )


if __name__ == "__main__":
    main()
