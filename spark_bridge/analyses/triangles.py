"""Triangles of the undirected simple graph with Spark DataFrame operations."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_bridge.analyses._graph import graph_frames

__all__ = ["triangles", "triangle_count"]


def triangles(spark: Any, graph: Any) -> DataFrame:
    """Triangles through every vertex of the undirected simple graph (directions and
    self-loops dropped, each pair once): a DataFrame ``(vertex, triangles)``, as
    ``networkx.triangles`` counts them.

    Each triangle ``a < b < c`` is found once, by joining the edge ``(a, b)`` with the edges
    ``(b, c)`` and keeping the pairs closed by an edge ``(a, c)``.

    Examples
    --------
    >>> e = spark.createDataFrame([(1, 2), (2, 3), (3, 1), (1, 3), (3, 4)], ["src", "dst"])
    >>> v = spark.createDataFrame([(1,), (2,), (3,), (4,)], ["id"])
    >>> [tuple(r) for r in triangles(spark, (v, e)).orderBy("vertex").collect()]
    [(1, 1), (2, 1), (3, 1), (4, 0)]
    >>> triangle_count(spark, (v, e))
    1
    """
    vertices, edges = graph_frames(spark, graph)
    found = _triangles(edges)
    corners = found.select(F.explode(F.array("a", "b", "c")).alias("vertex"))
    per_vertex = corners.groupBy("vertex").agg(F.count("*").alias("triangles"))
    return vertices.join(per_vertex, "vertex", "left").select(
        "vertex", F.coalesce("triangles", F.lit(0)).cast("long").alias("triangles")
    )


def triangle_count(spark: Any, graph: Any) -> int:
    """The number of triangles of the undirected simple graph
    (``sum(networkx.triangles(G).values()) // 3``)."""
    _, edges = graph_frames(spark, graph)
    return int(_triangles(edges).count())


def _triangles(edges: DataFrame) -> DataFrame:
    simple = (
        edges.where(F.col("src") != F.col("dst"))
        .select(F.least("src", "dst").alias("u"), F.greatest("src", "dst").alias("v"))
        .distinct()
    )
    ab = simple.select(F.col("u").alias("a"), F.col("v").alias("b"))
    bc = simple.select(F.col("u").alias("b"), F.col("v").alias("c"))
    ac = simple.select(F.col("u").alias("a"), F.col("v").alias("c"))
    return ab.join(bc, "b").join(ac, ["a", "c"]).select("a", "b", "c")
