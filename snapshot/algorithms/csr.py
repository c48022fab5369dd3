"""A snapshot as dense arrays: the input of every vectorized kernel.

:class:`GraphIndex` maps a snapshot's vertex ids (its vertex table plus every edge
endpoint, as ``networkx.DiGraph`` built from both sees them) to ``0..n-1`` in ascending id
order and holds the graph's **distinct** ``(src, dst)`` pairs as index arrays sorted by
``(src, dst)``, plus the scipy sparse adjacency matrices the kernels need. It is built
from the snapshot's Arrow columns only (``pyarrow.compute`` and numpy): no Python object
per vertex or edge. A pair that occurs in several rows counts once and keeps the
properties of its last row, as ``networkx.DiGraph.add_edge`` does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

__all__ = ["GraphIndex", "graph_tables", "graph_size"]


def graph_tables(graph: Any) -> tuple[pa.Table, pa.Table]:
    """``(vertices, edges)`` of a :class:`~snapshot.Snapshot` (fetched from the object
    store) or of a ``(vertices, edges)`` pair of Arrow tables."""
    if isinstance(graph, tuple) and len(graph) == 2:
        return graph[0], graph[1]
    return graph.vertices(), graph.edges()


def graph_size(graph: Any) -> tuple[int, int]:
    """``(vertex rows, edge rows)`` of a snapshot (from its metadata, nothing fetched) or
    of a pair of tables."""
    if isinstance(graph, tuple) and len(graph) == 2:
        return graph[0].num_rows, graph[1].num_rows
    return graph.meta.vertices, graph.meta.edges


def _flat(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


@dataclass
class GraphIndex:
    """Dense ids and distinct pairs of one graph (see the module docstring).

    ``ids``: the vertex ids, ascending (an Arrow array: ``int64`` or strings);
    ``src``/``dst``: ``int64`` positions in ``ids`` of every distinct pair, sorted by
    ``(src, dst)``; ``rows``: the edge-table row each pair was taken from.
    """

    ids: pa.Array
    src: np.ndarray
    dst: np.ndarray
    rows: np.ndarray
    edges: pa.Table = field(repr=False)

    @classmethod
    def of(cls, graph: Any) -> GraphIndex:
        """Index a snapshot or a ``(vertices, edges)`` pair of tables.

        >>> v, e = pa.table({"id": [5, 1]}), pa.table({"src": [1, 1, 5], "dst": [9, 9, 1]})
        >>> g = GraphIndex.of((v, e))
        >>> g.ids.to_pylist(), g.src.tolist(), g.dst.tolist(), g.rows.tolist()
        ([1, 5, 9], [0, 1], [2, 0], [1, 2])
        """
        vertices, edges = graph_tables(graph)
        return cls.of_tables(vertices, edges)

    @classmethod
    def of_tables(cls, vertices: pa.Table, edges: pa.Table) -> GraphIndex:
        """Index a ``(vertices, edges)`` pair of tables."""
        known = _flat(vertices["id"]) if "id" in vertices.column_names else pa.array([])
        src_ids, dst_ids = _flat(edges["src"]), _flat(edges["dst"])
        if len(known) and len(src_ids) and known.type != src_ids.type:
            raise TypeError(f"vertex ids are {known.type} but edge endpoints are {src_ids.type}")
        pieces = [a for a in (known, src_ids, dst_ids) if len(a)]
        if not pieces:
            ids = pa.array([], pa.int64())
        else:
            unique = pc.unique(pa.concat_arrays(pieces))
            ids = unique.take(pc.array_sort_indices(unique))
        n = len(ids)
        src = pc.index_in(src_ids, value_set=ids).to_numpy(zero_copy_only=False)
        dst = pc.index_in(dst_ids, value_set=ids).to_numpy(zero_copy_only=False)
        src, dst = src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False)
        key = src * n + dst
        # the last row of a repeated pair wins: unique's first index in the reversed keys
        unique_keys, last = np.unique(key[::-1], return_index=True)
        rows = (len(key) - 1 - last).astype(np.int64)
        return cls(ids, unique_keys // max(n, 1), unique_keys % max(n, 1), rows, edges)

    @property
    def n(self) -> int:
        """Number of vertices."""
        return len(self.ids)

    @property
    def m(self) -> int:
        """Number of distinct pairs."""
        return len(self.src)

    @functools.cached_property
    def indptr(self) -> np.ndarray:
        """CSR row pointers of the pairs (``src`` is sorted): vertex ``v``'s out-pairs are
        ``indptr[v]:indptr[v + 1]``."""
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.src, minlength=self.n), out=indptr[1:])
        return indptr

    def adjacency(self, data: np.ndarray | None = None) -> sp.csr_array:
        """The ``n x n`` adjacency matrix of the distinct pairs (CSR, rows = sources), with
        ``data`` as entries (default 1)."""
        values = np.ones(self.m, dtype=np.float64) if data is None else data
        return sp.csr_array((values, self.dst, self.indptr), shape=(self.n, self.n))

    def weights(self, column: str) -> np.ndarray:
        """Edge column ``column`` of every pair as float64 (null counts 1, as networkx
        counts a missing weight); refuses a column that does not exist or is not numeric."""
        if column not in self.edges.column_names:
            raise ValueError(
                f"edge column {column!r} does not exist; edges have {self.edges.column_names}"
            )
        values = self.edges[column]
        if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
            raise ValueError(f"edge column {column!r} is {values.type}, not a number")
        out = pc.fill_null(_flat(values), 1).to_numpy(zero_copy_only=False)
        return out.astype(np.float64)[self.rows]

    def out_degree(self) -> np.ndarray:
        """Distinct out-neighbours of every vertex."""
        return np.bincount(self.src, minlength=self.n)

    def in_degree(self) -> np.ndarray:
        """Distinct in-neighbours (followers) of every vertex."""
        return np.bincount(self.dst, minlength=self.n)

    @functools.cached_property
    def undirected(self) -> sp.csr_array:
        """The undirected simple graph: symmetric 0/1 CSR, no self-loops."""
        keep = self.src != self.dst
        a, b = self.src[keep], self.dst[keep]
        rows, cols = np.concatenate([a, b]), np.concatenate([b, a])
        matrix = sp.csr_array(
            (np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(self.n, self.n)
        )
        matrix.sum_duplicates()
        matrix.data[:] = 1.0
        return matrix

    def table(self, **columns: Any) -> pa.Table:
        """A result table: ``id`` then ``columns`` (numpy arrays or Arrow arrays, one
        value per vertex, in id order)."""
        return pa.table({"id": self.ids, **columns})
