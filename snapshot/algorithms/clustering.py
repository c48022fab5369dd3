"""Local clustering coefficient on a snapshot, vertex-centric (Pregel).

Computed on the **undirected simple graph** of the snapshot (edge directions ignored,
self-loops dropped), as ``networkx.clustering`` does for an undirected graph: for a vertex
with ``k`` neighbours of which ``t`` pairs are adjacent, ``2t / (k(k-1))``, and 0 when
``k < 2``. Three supersteps, after Suri & Vassilvitskii and thesis Listing 9.17:
(0) send the own id along out-edges, so every vertex learns its in-neighbours; (1) send
the neighbour set to every neighbour; (2) count, for each neighbour's set received, the
common neighbours: their sum is ``2t``. Message volume is the sum over vertices of
``k**2`` ids.

References: Watts & Strogatz, *Collective dynamics of small-world networks* (1998);
Suri & Vassilvitskii, *Counting triangles and the curse of the last reducer* (2011);
thesis Listing 9.17; ``networkx.clustering``.
"""

from __future__ import annotations

from typing import Any

from snapshot.models.pregel import PregelContext, PregelProgram, pregel
from snapshot.models.result import ModelResult, Progress
from snapshot.models.runtime import Executor, GraphInput

__all__ = ["clustering", "clustering_program"]


def clustering_program() -> PregelProgram:
    """The three-superstep Pregel program; the state ends as the coefficient."""

    def compute(ctx: PregelContext, messages: list[Any], state: Any) -> Any:
        me = ctx.vertex_id
        if ctx.superstep == 0:
            ctx.send_to_neighbors(me)
            return None
        if ctx.superstep == 1:
            neighbours = (set(ctx.out_edges) | set(messages)) - {me}
            shared = frozenset(neighbours)
            for n in neighbours:
                ctx.send(n, shared)
            return shared
        neighbours = state
        k = len(neighbours)
        twice_triangles = sum(len(neighbours & theirs) for theirs in messages)
        ctx.vote_to_halt()
        return 0.0 if k < 2 else twice_triangles / (k * (k - 1))

    return PregelProgram(
        compute,
        init=lambda view: None,
        max_supersteps=3,
        output=lambda state: {"clustering": state},
        name="clustering",
    )


def clustering(
    graph: GraphInput,
    *,
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """Local clustering coefficient of every vertex: columns ``id``, ``clustering``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}),
    ...          pa.table({"src": [1, 2, 3, 3, 4], "dst": [2, 3, 1, 4, 4]}))
    >>> clustering(graph, num_partitions=2).to_dict()  # = networkx.clustering
    {1: 1.0, 2: 1.0, 3: 0.3333333333333333, 4: 0.0}
    """
    return pregel(
        graph,
        clustering_program(),
        num_partitions=num_partitions,
        executor=executor,
        progress=progress,
    )
