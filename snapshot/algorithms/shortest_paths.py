"""Single-source shortest paths (BFS hop distances, or non-negative edge weights) on a
snapshot, vertex-centric or edge-centric.

Distances follow edge directions, from ``source``; unreachable vertices get ``None``
(Pregel) / ``inf`` (scatter/gather) and are left out by :func:`distances`. With
``weight=None`` every edge counts 1 (BFS); otherwise the edge column ``weight`` is the
length (it must be non-negative; null counts 1). Both versions are Bellman-Ford style
relaxations: a vertex whose distance shrank sends ``distance + length`` along its
out-edges; ``min`` combines.

References: Malewicz et al., *Pregel* (2010), shortest paths example;
``networkx.single_source_shortest_path_length`` and
``networkx.single_source_dijkstra_path_length``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow.compute as pc

from snapshot.models.pregel import PregelContext, PregelProgram, pregel
from snapshot.models.result import ModelResult, Progress
from snapshot.models.runtime import Executor, GraphInput
from snapshot.models.scatter_gather import EdgeChunk, VertexBlock, scatter_gather

__all__ = ["PathEdges", "distances", "shortest_paths", "shortest_paths_program"]


def shortest_paths_program(
    source: Any, weight: str | None = None, max_supersteps: int = 10_000
) -> PregelProgram:
    """Pregel relaxation from ``source``; the state is the distance (``None``: not
    reached yet)."""

    def compute(ctx: PregelContext, messages: list[float], state: float | None) -> Any:
        if ctx.superstep == 0:
            best = 0 if ctx.vertex_id == source else None
        else:
            best = min(messages)
        if best is not None and (state is None or best < state):
            state = best
            for dst, props in ctx.out_edges.items():
                length = 1 if weight is None else props.get(weight, 1)
                ctx.send(dst, state + length)
        ctx.vote_to_halt()
        return state

    return PregelProgram(
        compute,
        init=lambda view: None,
        combiner=min,
        max_supersteps=max_supersteps,
        output=lambda state: {"distance": state},
        name="shortest paths",
    )


@dataclass
class PathEdges:
    """The scatter/gather program: reached vertices send ``distance + length``."""

    source: Any
    weight: str | None = None
    name: str = "distance"
    reduce: Any = np.minimum
    identity: float = np.inf
    undirected: bool = False
    selective: bool = True

    def init(self, block: VertexBlock) -> np.ndarray:
        return np.where(block.ids == self.source, 0.0, np.inf)

    def aggregate(self, block: VertexBlock, values: np.ndarray) -> dict[str, float]:
        return {}

    def scatter(self, chunk: EdgeChunk) -> np.ndarray:
        if self.weight is None:
            return chunk.src_value + 1.0
        lengths = pc.fill_null(chunk.batch.column(self.weight), 1).to_numpy(zero_copy_only=False)
        return chunk.src_value + lengths.astype(np.float64)

    def apply(
        self,
        block: VertexBlock,
        values: np.ndarray,
        gathered: np.ndarray,
        received: np.ndarray,
        aggregates: dict[str, float],
    ) -> np.ndarray:
        return np.minimum(values, gathered)


def shortest_paths(
    graph: GraphInput,
    source: Any,
    *,
    weight: str | None = None,
    model: Literal["pregel", "scatter_gather"] = "pregel",
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """Distance from ``source`` to every vertex: columns ``id``, ``distance``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}),
    ...          pa.table({"src": [1, 2, 1], "dst": [2, 3, 3], "w": [1.0, 1.0, 5.0]}))
    >>> distances(shortest_paths(graph, 1, num_partitions=2))
    {1: 0, 2: 1, 3: 1}
    >>> distances(shortest_paths(graph, 1, weight="w", model="scatter_gather"))
    {1: 0.0, 2: 1.0, 3: 2.0}
    """
    if model == "pregel":
        return pregel(
            graph,
            shortest_paths_program(source, weight),
            num_partitions=num_partitions,
            executor=executor,
            progress=progress,
        )
    if model == "scatter_gather":
        return scatter_gather(
            graph,
            PathEdges(source, weight),
            num_partitions=num_partitions,
            max_iterations=10**6,
            executor=executor,
            progress=progress,
        )
    raise ValueError(f"model must be 'pregel' or 'scatter_gather', got {model!r}")


def distances(result: ModelResult) -> dict[Any, Any]:
    """``vertex -> distance`` for the reached vertices only."""
    return {
        v: d
        for v, d in result.to_dict("distance").items()
        if d is not None and not (isinstance(d, float) and math.isinf(d))
    }
