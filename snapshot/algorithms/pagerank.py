"""PageRank on a snapshot, vertex-centric (Pregel) or edge-centric (scatter/gather).

The definition is networkx's default: the directed graph of distinct ``(src, dst)`` pairs,
unweighted, damping ``alpha``, the rank of dangling vertices (no out-edges, including
vertices with no edges at all) spread uniformly over all vertices, no personalization.
Power iteration from ``1/N`` until no rank changes by more than ``tol`` in an iteration;
the ranks then differ from the fixed point by at most about ``tol * alpha / (1 - alpha)``
per vertex (``tol=1e-10``: within ``1e-9``).

References: Page, Brin, Motwani, Winograd, *The PageRank citation ranking* (1999);
thesis Listing 9.16 (Pregel PageRank); ``networkx.pagerank``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from snapshot.models.pregel import (
    Aggregator,
    PregelContext,
    PregelJob,
    PregelProgram,
    pregel,
)
from snapshot.models.result import ModelResult, Progress
from snapshot.models.runtime import Executor, GraphInput
from snapshot.models.scatter_gather import EdgeChunk, VertexBlock, scatter_gather
from snapshot.models.shift import VertexDelta

__all__ = [
    "PageRankEdges",
    "pagerank",
    "pagerank_job",
    "pagerank_program",
    "pagerank_shift",
]


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
    model: Literal["pregel", "scatter_gather"] = "pregel",
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iterations: int = 200,
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """PageRank of every vertex of ``graph`` (a snapshot, or ``(vertices, edges)``).

    Parameters: ``model`` -- ``"pregel"`` or ``"scatter_gather"``; ``alpha`` -- damping;
    ``tol`` -- stop once no rank changes by more than this in an iteration;
    ``max_iterations``; ``num_partitions``; ``executor`` (``"auto"``: Ray for a
    snapshot); ``progress``.

    Returns a :class:`ModelResult` with columns ``id``, ``rank`` (summing to 1);
    ``info["supersteps"]`` (Pregel) or ``info["iterations"]`` (scatter/gather).

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}), pa.table({"src": [1, 2, 3], "dst": [2, 3, 1]}))
    >>> ranks = pagerank(graph, num_partitions=2).to_dict("rank")  # = networkx.pagerank
    >>> [round(ranks[v], 4) for v in (1, 2, 3, 4)]
    [0.3175, 0.3175, 0.3175, 0.0476]
    >>> edge = pagerank(graph, model="scatter_gather", num_partitions=2).to_dict("rank")
    >>> max(abs(edge[v] - ranks[v]) for v in ranks) < 1e-9
    True
    """
    if model == "pregel":
        return pregel(
            graph,
            pagerank_program(alpha, tol, max_iterations),
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
