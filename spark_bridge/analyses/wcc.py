"""Weakly connected components with Spark DataFrame operations."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_bridge.analyses._graph import graph_frames

__all__ = ["weakly_connected_components"]


def weakly_connected_components(
    spark: Any, graph: Any, *, max_iter: int = 1000, check_every: int = 4
) -> DataFrame:
    """The weakly connected component of every vertex: a DataFrame ``(vertex, component)``.

    ``component`` is the smallest vertex id of the component, so two runs (or two
    engines) label the same components the same way. Edge directions are ignored; a vertex
    without edges is a component of its own.

    Min-label propagation: every vertex takes the smallest label among itself and its
    neighbours until no label changes, so it needs about as many iterations as the
    longest shortest path; ``check_every`` iterations are planned into one Spark job
    between checks. Raises ``RuntimeError`` if labels still change after ``max_iter``.

    Examples
    --------
    >>> v = spark.createDataFrame([(1,), (2,), (3,), (4,), (5,)], ["id"])
    >>> e = spark.createDataFrame([(2, 1), (3, 4)], ["src", "dst"])
    >>> rows = weakly_connected_components(spark, (v, e)).orderBy("vertex").collect()
    >>> [(r.vertex, r.component) for r in rows]
    [(1, 1), (2, 1), (3, 3), (4, 3), (5, 5)]
    """
    vertices, edges = graph_frames(spark, graph)
    # who hears whom: both directions of every edge, and every vertex itself, so one join
    # per iteration reads the labels once (a second reference doubles Spark's plan)
    links = (
        edges.select(F.col("src").alias("a"), F.col("dst").alias("b"))
        .union(edges.select(F.col("dst").alias("a"), F.col("src").alias("b")))
        .union(vertices.select(F.col("vertex").alias("a"), F.col("vertex").alias("b")))
        .distinct()
        .localCheckpoint()
    )
    labels = vertices.select("vertex", F.col("vertex").alias("component")).localCheckpoint()
    done = 0
    while True:
        block = min(check_every, max_iter - done)
        if block <= 0:
            raise RuntimeError(f"components still changing after {max_iter} iterations")
        previous = labels
        for _ in range(block):
            labels = _step(labels, links)
        labels = labels.localCheckpoint()
        done += block
        changed = (
            labels.join(previous.withColumnRenamed("component", "before"), "vertex")
            .where(F.col("component") != F.col("before"))
            .limit(1)
            .count()
        )
        if not changed:
            return labels


def _step(labels: DataFrame, links: DataFrame) -> DataFrame:
    return (
        links.join(labels.withColumnRenamed("vertex", "a"), "a")
        .groupBy(F.col("b").alias("vertex"))
        .agg(F.min("component").alias("component"))
    )
