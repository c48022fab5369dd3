"""Weakly connected components of a snapshot, vertex-centric or edge-centric.

Every vertex is labelled with the smallest vertex id of its weakly connected component
(edge directions ignored; vertices with no edges are their own component), by min-label
propagation (HashMin). The Pregel version first learns each vertex's in-neighbours
(superstep 0 sends the id along out-edges); the scatter/gather version streams every edge
in both directions and only scatters from vertices whose label changed. Ids must be
mutually comparable; the scatter/gather version needs integer ids (labels are float64,
exact up to 2**53).

References: Rastogi et al., *Finding connected components in map-reduce in logarithmic
rounds* (HashMin, 2013); ``networkx.weakly_connected_components``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from snapshot.models.pregel import PregelContext, PregelProgram, pregel
from snapshot.models.result import ModelResult, Progress
from snapshot.models.runtime import Executor, GraphInput
from snapshot.models.scatter_gather import EdgeChunk, VertexBlock, scatter_gather

__all__ = ["ComponentEdges", "component_sets", "components_program", "connected_components"]


def components_program(max_supersteps: int = 1000) -> PregelProgram:
    """HashMin over the undirected graph, learning in-neighbours in superstep 0."""

    def compute(ctx: PregelContext, messages: list[Any], state: dict[str, Any]) -> Any:
        if ctx.superstep == 0:
            ctx.send_to_neighbors(ctx.vertex_id)
            return {"component": ctx.vertex_id, "in": ()}
        if ctx.superstep == 1:
            state = {"component": min([ctx.vertex_id, *messages]), "in": tuple(set(messages))}
            _spread(ctx, state)
        elif messages and min(messages) < state["component"]:
            state = {"component": min(messages), "in": state["in"]}
            _spread(ctx, state)
        ctx.vote_to_halt()
        return state

    return PregelProgram(
        compute,
        init=lambda view: None,
        max_supersteps=max_supersteps,
        output=lambda state: {"component": state["component"]},
        name="components",
    )


def _spread(ctx: PregelContext, state: dict[str, Any]) -> None:
    label = state["component"]
    for neighbour in set(ctx.out_edges).union(state["in"]):
        if neighbour != ctx.vertex_id:
            ctx.send(neighbour, label)


@dataclass
class ComponentEdges:
    """The scatter/gather program: labels flow both ways along every edge, min wins."""

    name: str = "component"
    reduce: Any = np.minimum
    identity: float = np.inf
    undirected: bool = True
    selective: bool = True

    def init(self, block: VertexBlock) -> np.ndarray:
        if block.ids.dtype.kind not in "iu":
            raise TypeError("scatter/gather connected components needs integer vertex ids")
        return block.ids.astype(np.float64)

    def aggregate(self, block: VertexBlock, values: np.ndarray) -> dict[str, float]:
        return {}

    def scatter(self, chunk: EdgeChunk) -> np.ndarray:
        return chunk.src_value

    def apply(
        self,
        block: VertexBlock,
        values: np.ndarray,
        gathered: np.ndarray,
        received: np.ndarray,
        aggregates: dict[str, float],
    ) -> np.ndarray:
        return np.minimum(values, gathered)


def connected_components(
    graph: GraphInput,
    *,
    model: Literal["pregel", "scatter_gather"] = "pregel",
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """Weakly connected components: columns ``id``, ``component`` (the smallest id in the
    vertex's component; an int for Pregel, a float for scatter/gather).

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4, 5]}), pa.table({"src": [2, 3], "dst": [1, 4]}))
    >>> connected_components(graph, num_partitions=2).to_dict()
    {1: 1, 2: 1, 3: 3, 4: 3, 5: 5}
    >>> component_sets(connected_components(graph, model="scatter_gather"))
    [[1, 2], [3, 4], [5]]
    """
    if model == "pregel":
        return pregel(
            graph,
            components_program(),
            num_partitions=num_partitions,
            executor=executor,
            progress=progress,
        )
    if model == "scatter_gather":
        result = scatter_gather(
            graph,
            ComponentEdges(),
            num_partitions=num_partitions,
            max_iterations=10**6,
            executor=executor,
            progress=progress,
        )
        return result
    raise ValueError(f"model must be 'pregel' or 'scatter_gather', got {model!r}")


def component_sets(result: ModelResult) -> list[list[Any]]:
    """The components as sorted lists of vertex ids, sorted by their smallest id."""
    groups: dict[Any, list[Any]] = {}
    for vid, label in result.to_dict("component").items():
        groups.setdefault(label, []).append(vid)
    return sorted(sorted(g) for g in groups.values())
