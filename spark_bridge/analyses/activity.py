"""Activity per time bucket, from a series of snapshots, with Spark DataFrame operations."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_bridge.analyses._graph import graph_frames

__all__ = ["activity"]


def activity(spark: Any, snapshots: Sequence[Any]) -> DataFrame:
    """What happened in each time bucket ``(t[i-1], t[i]]`` of a series of time cuts.

    ``snapshots`` are time cuts in increasing time order: :class:`~snapshot.Snapshot`\\ s
    taken with ``at=`` (e.g. the bucket edges of a window, see ``GraphCluster.analyze``),
    or ``(t, (vertices, edges))`` pairs of DataFrames. Edges need the default vertex class's
    ``count`` (occurrences of the pair) and ``last_ts`` (its latest time) columns.

    Returns a DataFrame sorted by ``time``, one row per snapshot: ``time``, totals at that
    time (``vertices``, ``edges`` = distinct pairs, ``messages`` = edge occurrences), and for
    the bucket ending there (the first bucket holds everything up to its time):
    ``new_vertices``, ``new_edges``, ``bucket_messages`` (occurrences inside the bucket),
    ``active_edges`` (pairs with an occurrence inside it) and ``active_vertices`` (their
    endpoints).

    Examples
    --------
    >>> v = spark.createDataFrame([(1,), (2,)], ["id"])
    >>> e1 = spark.createDataFrame([(1, 2, 1, 10.0)], ["src", "dst", "count", "last_ts"])
    >>> e2 = spark.createDataFrame(
    ...     [(1, 2, 3, 25.0), (2, 3, 1, 30.0)], ["src", "dst", "count", "last_ts"])
    >>> rows = activity(spark, [(10.0, (v, e1)), (30.0, (v, e2))]).collect()
    >>> [(r.time, r.new_edges, r.bucket_messages, r.active_edges, r.active_vertices)
    ...  for r in rows]
    [(10.0, 1, 1, 1, 2), (30.0, 1, 3, 2, 3)]
    """
    cuts = [_cut(spark, item) for item in snapshots]
    times = [t for t, _, _ in cuts]
    if times != sorted(times) or len(set(times)) != len(times):
        raise ValueError(f"snapshots must be time cuts in increasing time order, got {times}")
    vertex_rows, edge_rows = [], []
    for index, (t, vertices, edges) in enumerate(cuts):
        previous = times[index - 1] if index else float("-inf")
        vertex_rows.append(vertices.select(F.lit(t).alias("time"), "vertex"))
        edge_rows.append(
            edges.select(
                F.lit(t).alias("time"),
                "src",
                "dst",
                F.col("count").cast("long").alias("count"),
                (F.col("last_ts") > F.lit(previous)).alias("active"),
            )
        )
    all_edges = reduce(DataFrame.union, edge_rows)
    totals = all_edges.groupBy("time").agg(
        F.count("*").alias("edges"),
        F.sum("count").alias("messages"),
        F.sum(F.col("active").cast("long")).alias("active_edges"),
    )
    active_vertices = (
        all_edges.where("active")
        .select("time", F.explode(F.array("src", "dst")).alias("vertex"))
        .groupBy("time")
        .agg(F.countDistinct("vertex").alias("active_vertices"))
    )
    vertex_totals = (
        reduce(DataFrame.union, vertex_rows).groupBy("time").agg(F.count("*").alias("vertices"))
    )
    series = Window.orderBy("time")
    return (
        vertex_totals.join(totals, "time", "left")
        .join(active_vertices, "time", "left")
        .fillna(0, ["edges", "messages", "active_edges", "active_vertices"])
        .select(
            "time",
            "vertices",
            "edges",
            "messages",
            (F.col("vertices") - F.lag("vertices", 1, 0).over(series)).alias("new_vertices"),
            (F.col("edges") - F.lag("edges", 1, 0).over(series)).alias("new_edges"),
            (F.col("messages") - F.lag("messages", 1, 0).over(series)).alias("bucket_messages"),
            "active_edges",
            "active_vertices",
        )
        .orderBy("time")
    )


def _cut(spark: Any, item: Any) -> tuple[float, DataFrame, DataFrame]:
    if isinstance(item, tuple):
        t, frames = item
    else:
        if item.meta.kind != "time":
            raise ValueError(f"activity needs time cuts (snapshot(at=T)), got {item!r}")
        t, frames = item.meta.at, item
    vertices, edges = graph_frames(spark, frames)
    missing = {"count", "last_ts"} - set(edges.columns)
    if missing and edges.limit(1).count():
        raise ValueError(f"edges at {t} lack column(s) {sorted(missing)} (TemporalVertex has them)")
    for name in missing:  # a cut before the first edge: no property columns at all
        edges = edges.withColumn(name, F.lit(None).cast("double"))
    return float(t), vertices, edges
