"""PageRank on Spark as numpy blocks (MLlib style), not as a DataFrame plan per iteration.

The definition is networkx's default (``networkx.pagerank``): the directed graph of the
``(src, dst)`` rows, each weight 1 (or the value of ``weight``; rows of one pair add up),
damping ``alpha``, teleport uniform over all vertices, and the rank of a vertex without
out-weight (dangling) spread uniformly over all vertices.

What a run costs, and why:

* **once**: the vertex ids, sorted, are the dense index (a snapshot's come from its Arrow
  tables on the driver, with no Spark job; DataFrames' from one distinct job); the edge
  rows are split in shares (``partitions_for``: one per million rows, at most one per
  core; any split, no shuffle) and every share becomes one block, a sparse matrix (scipy
  CSR) from all vertices to the share's targets, built from numpy columns with no Python
  per row (a snapshot's shares are read by the tasks from the object store, see
  :class:`~spark_bridge.analyses._graph.ArrayGraph`); the out-weight of every source is
  summed from the blocks;
* **per iteration**, several partitions: the driver broadcasts one numpy vector (the ranks
  divided by the out-weights) to the cached blocks, every partition returns its targets'
  inflow as one numpy array (one matrix-vector product; the driver adds them up), and
  the driver adds dangling mass and teleport and tests convergence in numpy. One small
  job per iteration, no plan to build, no shuffle, no extra job for the check;
* **per run**, one partition (every graph below a million rows on one core): the task
  that builds the block runs every iteration on it, one job for all iterations (from a
  snapshot, that is the run's only job). Measured
  on the CollegeMsg cut (18 k edges, ``bench/results/spark_pagerank.md``): a job costs
  ~0.2 s on RayDP here (one partition; ~0.4 s with two) while an iteration's product costs
  ~0.1 ms, so a job per iteration would be almost all overhead.

The result is a DataFrame ``(vertex, pagerank)`` built from the driver's arrays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_bridge.analyses._graph import array_graph, graph_frames, partitions_for, vertex_frame

__all__ = ["pagerank", "PageRankRun"]


@dataclass
class PageRankRun:
    """How a PageRank run ended, and what its partitions were."""

    iterations: int
    delta: float  # L1 change of the rank vector over the last iteration
    converged: bool
    partitions: int = 1
    jobs_per_iteration: float = 1.0  # 0 when every iteration ran in one job
    iterating_seconds: float = 0.0  # wall time of the iterations alone (blocks cached)


def pagerank(
    spark: Any,
    graph: Any,
    *,
    alpha: float = 0.85,
    weight: str | None = None,
    tol: float = 1e-10,
    max_iter: int = 300,
    partitions: int | None = None,
    one_job: bool = True,
    run: list[PageRankRun] | None = None,
) -> DataFrame:
    """PageRank of every vertex: a DataFrame ``(vertex, pagerank)``, ranks summing to 1.

    Parameters
    ----------
    graph : Snapshot or (vertices, edges) Spark DataFrames
    alpha : damping factor.
    weight : edge column used as weight (out-weights normalised per source);
        ``None``: every row weighs 1.
    tol : stop once an iteration changes the rank vector by less than ``tol`` in L1 norm.
        The error is then at most ``tol * alpha / (1 - alpha)`` in L1 norm, so the default
        (1e-10) leaves every rank within 1e-9 of the fixed point.
    max_iter : give up after this many iterations (``run`` says whether it converged).
    partitions : partitions of the graph's blocks (default: from the data, see module).
    one_job : when the graph is one partition, run every iteration in its task (one job);
        ``False``: a job per iteration as with several partitions (to measure both).
    run : if given, a :class:`PageRankRun` is appended to it.

    Each iteration is networkx's: ``x' = alpha * (x P + dangling(x) / N) + (1 - alpha) / N``,
    from ``x = 1 / N``, the change measured as ``sum |x' - x|``.

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
    arrays = array_graph(spark, graph)
    ids = arrays.ids
    n = len(ids)
    if n == 0:
        vertices, _ = graph_frames(spark, graph)
        return vertices.select("vertex", F.lit(0.0).alias("pagerank"))
    parts = partitions or partitions_for(spark, n + arrays.edge_rows())
    columns = {"src": "src", "dst": "dst", "w": weight}
    build = _block_builder(ids)
    fused = one_job and parts == 1
    if fused:  # one job: the task builds the block and runs every iteration on it
        solve = _solver(build, alpha, tol, max_iter)
        with arrays.blocks(columns, solve, 1) as solved:
            found = solved.collect()
        x, done, delta, seconds = found[0] if found else solve(_no_rows(columns))
    else:
        with arrays.blocks(columns, build, parts) as blocks:
            x, done, delta, seconds = _iterate_on_driver(spark, blocks, n, alpha, tol, max_iter)
    if run is not None:
        jobs = 0.0 if fused else 1.0
        run.append(PageRankRun(done, delta, delta < tol, parts, jobs, seconds))
    return vertex_frame(spark, ids, "pagerank", x)


