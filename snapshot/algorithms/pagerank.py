"""PageRank on a snapshot: a vectorized kernel (scipy.sparse), or vertex-centric (Pregel)
or edge-centric (scatter/gather) on the processing models.

The definition is networkx's default: the directed graph of distinct ``(src, dst)`` pairs,
unweighted (or weighted by an edge column, out-weights normalised per source: the kernel
only), damping ``alpha``, the rank of dangling vertices (no out-edges, including
vertices with no edges at all) spread uniformly over all vertices, no personalization.
Power iteration from ``1/N`` until no rank changes by more than ``tol`` in an iteration;
the ranks then differ from the fixed point by at most about ``tol * alpha / (1 - alpha)``
per vertex (``tol=1e-10``: within ``1e-9``). Every implementation runs the same iteration,
so they agree with each other to rounding and need the same number of iterations.

References: Page, Brin, Motwani, Winograd, *The PageRank citation ranking* (1999);
thesis Listing 9.16 (Pregel PageRank); ``networkx.pagerank``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from snapshot.algorithms.csr import GraphIndex
from snapshot.algorithms.engine import Engine, choose_engine
from snapshot.models.pregel import (
    Aggregator,
    PregelContext,
    PregelJob,
    PregelProgram,
    pregel,
)
from snapshot.models.pregel_arrays import PregelArrays, VertexBatch, VertexTable
from snapshot.models.pregel_fused import PageRankStep
from snapshot.models.result import ModelResult, Progress, kernel_result
from snapshot.models.runtime import Executor, GraphInput
from snapshot.models.scatter_gather import EdgeChunk, VertexBlock, scatter_gather
from snapshot.models.shift import VertexDelta

__all__ = [
    "PageRankEdges",
    "pagerank",
    "pagerank_job",
    "pagerank_arrays",
    "pagerank_kernel",
    "pagerank_program",
    "pagerank_shift",
]


def pagerank_kernel(
    index: GraphIndex,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iterations: int = 200,
    weight: str | None = None,
) -> tuple[np.ndarray, int, float]:
    """The power iteration over the transition matrix (one sparse matrix-vector product
    per iteration); returns ``(ranks in id order, iterations, last change)``, converged
    if the last change is ``<= tol``."""
    n = index.n
    if n == 0:
        return np.zeros(0), 0, 0.0
    pair_weight = np.ones(index.m) if weight is None else index.weights(weight)
    if (pair_weight < 0).any():
        raise ValueError(f"edge column {weight!r} holds negative weights; PageRank needs >= 0")
    out_weight = np.bincount(index.src, weights=pair_weight, minlength=n)
    dangling = out_weight == 0
    scale = np.divide(1.0, out_weight, out=np.zeros(n), where=~dangling)
    transposed = index.adjacency(pair_weight * scale[index.src]).T.tocsr()
    ranks = np.full(n, 1.0 / n)
    teleport = (1.0 - alpha) / n
    change, iteration = np.inf, 0
    while iteration < max_iterations and change > tol:
        spread = ranks[dangling].sum() / n
        new = alpha * (transposed @ ranks + spread) + teleport
        change = float(np.abs(new - ranks).max())
        ranks = new
        iteration += 1
    return ranks, iteration, change


def pagerank_program(
    alpha: float = 0.85, tol: float = 1e-10, max_iterations: int = 200
) -> PregelProgram:
    """The Pregel program: superstep 0 sends ``rank/outdeg`` along out-edges, every later
    superstep computes ``(1-alpha)/N + alpha*(sum(messages) + dangling/N)``; all vertices
    halt once the largest change of the previous superstep is ``<= tol``. A vertex whose
    state already has a ``rank`` (after a shift) starts from it instead of ``1/N``."""

    def compute(ctx: PregelContext, messages: list[float], state: dict[str, Any]) -> Any:
        n = ctx.num_vertices
        if ctx.superstep == 0:
            rank = state.get("rank") or 1.0 / n
        elif ctx.superstep >= 2 and ctx.aggregated("change") <= tol:
            ctx.vote_to_halt()
            return state
        else:
            rank = (1 - alpha) / n + alpha * (sum(messages) + ctx.aggregated("dangling") / n)
            ctx.aggregate("change", abs(rank - state["rank"]))
        degree = len(ctx.out_edges)
        if degree:
            ctx.send_to_neighbors(rank / degree)
        else:
            ctx.aggregate("dangling", rank)
        return {"rank": rank}

    return PregelProgram(
        compute,
        init=lambda view: {"rank": None},
        combiner=lambda a, b: a + b,
        aggregators={"change": Aggregator.max(0.0), "dangling": Aggregator.sum()},
        max_supersteps=max_iterations + 1,
        name="pagerank",
    )


def pagerank_arrays(
    alpha: float = 0.85, tol: float = 1e-10, max_iterations: int = 200
) -> PregelArrays:
    """The same Pregel program in array form: one ``compute`` per partition and
    superstep, messages summed by ``np.add``; the workers run it fused
    (:class:`~snapshot.models.pregel_fused.PageRankStep`: same ranks, bit for bit)."""

    def init(table: VertexTable) -> dict[str, np.ndarray]:
        return {"rank": np.zeros(len(table.ids))}

    def compute(batch: VertexBatch) -> dict[str, np.ndarray]:
        n = batch.num_vertices
        if batch.superstep == 0:
            rank = np.full(len(batch), 1.0 / n)
        elif batch.superstep >= 2 and batch.aggregated("change") <= tol:
            batch.vote_to_halt()
            return {}
        else:
            inflow = np.where(batch.has_messages, batch.messages, 0.0)
            rank = (1 - alpha) / n + alpha * (inflow + batch.aggregated("dangling") / n)
            batch.aggregate("change", np.abs(rank - batch.state["rank"]))
        linked = batch.out_degree > 0
        batch.send_to_neighbors(rank / np.maximum(batch.out_degree, 1), where=linked)
        batch.aggregate("dangling", rank[~linked])
        return {"rank": rank}

    return PregelArrays(
        compute,
        init,
        combiner=np.add,
        aggregators={"change": Aggregator.max(0.0), "dangling": Aggregator.sum()},
        max_supersteps=max_iterations + 1,
        name="pagerank",
        fused=PageRankStep(alpha, tol),  # the same superstep in a few numpy calls
    )


def pagerank_shift(result: dict[str, Any] | None, delta: VertexDelta) -> dict[str, Any]:
    """Pause/shift/resume for PageRank: a vertex keeps its paused rank, rescaled by
    ``|S1|/|S2|`` so the ranks still sum to about 1; a new vertex starts at ``1/|S2|``.
    Resuming then converges to the PageRank of S2 (power iteration converges from any
    start), in fewer iterations when S1 and S2 are close."""
    old, new = delta.vertices
    if result is None or result.get("rank") is None:
        return {"rank": 1.0 / new}
    return {"rank": result["rank"] * old / new}


@dataclass
class PageRankEdges:
    """The scatter/gather program: scatter ``rank/outdeg`` along every edge, gather sums,
    apply ``(1-alpha)/N + alpha*(sum + dangling/N)``."""

    alpha: float = 0.85
    name: str = "rank"
    reduce: Any = np.add
    identity: float = 0.0
    undirected: bool = False
    selective: bool = False

    def init(self, block: VertexBlock) -> np.ndarray:
        return np.full(len(block.ids), 1.0 / block.num_vertices)

    def aggregate(self, block: VertexBlock, values: np.ndarray) -> dict[str, float]:
        return {"dangling": float(values[block.out_degree == 0].sum())}

    def scatter(self, chunk: EdgeChunk) -> np.ndarray:
        return chunk.src_value / chunk.src_out_degree

    def apply(
        self,
        block: VertexBlock,
        values: np.ndarray,
        gathered: np.ndarray,
        received: np.ndarray,
        aggregates: dict[str, float],
    ) -> np.ndarray:
        n = block.num_vertices
        return (1 - self.alpha) / n + self.alpha * (gathered + aggregates["dangling"] / n)


def pagerank(
    graph: GraphInput,
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iterations: int = 200,
    weight: str | None = None,
    engine: Engine = "auto",
    model: Literal["pregel", "scatter_gather"] | None = None,
    form: Literal["arrays", "vertex"] = "arrays",
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """PageRank of every vertex of ``graph`` (a snapshot, or ``(vertices, edges)``).

    Parameters: ``alpha`` -- damping; ``tol`` -- stop once no rank changes by more than
    this in an iteration; ``max_iterations``; ``weight`` -- an edge column used as weight
    (kernel only); ``engine`` -- ``"local"`` (the kernel), ``"ray"`` (a processing model
    on Ray) or ``"auto"`` (by size, :mod:`.engine`); ``model`` -- ``"pregel"`` (default of
    the models) or ``"scatter_gather"``, run on ``executor`` (``"auto"``: Ray for a
    snapshot); ``form`` -- Pregel's program form, ``"arrays"`` (:func:`pagerank_arrays`)
    or ``"vertex"`` (:func:`pagerank_program`); ``num_partitions`` and ``progress`` -- of
    the models.

    Returns a :class:`ModelResult` with columns ``id``, ``rank`` (summing to 1);
    ``info["engine"]`` and ``info["engine_reason"]`` say what ran and why;
    ``info["iterations"]`` (kernel, scatter/gather) or ``info["supersteps"]`` (Pregel).

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}), pa.table({"src": [1, 2, 3], "dst": [2, 3, 1]}))
    >>> result = pagerank(graph)  # = networkx.pagerank
    >>> ranks = result.to_dict("rank")
    >>> [round(ranks[v], 4) for v in (1, 2, 3, 4)], result.info["engine"]
    ([0.3175, 0.3175, 0.3175, 0.0476], 'local')
    >>> others = [pagerank(graph, model="pregel", num_partitions=2).to_dict("rank"),
    ...           pagerank(graph, model="pregel", form="vertex").to_dict("rank"),
    ...           pagerank(graph, model="scatter_gather", num_partitions=2).to_dict("rank")]
    >>> max(abs(other[v] - ranks[v]) for other in others for v in ranks) < 1e-9
    True
    """
    choice = choose_engine(graph, engine, model=model)
    if choice.engine == "local":
        started = time.perf_counter()
        index = GraphIndex.of(graph)
        ranks, iterations, change = pagerank_kernel(index, alpha, tol, max_iterations, weight)
        if change > tol:  # as networkx does: never ranks that are not what was asked
            raise RuntimeError(
                f"PageRank did not converge to tol {tol:g} in {max_iterations} iterations "
                f"(last change {change:.3g})"
            )
        return kernel_result(
            index.table(rank=ranks), started, {"iterations": iterations, **choice.info()}
        )
    if weight is not None:
        raise ValueError("weight= is for the kernel (engine='local'); the models are unweighted")
    result = _pagerank_model(
        graph, model or "pregel", form, alpha, tol, max_iterations, num_partitions,
        choice.executor(executor), progress,
    )  # fmt: skip
    result.info.update(choice.info())
    return result


def _pagerank_model(
    graph: GraphInput,
    model: str,
    form: str,
    alpha: float,
    tol: float,
    max_iterations: int,
    num_partitions: int,
    executor: Executor,
    progress: Progress,
) -> ModelResult:
    if model == "pregel":
        if form not in ("arrays", "vertex"):
            raise ValueError(f"form must be 'arrays' or 'vertex', got {form!r}")
        make = pagerank_arrays if form == "arrays" else pagerank_program
        return pregel(
            graph,
            make(alpha, tol, max_iterations),
            num_partitions=num_partitions,
            executor=executor,
            progress=progress,
        )
    if model == "scatter_gather":
        return scatter_gather(
            graph,
            PageRankEdges(alpha),
            num_partitions=num_partitions,
            max_iterations=max_iterations,
            tol=tol,
            executor=executor,
            progress=progress,
        )
    raise ValueError(f"model must be 'pregel' or 'scatter_gather', got {model!r}")


def pagerank_job(
    graph: GraphInput,
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iterations: int = 200,
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> PregelJob:
    """A pausable Pregel PageRank job (for pause/shift/resume with :func:`pagerank_shift`)."""
    return PregelJob(
        graph,
        pagerank_program(alpha, tol, max_iterations),
        num_partitions=num_partitions,
        executor=executor,
        progress=progress,
    )
