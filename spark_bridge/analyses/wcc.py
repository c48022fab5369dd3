"""Weakly connected components with Spark DataFrame operations.

Costs as for :mod:`.pagerank`: the links (both directions of every edge, and every vertex
to itself) are partitioned by target and cached once; an iteration joins them with the
label table broadcast (while small) and takes the minimum by target, with no shuffle
planned; every ``check_every`` iterations the labels are checkpointed locally and the job
that materialises them also counts the labels that changed.
"""

from __future__ import annotations

from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_bridge.analyses._graph import edge_rows, graph_frames, partitions_for, small

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
    longest shortest path; ``check_every`` iterations run between checks. Raises
    ``RuntimeError`` if labels still change after ``max_iter``.

    Examples
    --------
    >>> v = spark.createDataFrame([(1,), (2,), (3,), (4,), (5,)], ["id"])
    >>> e = spark.createDataFrame([(2, 1), (3, 4)], ["src", "dst"])
    >>> rows = weakly_connected_components(spark, (v, e)).orderBy("vertex").collect()
    >>> [(r.vertex, r.component) for r in rows]
    [(1, 1), (2, 1), (3, 3), (4, 3), (5, 5)]
    """
    vertices, edges = graph_frames(spark, graph)
    vertices = vertices.localCheckpoint()
    n = vertices.count()
    # who hears whom: both directions of every edge, and every vertex itself (flagged own,
    # so the minimum by target also carries the vertex's previous label)
    links = (
        edges.select(F.col("src").alias("a"), F.col("dst").alias("b"))
        .union(edges.select(F.col("dst").alias("a"), F.col("src").alias("b")))
        .distinct()
        .select("a", "b", F.lit(False).alias("own"))
        .union(vertices.select(F.col("vertex").alias("a"), F.col("vertex").alias("b"), F.lit(True)))
    )
    parts = partitions_for(spark, n + 2 * edge_rows(graph, edges))
    links = links.repartition(parts, "b").persist(StorageLevel.MEMORY_AND_DISK)
    links.count()  # cached once, used by every iteration
    labels = vertices.select("vertex", F.col("vertex").alias("component"))
    done = 0
    try:
        while True:
            block = min(check_every, max_iter - done)
            if block <= 0:
                raise RuntimeError(f"components still changing after {max_iter} iterations")
            for _ in range(block):
                labels = _step(labels, links, n)
            labels = labels.localCheckpoint(eager=False)
            done += block
            changed = labels.where(F.col("component") != F.col("before")).count()
            if not changed:
                return labels.select("vertex", "component")
    finally:
        links.unpersist()


def _step(labels: DataFrame, links: DataFrame, n: int) -> DataFrame:
    heard = small(labels.select(F.col("vertex").alias("a"), "component"), n)
    return (
        links.join(heard, "a")
        .groupBy(F.col("b").alias("vertex"))
        .agg(
            F.min("component").alias("component"),
            F.max(F.when(F.col("own"), F.col("component"))).alias("before"),
        )
    )
