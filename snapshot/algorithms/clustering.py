"""Triangles and the local clustering coefficient on a snapshot: a kernel, and a
vertex-centric (Pregel) version of the coefficient.

Computed on the **undirected simple graph** of the snapshot (edge directions ignored,
self-loops dropped), as ``networkx.triangles``/``networkx.clustering`` do for an
undirected graph: a vertex with ``k`` neighbours of which ``t`` pairs are adjacent lies on
``t`` triangles, and its coefficient is ``2t / (k(k-1))``, 0 when ``k < 2``.

The kernel orients every edge from the endpoint of lower degree to the higher (ties by
position), so every vertex has at most ``sqrt(2m)`` out-neighbours, and finds each
triangle ``u -> v -> w`` (with ``u -> w``) exactly once with two sparse products masked by
the oriented graph ``L``: ``(L @ L) * L`` counts each triangle at its edge ``u -> w``
(credited to ``u`` and ``w``), ``(L.T @ L) * L`` at ``v -> w`` (credited to ``v``). Their
cost is bounded by ``m * sqrt(m)`` even on graphs with hubs, where the plain ``A @ A``
would hold ``sum(k**2)`` entries.

The Pregel version runs three supersteps, after Suri & Vassilvitskii and thesis Listing 9.17:
(0) send the own id along out-edges, so every vertex learns its in-neighbours; (1) send
the neighbour set to every neighbour; (2) count, for each neighbour's set received, the
common neighbours: their sum is ``2t``. Message volume is the sum over vertices of
``k**2`` ids.

References: Watts & Strogatz, *Collective dynamics of small-world networks* (1998);
Latapy, *Main-memory triangle computations for very large graphs* (2008); Suri &
Vassilvitskii, *Counting triangles and the curse of the last reducer* (2011);
thesis Listing 9.17; ``networkx.clustering``.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from snapshot.algorithms.csr import GraphIndex
from snapshot.algorithms.engine import Engine, EngineChoice, choose_engine
from snapshot.models.pregel import PregelContext, PregelProgram, pregel
from snapshot.models.result import ModelResult, Progress, kernel_result
from snapshot.models.runtime import Executor, GraphInput

__all__ = ["clustering", "clustering_program", "triangle_counts", "triangles"]


def triangle_counts(index: GraphIndex) -> tuple[np.ndarray, np.ndarray]:
    """``(triangles, undirected degree)`` of every vertex, in id order (the kernel)."""
    simple = index.undirected
    degree = np.diff(simple.indptr)
    if index.n == 0:
        return degree, degree
    rows = np.repeat(np.arange(index.n), degree)
    cols = simple.indices
    rank = np.lexsort((np.arange(index.n), degree))  # position in (degree, index) order
    order = np.empty(index.n, dtype=np.int64)
    order[rank] = np.arange(index.n)
    up = order[rows] < order[cols]
    oriented = sp.csr_array(
        (np.ones(int(up.sum())), (rows[up], cols[up])), shape=(index.n, index.n)
    )
    closing = (oriented @ oriented).multiply(oriented)  # triangle at its u -> w edge
    middle = (oriented.T @ oriented).multiply(oriented)  # the same one at v -> w
    counts = (
        np.asarray(closing.sum(axis=1)).ravel()
        + np.asarray(closing.sum(axis=0)).ravel()
        + np.asarray(middle.sum(axis=1)).ravel()
    )
    return np.round(counts).astype(np.int64), degree


_KERNEL = EngineChoice("local", "triangles have a kernel only")


def triangles(graph: GraphInput) -> ModelResult:
    """Triangles through every vertex of the undirected simple graph: columns ``id``,
    ``triangles`` (the kernel; = ``networkx.triangles``).

    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}),
    ...          pa.table({"src": [1, 2, 3, 3, 4], "dst": [2, 3, 1, 4, 4]}))
    >>> triangles(graph).to_dict()
    {1: 1, 2: 1, 3: 1, 4: 0}
    """
    started = time.perf_counter()
    index = GraphIndex.of(graph)
    counts, _ = triangle_counts(index)
    return kernel_result(index.table(triangles=counts), started, _KERNEL.info())


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
    engine: Engine = "auto",
    model: Literal["pregel"] | None = None,
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """Local clustering coefficient of every vertex: columns ``id``, ``clustering``.
    ``engine``, ``model``, ``executor``: as for :func:`~snapshot.algorithms.pagerank`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}),
    ...          pa.table({"src": [1, 2, 3, 3, 4], "dst": [2, 3, 1, 4, 4]}))
    >>> clustering(graph).to_dict()  # = networkx.clustering
    {1: 1.0, 2: 1.0, 3: 0.3333333333333333, 4: 0.0}
    >>> pregel_version = clustering(graph, model="pregel", num_partitions=2)
    >>> pregel_version.to_dict() == clustering(graph).to_dict()
    True
    """
    choice = choose_engine(graph, engine, model=model)
    if choice.engine == "local":
        started = time.perf_counter()
        index = GraphIndex.of(graph)
        counts, k = triangle_counts(index)
        pairs = k * (k - 1.0)
        coefficient = np.divide(2.0 * counts, pairs, out=np.zeros(index.n), where=k >= 2)
        return kernel_result(index.table(clustering=coefficient), started, choice.info())
    if model not in (None, "pregel"):
        raise ValueError(f"clustering has a Pregel model only, got model={model!r}")
    result = pregel(
        graph,
        clustering_program(),
        num_partitions=num_partitions,
        executor=choice.executor(executor),
        progress=progress,
    )
    result.info.update(choice.info())
    return result
