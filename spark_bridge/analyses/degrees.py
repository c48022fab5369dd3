"""In- and out-degrees and their distributions with Spark DataFrame operations."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_bridge.analyses._graph import graph_frames

__all__ = ["degrees", "degree_distribution"]


def degrees(spark: Any, graph: Any) -> DataFrame:
    """Every vertex's degrees in the graph of distinct ``(src, dst)`` pairs: a DataFrame
    ``(vertex, in_degree, out_degree)``; vertices without edges have 0 and 0.

    Examples
    --------
    >>> e = spark.createDataFrame([(1, 2), (1, 3), (2, 3)], ["src", "dst"])
    >>> v = spark.createDataFrame([(1,), (2,), (3,), (4,)], ["id"])
    >>> [tuple(r) for r in degrees(spark, (v, e)).orderBy("vertex").collect()]
    [(1, 0, 2), (2, 1, 1), (3, 2, 0), (4, 0, 0)]
    """
    vertices, edges = graph_frames(spark, graph)
    pairs = edges.select("src", "dst").distinct()
    out = pairs.groupBy(F.col("src").alias("vertex")).agg(F.count("*").alias("out_degree"))
    inc = pairs.groupBy(F.col("dst").alias("vertex")).agg(F.count("*").alias("in_degree"))
    return (
        vertices.join(inc, "vertex", "left")
        .join(out, "vertex", "left")
        .select(
            "vertex",
            F.coalesce("in_degree", F.lit(0)).cast("long").alias("in_degree"),
            F.coalesce("out_degree", F.lit(0)).cast("long").alias("out_degree"),
        )
    )


def degree_distribution(
    spark: Any, graph: Any = None, *, per_vertex: DataFrame | None = None
) -> DataFrame:
    """How many vertices have each degree: a DataFrame ``(degree, in_vertices,
    out_vertices)`` sorted by degree (0 where no vertex has that degree in that direction).

    ``per_vertex``: the :func:`degrees` of the graph if already computed (then ``graph`` is
    not needed).

    Examples
    --------
    >>> e = spark.createDataFrame([(1, 2), (1, 3), (2, 3)], ["src", "dst"])
    >>> v = spark.createDataFrame([(1,), (2,), (3,), (4,)], ["id"])
    >>> [tuple(r) for r in degree_distribution(spark, (v, e)).collect()]
    [(0, 2, 2), (1, 1, 1), (2, 1, 1)]
    """
    if per_vertex is None:
        per_vertex = degrees(spark, graph)
    inc = per_vertex.groupBy(F.col("in_degree").alias("degree")).agg(
        F.count("*").alias("in_vertices")
    )
    out = per_vertex.groupBy(F.col("out_degree").alias("degree")).agg(
        F.count("*").alias("out_vertices")
    )
    return (
        inc.join(out, "degree", "full")
        .select(
            "degree",
            F.coalesce("in_vertices", F.lit(0)).cast("long").alias("in_vertices"),
            F.coalesce("out_vertices", F.lit(0)).cast("long").alias("out_vertices"),
        )
        .orderBy("degree")
    )
