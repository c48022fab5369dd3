"""Weakly connected components on Spark in one job: components per partition, merged.

Every partition of the edges finds the components of its own edges (scipy's
``connected_components`` on numpy arrays, vertex ids mapped to dense indices with the
sorted id array) and returns, for every vertex it touches, the smallest vertex of its
local component: a forest of at most one link per touched vertex. The driver joins the
partitions' forests with one more ``connected_components`` over all vertices. Two vertices
are in one component exactly when a chain of edges links them; every edge lies in one
partition, so that chain is a chain of local components, and the merge finds it.

From a snapshot, the ids come from its Arrow tables on the driver and the tasks read the
edges from the object store (:class:`~spark_bridge.analyses._graph.ArrayGraph`): the
run's only job is that one. One job whatever the graph's diameter (label propagation
needs about a job per step of the longest shortest path); what crosses to the driver is
at most a pair of integers per vertex and partition.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pyspark.sql import DataFrame

from spark_bridge.analyses._graph import array_graph, graph_frames, partitions_for, vertex_frame

__all__ = ["weakly_connected_components"]


def weakly_connected_components(
    spark: Any,
    graph: Any,
    *,
    partitions: int | None = None,
) -> DataFrame:
    """The weakly connected component of every vertex: a DataFrame ``(vertex, component)``.

    ``component`` is the smallest vertex id of the component, so two runs (or two
    engines) label the same components the same way. Edge directions are ignored; a vertex
    without edges is a component of its own.

    ``partitions``: partitions of the edges (default: from the data, one per million rows
    and at most one per core). Nothing iterates: one job, whatever the graph's diameter.

    Examples
    --------
    >>> v = spark.createDataFrame([(1,), (2,), (3,), (4,), (5,)], ["id"])
    >>> e = spark.createDataFrame([(2, 1), (3, 4)], ["src", "dst"])
    >>> rows = weakly_connected_components(spark, (v, e)).orderBy("vertex").collect()
    >>> [(r.vertex, r.component) for r in rows]
    [(1, 1), (2, 1), (3, 3), (4, 3), (5, 5)]
    """
    arrays = array_graph(spark, graph)
    ids = arrays.ids
    n = len(ids)
    if n == 0:
        vertices, _ = graph_frames(spark, graph)
        return vertices.select("vertex", vertices["vertex"].alias("component"))
    parts = partitions or partitions_for(spark, n + arrays.edge_rows())
    # any split of the edges will do (see the module)
    with arrays.blocks({"src": "src", "dst": "dst"}, _local_forest(ids), parts) as forests:
        found = forests.collect()
    touched = np.concatenate([f[0] for f in found] + [np.empty(0, np.int64)])
    roots = np.concatenate([f[1] for f in found] + [np.empty(0, np.int64)])
    smallest = _smallest_member(n, touched, roots)
    return vertex_frame(spark, ids, "component", ids[smallest])


def _local_forest(ids: np.ndarray) -> Any:
    def build(columns: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        if not len(columns["src"]):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        src = np.searchsorted(ids, columns["src"])
        dst = np.searchsorted(ids, columns["dst"])
        touched, local = np.unique(np.concatenate([src, dst]), return_inverse=True)
        half = len(src)
        smallest = _smallest_member(len(touched), local[:half], local[half:])
        return touched, touched[smallest]  # each touched vertex -> its local component's min

    return build


def _smallest_member(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each of ``n`` vertices (dense indices) linked by the pairs ``(a, b)``: the
    smallest index in its component."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    links = coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(n, n)).tocsr()
    _, labels = connected_components(links, directed=False)
    # vertices in index order: a label's first occurrence is its smallest member
    _, first = np.unique(labels, return_index=True)
    return first[labels]
