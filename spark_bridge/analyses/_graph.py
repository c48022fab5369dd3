"""What every analysis starts from: a snapshot's vertex ids and its distinct (src, dst) pairs
as Spark DataFrames."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["graph_frames"]


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
