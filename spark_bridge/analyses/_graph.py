"""What every analysis starts from: a snapshot's vertex ids and its distinct (src, dst) pairs
as Spark DataFrames; and how iterative analyses size their partitions and joins from the
data."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = [
    "BROADCAST_MAX_ROWS",
    "ROWS_PER_PARTITION",
    "edge_rows",
    "graph_frames",
    "partitions_for",
    "small",
]

ROWS_PER_PARTITION = 1_000_000
"""Rows of a cached graph table per partition: a task's work must outweigh its ~10 ms of
scheduling, and one partition per core is the most that runs at once."""

BROADCAST_MAX_ROWS = 5_000_000
"""Up to this many vertices, a per-vertex table (ranks, labels) is broadcast to every
task instead of shuffled: ~16 bytes a row, well within an executor's memory."""


def edge_rows(graph: Any, edges: DataFrame) -> int:
    """Edge rows of ``graph``: a snapshot's metadata says it, a DataFrame is counted."""
    return int(edges.count()) if isinstance(graph, tuple) else int(graph.meta.edges)


def partitions_for(spark: Any, rows: int) -> int:
    """Partitions for a cached table of ``rows`` rows: one per ``ROWS_PER_PARTITION``
    rows, at least 1, at most the cores of the executors (``defaultParallelism``)."""
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    return max(1, min(cores, -(-rows // ROWS_PER_PARTITION)))


def small(frame: DataFrame, rows: int) -> DataFrame:
    """``frame`` marked for a broadcast join when it has at most ``BROADCAST_MAX_ROWS``."""
    return F.broadcast(frame) if rows <= BROADCAST_MAX_ROWS else frame


def graph_frames(spark: Any, graph: Any) -> tuple[DataFrame, DataFrame]:
    """``(vertices, edges)``: ``vertices`` has one column ``vertex`` (every vertex of the
    snapshot and every edge endpoint), ``edges`` the snapshot's edge table.

    ``graph`` is a :class:`~snapshot.Snapshot` or a pair of Spark DataFrames
    ``(vertices with an id column, edges with src and dst)``.
    """
    if isinstance(graph, tuple):
        vertex_frame, edges = graph
    else:
        from spark_bridge.convert import snapshot_to_spark

        vertex_frame, edges = snapshot_to_spark(spark, graph)
    # in a time cut a target can be logged just after the edge that names it (DESIGN §3):
    # the edge endpoints belong to the graph either way, as in networkx
    vertices = (
        vertex_frame.select(F.col("id").alias("vertex"))
        .union(edges.select(F.col("src").alias("vertex")))
        .union(edges.select(F.col("dst").alias("vertex")))
        .distinct()
    )
    return vertices, edges
