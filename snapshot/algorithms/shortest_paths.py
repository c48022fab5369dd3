"""Single-source shortest paths (BFS hop distances, or non-negative edge weights) on a
snapshot: a kernel, vertex-centric or edge-centric.

Distances follow edge directions, from ``source``; unreachable vertices get ``None``
(kernel, Pregel) / ``inf`` (scatter/gather) and are left out by :func:`distances`. With
``weight=None`` every edge counts 1 (BFS); otherwise the edge column ``weight`` is the
length (it must be non-negative; null counts 1). The kernel is
``scipy.sparse.csgraph`` (breadth-first for hops, Dijkstra for weights); hop distances
and distances over integer weights are integers. The models are Bellman-Ford style
relaxations: a vertex whose distance shrank sends ``distance + length`` along its
out-edges; ``min`` combines.

References: Malewicz et al., *Pregel* (2010), shortest paths example;
``networkx.single_source_shortest_path_length`` and
``networkx.single_source_dijkstra_path_length``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.sparse import csgraph

from snapshot.algorithms.csr import GraphIndex
from snapshot.algorithms.engine import Engine, choose_engine
from snapshot.models.pregel import PregelContext, PregelProgram, pregel
from snapshot.models.pregel_arrays import PregelArrays, VertexBatch, VertexTable
from snapshot.models.result import ModelResult, Progress, kernel_result
from snapshot.models.runtime import Executor, GraphInput
from snapshot.models.scatter_gather import EdgeChunk, VertexBlock, scatter_gather

__all__ = [
    "PathEdges",
    "distances",
    "shortest_path_lengths",
    "shortest_paths",
    "shortest_paths_arrays",
    "shortest_paths_program",
]


def shortest_path_lengths(index: GraphIndex, source: Any, weight: str | None) -> pa.Array:
    """The distance of every vertex from ``source`` in id order, null where unreachable
    (the kernel). Raises ``ValueError`` if ``source`` is not a vertex of the graph or a
    weight is negative."""
    try:
        wanted = pa.array([source], type=index.ids.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
        raise ValueError(
            f"source {source!r} is not a vertex id ({index.ids.type}): {exc}"
        ) from None
    found = pc.index_in(wanted, value_set=index.ids)[0].as_py()
    if found is None:
        raise ValueError(f"source {source!r} is not a vertex of the graph")
    integral = True
    if weight is None:
        lengths = csgraph.shortest_path(
            index.adjacency(), directed=True, unweighted=True, indices=found
        )
    else:
        values = index.weights(weight)
        if (values < 0).any():
            raise ValueError(f"edge column {weight!r} holds negative lengths")
        integral = pa.types.is_integer(index.edges[weight].type)
        # a sparse matrix's explicit zero entries are edges to csgraph: zero lengths stay
        lengths = csgraph.dijkstra(index.adjacency(values), directed=True, indices=found)
    reached = np.isfinite(lengths)
    if integral:
        hops = np.round(np.where(reached, lengths, 0)).astype(np.int64)
        return pa.array(hops, mask=~reached)
    return pa.array(lengths, mask=~reached)


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


def shortest_paths_arrays(source: Any, max_supersteps: int = 10_000) -> PregelArrays:
    """The hop-distance relaxation in array form (unweighted; ``inf``: not reached)."""

    def init(table: VertexTable) -> dict[str, np.ndarray]:
        return {"distance": np.full(len(table.ids), np.inf)}

    def compute(batch: VertexBatch) -> dict[str, np.ndarray]:
        if batch.superstep == 0:
            best = np.where(batch.ids == source, 0.0, np.inf)
        else:
            best = np.where(batch.has_messages, batch.messages, np.inf)
        shorter = best < batch.state["distance"]
        distance = np.where(shorter, best, batch.state["distance"])
        batch.send_to_neighbors(distance + 1.0, where=shorter)
        batch.vote_to_halt()
        return {"distance": distance}

    return PregelArrays(
        compute, init, combiner=np.minimum, max_supersteps=max_supersteps, name="shortest paths"
    )


def _hops(result: ModelResult) -> ModelResult:
    """Float distances with ``inf`` as integer hops with null (as the kernel's)."""
    column = result.table["distance"].to_numpy()
    reached = np.isfinite(column)
    hops = pa.array(np.where(reached, column, 0).astype(np.int64), mask=~reached)
    result.table = result.table.set_column(1, "distance", hops)
    return result


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
    engine: Engine = "auto",
    model: Literal["pregel", "scatter_gather"] | None = None,
    form: Literal["arrays", "vertex"] = "arrays",
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """Distance from ``source`` to every vertex: columns ``id``, ``distance``.
    ``engine``, ``model``, ``form``, ``executor``: as for
    :func:`~snapshot.algorithms.pagerank`; Pregel's array form is unweighted, so with a
    ``weight`` the per-vertex form runs.

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}),
    ...          pa.table({"src": [1, 2, 1], "dst": [2, 3, 3], "w": [1.0, 1.0, 5.0]}))
    >>> distances(shortest_paths(graph, 1))
    {1: 0, 2: 1, 3: 1}
    >>> distances(shortest_paths(graph, 1, model="pregel", num_partitions=2))
    {1: 0, 2: 1, 3: 1}
    >>> distances(shortest_paths(graph, 1, weight="w", model="scatter_gather"))
    {1: 0.0, 2: 1.0, 3: 2.0}
    """
    choice = choose_engine(graph, engine, model=model)
    if choice.engine == "local":
        started = time.perf_counter()
        index = GraphIndex.of(graph)
        table = index.table(distance=shortest_path_lengths(index, source, weight))
        return kernel_result(table, started, choice.info())
    result = _paths_model(
        graph, source, weight, model or "pregel", form, num_partitions,
        choice.executor(executor), progress,
    )  # fmt: skip
    result.info.update(choice.info())
    return result


def _paths_model(
    graph: GraphInput,
    source: Any,
    weight: str | None,
    model: str,
    form: str,
    num_partitions: int,
    executor: Executor,
    progress: Progress,
) -> ModelResult:
    if model == "pregel" and form == "arrays" and weight is None:
        result = pregel(
            graph,
            shortest_paths_arrays(source),
            num_partitions=num_partitions,
            executor=executor,
            progress=progress,
        )
        return _hops(result)
    if model == "pregel":
        if form not in ("arrays", "vertex"):
            raise ValueError(f"form must be 'arrays' or 'vertex', got {form!r}")
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