def _no_rows(columns: dict[str, str | None]) -> dict[str, np.ndarray]:
    """The columns of a graph without edges (a frame without partitions gives no block)."""
    return {name: np.empty(0) for name in columns}


Block = tuple[np.ndarray, Any]
"""One share of the edges: its targets (dense indices, sorted, distinct) and the CSR matrix
of shape ``(targets, N)`` whose row ``i`` holds the share's weights into ``targets[i]``
(another share may hold more edges into the same target)."""


def _block_builder(ids: np.ndarray) -> Any:
    def build(columns: dict[str, np.ndarray]) -> Block:
        from scipy.sparse import csr_matrix

        src, dst = np.searchsorted(ids, columns["src"]), np.searchsorted(ids, columns["dst"])
        targets, row = np.unique(dst, return_inverse=True)
        weights = columns["w"].astype(np.float64)
        matrix = csr_matrix((weights, (row, src)), shape=(len(targets), len(ids)))
        return targets, matrix

    return build


def _out_weight(block: Block, n: int) -> np.ndarray:
    matrix = block[1]
    return np.bincount(matrix.indices, weights=matrix.data, minlength=n)


class _Chain:
    """The Markov chain's driver side: out-weights, dangling vertices, one step from the
    targets' inflow (numpy over all vertices; small enough to ship to a task)."""

    def __init__(self, out_weight: np.ndarray, alpha: float) -> None:
        self.n = len(out_weight)
        self.alpha = alpha
        self.dangling = out_weight == 0
        self.scale = np.divide(1.0, out_weight, out=np.zeros(self.n), where=~self.dangling)

    def start(self) -> np.ndarray:
        return np.full(self.n, 1.0 / self.n)

    def sent(self, x: np.ndarray) -> np.ndarray:
        """What every vertex sends per unit of out-weight."""
        return x * self.scale

    def step(self, x: np.ndarray, inflow: np.ndarray) -> tuple[np.ndarray, float]:
        """``(x', sum |x' - x|)`` given ``inflow = x P`` over all vertices."""
        spread = (self.alpha * x[self.dangling].sum() + 1.0 - self.alpha) / self.n
        new = self.alpha * inflow + spread
        return new, float(np.abs(new - x).sum())


Result = tuple[np.ndarray, int, float, float]
"""The ranks, the iterations done, the last L1 change, the seconds the iterations took."""


def _solver(build: Any, alpha: float, tol: float, max_iter: int) -> Any:
    """A partition's columns -> :data:`Result`, every iteration inside one task (the
    partition holds every edge)."""

    def solve(columns: dict[str, np.ndarray]) -> Result:
        targets, matrix = build(columns)
        n = matrix.shape[1]
        chain = _Chain(_out_weight((targets, matrix), n), alpha)
        started = time.perf_counter()
        x, inflow, done, delta = chain.start(), np.zeros(n), 0, float("inf")
        while done < max_iter and delta >= tol:
            inflow[targets] = matrix @ chain.sent(x)
            x, delta = chain.step(x, inflow)
            done += 1
        return x, done, delta, time.perf_counter() - started

    return solve


def _iterate_on_driver(
    spark: Any, blocks: Any, n: int, alpha: float, tol: float, max_iter: int
) -> Result:
    """The blocks cached; then a job per iteration: the ranks go out broadcast, each
    partition's inflow comes back and the driver adds them up."""
    blocks = blocks.persist(StorageLevel.MEMORY_ONLY)
    context = spark.sparkContext
    try:
        # the job that caches the blocks also sums the out-weight of every source
        out = np.zeros(n)
        for part in blocks.map(lambda b: _out_weight(b, n)).collect():
            out += part
        chain = _Chain(out, alpha)
        started = time.perf_counter()
        x, inflow, done, delta = chain.start(), np.zeros(n), 0, float("inf")
        while done < max_iter and delta >= tol:
            sent = context.broadcast(chain.sent(x))
            inflow[:] = 0.0
            try:
                for targets, flow in blocks.map(lambda b, s=sent: (b[0], b[1] @ s.value)).collect():
                    inflow[targets] += flow  # targets distinct within a block
            finally:
                sent.destroy()
            x, delta = chain.step(x, inflow)
            done += 1
        return x, done, delta, time.perf_counter() - started
    finally:
        blocks.unpersist()
