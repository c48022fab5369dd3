"""Connected components of a snapshot: weak (a kernel, Pregel or scatter/gather) and
strong (a kernel).

Every vertex is labelled with the smallest vertex id of its component (weak: edge
directions ignored; strong: vertices that reach each other; a vertex with no edges is its
own component). The kernel is ``scipy.sparse.csgraph.connected_components`` over the
snapshot's adjacency matrix. The models use min-label propagation (HashMin): the Pregel
version first learns each vertex's in-neighbours
(superstep 0 sends the id along out-edges); the scatter/gather version streams every edge
in both directions and only scatters from vertices whose label changed. Ids must be
mutually comparable; the scatter/gather version needs integer ids (labels are float64,
exact up to 2**53).

References: Rastogi et al., *Finding connected components in map-reduce in logarithmic
rounds* (HashMin, 2013); Pearce, *A space-efficient algorithm for finding strongly
connected components* (2016, scipy's); ``networkx.weakly_connected_components``,
``networkx.strongly_connected_components``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from scipy.sparse import csgraph

from snapshot.algorithms.csr import GraphIndex
from snapshot.algorithms.engine import Engine, EngineChoice, choose_engine
from snapshot.models.pregel import PregelContext, PregelProgram, pregel
from snapshot.models.pregel_arrays import PregelArrays, VertexBatch, VertexTable
from snapshot.models.result import ModelResult, Progress, kernel_result
from snapshot.models.runtime import Executor, GraphInput
from snapshot.models.scatter_gather import EdgeChunk, VertexBlock, scatter_gather

__all__ = [
    "ComponentEdges",
    "component_labels",
    "component_sets",
    "components_arrays",
    "components_program",
    "connected_components",
    "strongly_connected_components",
]

_KERNEL_ONLY = EngineChoice("local", "strongly connected components have a kernel only")


def component_labels(index: GraphIndex, connection: Literal["weak", "strong"]) -> pa.Array:
    """The smallest id of every vertex's component, in id order (the kernel)."""
    if index.n == 0:
        return index.ids
    _, labels = csgraph.connected_components(
        index.adjacency(), directed=True, connection=connection
    )
    # ids ascend, so a component's first position holds its smallest id
    _, first = np.unique(labels, return_index=True)
    return index.ids.take(pa.array(first[labels]))


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


def components_arrays(max_supersteps: int = 1000) -> PregelArrays:
    """HashMin in array form: every vertex's neighbours both ways come with the
    partition (``undirected``), labels are combined with ``np.minimum``."""

    def init(table: VertexTable) -> dict[str, np.ndarray]:
        return {"component": table.ids.copy()}

    def compute(batch: VertexBatch) -> dict[str, np.ndarray]:
        label = batch.state["component"]
        if batch.superstep == 0:
            batch.send_to_neighbors(label)
        else:
            heard = np.where(batch.has_messages, batch.messages, label)
            smaller = heard < label
            label = np.where(smaller, heard, label)
            batch.send_to_neighbors(label, where=smaller)
        batch.vote_to_halt()
        return {"component": label}

    return PregelArrays(
        compute,
        init,
        combiner=np.minimum,
        max_supersteps=max_supersteps,
        undirected=True,
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
    engine: Engine = "auto",
    model: Literal["pregel", "scatter_gather"] | None = None,
    form: Literal["arrays", "vertex"] = "arrays",
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """Weakly connected components: columns ``id``, ``component`` (the smallest id in the
    vertex's component; a float for scatter/gather). ``engine``, ``model``, ``form``,
    ``executor``: as for :func:`~snapshot.algorithms.pagerank.pagerank`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4, 5]}), pa.table({"src": [2, 3], "dst": [1, 4]}))
    >>> connected_components(graph).to_dict()
    {1: 1, 2: 1, 3: 3, 4: 3, 5: 5}
    >>> connected_components(graph, model="pregel", num_partitions=2).to_dict()
    {1: 1, 2: 1, 3: 3, 4: 3, 5: 5}
    >>> connected_components(graph, model="pregel", form="vertex").to_dict()
    {1: 1, 2: 1, 3: 3, 4: 3, 5: 5}
    >>> component_sets(connected_components(graph, model="scatter_gather"))
    [[1, 2], [3, 4], [5]]
    """
    choice = choose_engine(graph, engine, model=model)
    if choice.engine == "local":
        started = time.perf_counter()
        index = GraphIndex.of(graph)
        table = index.table(component=component_labels(index, "weak"))
        return kernel_result(table, started, choice.info())
    result = _components_model(
        graph, model or "pregel", form, num_partitions, choice.executor(executor),
        progress,
    )  # fmt: skip
    result.info.update(choice.info())
    return result


def strongly_connected_components(graph: GraphInput) -> ModelResult:
    """Strongly connected components (the kernel): columns ``id``, ``component`` (the
    smallest id of the vertices that reach it and that it reaches).

    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [4]}), pa.table({"src": [1, 2, 2, 3], "dst": [2, 1, 3, 4]}))
    >>> strongly_connected_components(graph).to_dict()
    {1: 1, 2: 1, 3: 3, 4: 4}
    """
    started = time.perf_counter()
    index = GraphIndex.of(graph)
    table = index.table(component=component_labels(index, "strong"))
    return kernel_result(table, started, _KERNEL_ONLY.info())


def _components_model(
    graph: GraphInput,
    model: str,
    form: str,
    num_partitions: int,
    executor: Executor,
    progress: Progress,
) -> ModelResult:
    if model == "pregel":
        if form not in ("arrays", "vertex"):
            raise ValueError(f"form must be 'arrays' or 'vertex', got {form!r}")
        return pregel(
            graph,
            components_arrays() if form == "arrays" else components_program(),
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
