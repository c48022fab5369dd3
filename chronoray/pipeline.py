"""``chronoray pipeline``: Spark as the data pipeline into the graph and out of it.

One program, one Spark session (RayDP, its executors Ray actors in the graph's cluster),
and the rows never written to a file on the way -- only the result is:

1. Spark reads the Bitcoin OTC ratings (``SRC,DST,RATING,TIME``, who rated whom from -10
   to 10, when) and derives a column, the rating's sign;
2. the rows go into a graph (:meth:`GraphCluster.ingest_spark`: checked, parted and
   ordered in Spark, fed by source actors from the Ray object store) while a live PageRank
   runs on it;
3. a snapshot gives the graph as it was at time ``at``;
4. Spark analyses that snapshot -- per rated vertex, its raters, positive and negative
   ratings and mean rating up to ``at`` -- and writes the result as Parquet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from vertex.annotations import mark_module_api

__all__ = ["trust_at", "run_pipeline"]

AT = 1_400_000_000.0
"""The default cut: 13 May 2014, about two thirds into the ratings."""


def trust_at(spark: Any, snapshot: Any) -> Any:
    """Per rated vertex of ``snapshot`` (edges with ``rating`` and ``sign``), as a Spark
    DataFrame: ``vertex``, ``raters``, ``positive``, ``negative``, ``mean_rating``."""
    from pyspark.sql import functions as F

    from spark_bridge import snapshot_to_spark

    _, edges = snapshot_to_spark(spark, snapshot)  # from the object store, no file
    return edges.groupBy(F.col("dst").alias("vertex")).agg(
        F.count(F.lit(1)).alias("raters"),
        F.sum((F.col("sign") > 0).cast("int")).alias("positive"),
        F.sum((F.col("sign") < 0).cast("int")).alias("negative"),
        F.avg("rating").alias("mean_rating"),
    )


def run_pipeline(
    data: Path, out: Path, *, at: float = AT, shards: int = 2, console: Console | None = None
) -> dict[str, Any]:
    """Run the pipeline on the ratings CSV ``data``: graph logs under ``out/logs``, the
    result in ``out/trust.parquet``; prints what each step did and returns the figures."""
    from pyspark.sql import functions as F

    import chronoray as cr

    console = console or Console()
    out.mkdir(parents=True, exist_ok=True)
    with cr.GraphCluster(num_shards=shards, log_dir=str(out / "logs")) as g:
        spark = g.spark()  # the one session, in the graph's Ray cluster
        ratings = spark.read.csv(
            str(data), schema="src LONG, dst LONG, rating INT, time DOUBLE"
        ).withColumn("sign", F.signum("rating").cast("int"))  # 1. a column derived in Spark
        ranks = g.start_computation(cr.LivePageRank(tol=1e-6))  # 2. live while rows arrive
        report = g.ingest_spark(
            ratings,
            src="src",
            dst="dst",
            time="time",
            props=["rating", "sign"],
            source="bitcoin-otc",
            progress=console.is_terminal,
        )
        top = sorted(ranks.values().items(), key=lambda kv: -kv[1])[:3]
        ranks.stop()
        snapshot = g.snapshot(at=at)  # 3. the graph as it was at `at`
        trust = trust_at(spark, snapshot)  # 4. analysed in Spark...
        path = out / "trust.parquet"
        trust.orderBy("vertex").write.mode("overwrite").parquet(str(path))  # ...the one file
        most = trust.orderBy(F.desc("positive"), "vertex").limit(5).toPandas()
        rows = trust.count()
    _show(console, report, top, snapshot, most, path)
    return {
        "rows": report.rows,
        "rejected": report.rejected,
        "live_top": top,
        "at": at,
        "vertices_at": snapshot.meta.vertices,
        "edges_at": snapshot.meta.edges,
        "trust_rows": rows,
        "trust": str(path),
    }


def _show(
    console: Console, report: Any, top: list[Any], snapshot: Any, most: Any, path: Path
) -> None:
    console.print(
        f"1-2. Spark checked, parted and ordered {report.rows:,} ratings in "
        f"{report.spark_seconds:.1f} s; {len(report.parts)} source actors fed them in "
        f"{report.seconds - report.spark_seconds:.1f} s ({report.rejected} rejected)"
    )
    console.print("     live PageRank, top 3: " + ", ".join(f"{v} ({r:.4f})" for v, r in top))
    meta = snapshot.meta
    console.print(
        f"3.   the graph at {meta.at:.0f}: {meta.vertices:,} vertices, {meta.edges:,} edges"
    )
    table = Table(title="4. most positively rated by then (Spark)")
    for column in most.columns:
        table.add_column(str(column), justify="right")
    for row in most.itertuples(index=False):
        table.add_row(*(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)
    console.print(f"wrote {path}")


mark_module_api(globals())
