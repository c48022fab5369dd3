"""Partitioning a snapshot's Arrow data for the processing models (pure: no Ray).

Every model splits a graph into ``P`` partitions by the same stable hash of the vertex id
that places vertices on shards (:func:`shards.routing.stable_hash`), so a vertex lands in
the same partition in every run, process and snapshot. A partition holds its vertices'
rows and their **out-edges** (edges whose source it owns), as Arrow tables.

The vertex set of a graph is the snapshot's vertex table plus every edge endpoint that is
missing from it (with null state), so models see the same vertices as
``networkx.DiGraph`` built from the edges and the vertices.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shards.routing import stable_hash
from snapshot.tables import empty_edges, empty_vertices

__all__ = [
    "GraphPartition",
    "GraphTables",
    "key_partition",
    "partition_graph",
    "partitions_of",
    "split_tables",
    "vertex_views",
]

GraphTables = tuple[pa.Table, pa.Table]
"""``(vertices, edges)`` of a snapshot: what :meth:`Snapshot.vertices`/``edges`` return."""

_VIEW_FIXED = ("id", "type", "clock", "time")


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """:func:`shards.routing.stable_hash` of int64 ids, as array operations (uint64
    arithmetic wraps exactly as its ``& _MASK`` does).

    >>> ids = np.array([0, 1, -5, 2**62, 123456789], dtype=np.int64)
    >>> _splitmix64(ids).tolist() == [stable_hash(int(v)) for v in ids]
    True
    """
    with np.errstate(over="ignore"):
        z = values.astype(np.int64).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def partitions_of(ids: pa.Array | pa.ChunkedArray | np.ndarray, num_parts: int) -> np.ndarray:
    """The partition of every id (an ``int64`` numpy array), by the shards' stable hash
    (integer ids as array operations; other ids one hash per distinct id).

    >>> partitions_of(pa.array([1, 2, 1]), 4).tolist() == [partitions_of(pa.array([v]), 4)[0]
    ...     for v in (1, 2, 1)]
    True
    >>> partitions_of(np.array(["a", "b"], dtype=object), 3).tolist() == [
    ...     stable_hash("a") % 3, stable_hash("b") % 3]
    True
    """
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if num_parts == 1:
        return np.zeros(len(ids), dtype=np.int64)
    if isinstance(ids, pa.Array) and pa.types.is_integer(ids.type) and ids.null_count == 0:
        ids = ids.to_numpy()
    if isinstance(ids, np.ndarray) and ids.dtype.kind in "iu":
        return (_splitmix64(ids) % np.uint64(num_parts)).astype(np.int64)
    values = ids.to_pylist() if isinstance(ids, pa.Array) else ids.tolist()
    cache: dict[Any, int] = {}
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        part = cache.get(v)
        if part is None:
            part = cache[v] = stable_hash(v) % num_parts
        out[i] = part
    return out


def key_partition(key: Any, num_parts: int) -> int:
    """The partition a MapReduce key is shuffled to: the stable hash for int and str keys,
    a hash of the key's JSON (or ``repr``) text otherwise; the same in every process.

    >>> key_partition(5, 1), key_partition((1, 2), 3) == key_partition((1, 2), 3)
    (0, True)
    """
    if num_parts == 1:
        return 0
    if isinstance(key, int | str) and not isinstance(key, bool):
        return stable_hash(key) % num_parts
    try:
        text = json.dumps(key, sort_keys=True)
    except TypeError:
        text = repr(key)
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % num_parts


@dataclass
class GraphPartition:
    """One partition: the vertices it owns and their out-edges (plus, with
    ``direction="both"``, their in-edges turned around, for undirected algorithms)."""

    index: int
    num_parts: int
    vertices: pa.Table  # id, type, clock, time, state columns
    edges: pa.Table  # src (owned), dst, dst_part, edge property columns

    def edge_chunks(self, chunk_rows: int) -> Iterator[pa.RecordBatch]:
        """The out-edges as record batches of at most ``chunk_rows`` rows (a stream)."""
        yield from self.edges.to_batches(max_chunksize=chunk_rows)


def split_tables(
    vertices: pa.Table, edges: pa.Table, num_parts: int, *, direction: str = "out"
) -> list[GraphTables]:
    """Split one piece of a graph (e.g. one shard's part of a snapshot) into ``num_parts``
    ``(vertices, edges)`` pieces by vertex partition; edges go with their source (and
    also, turned around, with their destination when ``direction="both"``, flagged in a
    ``reversed`` column). Every edge row gets ``dst_part``, the partition of its
    destination. Edge endpoints missing from ``vertices`` get a row with only an ``id`` in
    their partition's piece; such an id may have a full row in another shard's piece, so
    merge pieces with :func:`partition_graph`, which keeps one row per id."""
    if direction not in ("out", "both"):
        raise ValueError(f"direction must be 'out' or 'both', got {direction!r}")
    if edges.num_rows and direction == "both":
        props = [c for c in edges.column_names if c not in ("src", "dst")]
        backward = edges.select(["dst", "src", *props]).rename_columns(["src", "dst", *props])
        forward = edges.append_column("reversed", pa.array([False] * edges.num_rows))
        backward = backward.append_column("reversed", pa.array([True] * edges.num_rows))
        edges = pa.concat_tables([forward, backward], promote_options="permissive")
    endpoints = (
        pa.concat_arrays([edges["src"].combine_chunks(), edges["dst"].combine_chunks()])
        if edges.num_rows
        else pa.array([], type=vertices.schema.field("id").type)
    )
    known = vertices["id"].combine_chunks() if vertices.num_rows else endpoints.slice(0, 0)
    if len(known) and len(endpoints) and known.type != endpoints.type:
        raise TypeError(f"vertex ids are {known.type} but edge endpoints are {endpoints.type}")
    missing = (
        pc.unique(endpoints).filter(pc.invert(pc.is_in(pc.unique(endpoints), value_set=known)))
        if len(endpoints)
        else endpoints
    )
    if len(missing):
        extra = pa.table({"id": missing})
        vertices = pa.concat_tables([vertices, extra], promote_options="permissive")
    vparts = partitions_of(vertices["id"], num_parts)
    src_parts = partitions_of(edges["src"], num_parts)
    dst_parts = partitions_of(edges["dst"], num_parts)
    edges = edges.append_column("dst_part", pa.array(dst_parts, type=pa.int64()))
    pieces = []
    for p in range(num_parts):
        pieces.append(
            (vertices.filter(pa.array(vparts == p)), edges.filter(pa.array(src_parts == p)))
        )
    return pieces


def partition_graph(pieces: list[GraphTables], index: int, num_parts: int) -> GraphPartition:
    """Merge the pieces of partition ``index`` (one per input part) into a partition; a
    vertex that appears in several pieces keeps its fullest row (the one with a type)."""
    vtables = [v for v, _ in pieces]
    etables = [e for _, e in pieces]
    vertices = (
        pa.concat_tables(vtables, promote_options="permissive") if vtables else (empty_vertices())
    )
    if vertices.num_rows and pc.count_distinct(vertices["id"]).as_py() < vertices.num_rows:
        ids = vertices["id"].to_pylist()
        has_type = (
            vertices["type"].is_valid().to_pylist()
            if "type" in vertices.column_names
            else [False] * len(ids)
        )
        keep: dict[Any, int] = {}
        for i, (vid, typed) in enumerate(zip(ids, has_type, strict=True)):
            if vid not in keep or (typed and not has_type[keep[vid]]):
                keep[vid] = i
        if len(keep) < len(ids):
            vertices = vertices.take(pa.array(sorted(keep.values()), type=pa.int64()))
    edges = (
        pa.concat_tables(etables, promote_options="permissive")
        if etables
        else (empty_edges().append_column("dst_part", pa.array([], type=pa.int64())))
    )
    return GraphPartition(index, num_parts, vertices, edges)


def vertex_views(part: GraphPartition) -> dict[Any, dict[str, Any]]:
    """Every owned vertex as a plain dict: its row's non-null columns (``id``, ``type``,
    ``clock``, ``time``, state) plus ``out_edges`` (``dst -> edge properties``).

    >>> v = pa.table({"id": [1, 2], "type": ["T", "T"], "deg": [1, 0]})
    >>> e = pa.table({"src": [1], "dst": [2], "count": [3]})
    >>> part = partition_graph(split_tables(v, e, 1), 0, 1)
    >>> vertex_views(part)[1]
    {'id': 1, 'type': 'T', 'deg': 1, 'out_edges': {2: {'count': 3}}}
    """
    views: dict[Any, dict[str, Any]] = {}
    for row in part.vertices.to_pylist():
        view = {k: v for k, v in row.items() if v is not None}
        view["out_edges"] = {}
        views[row["id"]] = view
    props = [c for c in part.edges.column_names if c not in ("src", "dst", "dst_part")]
    for row in part.edges.select(["src", "dst", *props]).to_pylist():
        src = row.pop("src")
        dst = row.pop("dst")
        views[src]["out_edges"][dst] = {k: v for k, v in row.items() if v is not None}
    return views
