"""PageRank with Spark DataFrame operations.

The definition is networkx's default (``networkx.pagerank``): the directed graph of distinct
``(src, dst)`` pairs, each pair weight 1 (or the value of ``weight``), damping ``alpha``,
teleport uniform over all vertices, and the rank of a vertex without out-edges (dangling)
spread uniformly over all vertices.

What an iteration costs, and why: the transition table is built, partitioned by target and
cached **once**; an iteration joins it with the rank table **broadcast** to every task
(no shuffle of the graph) and sums by target, which needs no shuffle either since the
cached table is already partitioned by target. So an iteration is one small Spark job (the
broadcast of the previous ranks) over ``partitions_for`` partitions, sized from the data
(one for a CollegeMsg snapshot). Every ``check_every`` iterations the ranks are
checkpointed locally (the plan and lineage stop growing) and the convergence test rides on
the job that materialises them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_bridge.analyses._graph import (
    BROADCAST_MAX_ROWS,
    edge_rows,
    graph_frames,
    partitions_for,
    small,
)

__all__ = ["pagerank", "PageRankRun"]


@dataclass
class PageRankRun:
    """How a PageRank run ended, and what its partitions were."""

    iterations: int
    delta: float  # L1 change of the rank vector over the last iteration
    converged: bool
    partitions: int = 1
    broadcast: bool = True


def pagerank(
    spark: Any,
    graph: Any,
    *,
    alpha: float = 0.85,
    weight: str | None = None,
    tol: float = 1e-10,
    max_iter: int = 300,
    check_every: int = 10,
    run: list[PageRankRun] | None = None,
) -> DataFrame:
    """PageRank of every vertex: a DataFrame ``(vertex, pagerank)``, ranks summing to 1.

    Parameters
    ----------
    graph : Snapshot or (vertices, edges) Spark DataFrames
    alpha : damping factor.
    weight : edge column used as weight (out-weights normalised per source);
        ``None``: every distinct pair weighs 1.
    tol : stop once an iteration changes the rank vector by less than ``tol`` in L1 norm.
        The error is then at most ``tol * alpha / (1 - alpha)`` in L1 norm, so the default
        (1e-10) leaves every rank within 1e-9 of the fixed point.
    max_iter : give up after this many iterations (``run`` says whether it converged).
    check_every : iterations between convergence checks (each check materialises the
        ranks and cuts the lineage).
    run : if given, a :class:`PageRankRun` is appended to it.

    networkx iterates ``x' = alpha * (x P + dangling(x) / N) + (1 - alpha) / N``. Because
    the dangling mass goes where the teleport goes (uniformly), its fixed point is
    proportional to that of ``y' = alpha * y P + (1 - alpha) / N`` (dangling rows of ``P``
    left zero), which needs no global sum per iteration: this iterates ``y`` from ``1 / N``
    (one join of the transitions with the ranks, one sum by target) and returns
    ``y / sum(y)``. ``tol`` applies to the change of ``y / sum(y)``.

    Examples
    --------
    ``spark`` is a session (:func:`spark_bridge.spark_session`); a graph can also be given
    as two DataFrames:

    >>> v = spark.createDataFrame([(1,), (2,), (3,), (4,)], ["id"])
    >>> e = spark.createDataFrame([(1, 2), (2, 3), (3, 1), (1, 3)], ["src", "dst"])
    >>> ranks = pagerank(spark, (v, e), tol=1e-8).orderBy("vertex").collect()
    >>> [(r.vertex, round(r.pagerank, 4)) for r in ranks]
    [(1, 0.3693), (2, 0.2046), (3, 0.3785), (4, 0.0476)]
    """
    vertices, edges = graph_frames(spark, graph)
    w = F.lit(1.0) if weight is None else F.col(weight).cast("double")
    pairs = edges.select("src", "dst", w.alias("w"))
    out_weight = pairs.groupBy("src").agg(F.sum("w").alias("out_w"))
    vertices = vertices.localCheckpoint()
    n = vertices.count()
    if n == 0:
        return vertices.select("vertex", F.lit(0.0).alias("pagerank"))
    # every vertex also "sends" to itself with p = 0 (flagged own): each vertex gets a row
    # in the sum by target, which also carries its previous rank
    transitions = pairs.join(out_weight, "src").select(
        "src", "dst", (F.col("w") / F.col("out_w")).alias("p"), F.lit(False).alias("own")
    )
    transitions = transitions.union(vertices.select("vertex", "vertex", F.lit(0.0), F.lit(True)))
    parts = partitions_for(spark, n + edge_rows(graph, edges))
    transitions = transitions.repartition(parts, "dst").persist(StorageLevel.MEMORY_AND_DISK)
    transitions.count()  # cached once, used by every iteration
    teleport = (1.0 - alpha) / n
    ranks = vertices.select("vertex", F.lit(1.0 / n).alias("rank"))
    done, delta, total = 0, float("inf"), 1.0  # total: sum(y) at the last check
    try:
        while done < max_iter and delta >= tol:
            block = min(check_every, max_iter - done)
            for _ in range(block):
                ranks = _step(ranks, transitions, alpha, teleport, n)
            ranks = ranks.localCheckpoint(eager=False)  # the lineage stops here
            done += block
            change, total = ranks.agg(  # this job also materialises the checkpoint
                F.sum(F.abs(F.col("rank") - F.col("previous"))), F.sum("rank")
            ).first()
            delta = change / total
    finally:
        transitions.unpersist()
    if run is not None:
        run.append(PageRankRun(done, delta, delta < tol, parts, n <= BROADCAST_MAX_ROWS))
    return ranks.select("vertex", (F.col("rank") / total).alias("pagerank"))


def _step(
    ranks: DataFrame, transitions: DataFrame, alpha: float, teleport: float, n: int
) -> DataFrame:
    """One iteration of ``y' = alpha * y P + (1 - alpha) / N`` (dangling rows of ``P``
    zero), keeping each vertex's old rank as ``previous``. The ranks are broadcast (while
    small) and the transitions are partitioned by target, so no shuffle is planned."""
    sources = small(ranks.select(F.col("vertex").alias("src"), "rank"), n)
    return (
        transitions.join(sources, "src")
        .groupBy(F.col("dst").alias("vertex"))
        .agg(
            F.sum(F.col("p") * F.col("rank")).alias("inflow"),
            F.max(F.when(F.col("own"), F.col("rank"))).alias("previous"),
        )
        .select(
            "vertex",
            (F.lit(alpha) * F.col("inflow") + F.lit(teleport)).alias("rank"),
            "previous",
        )
    )
