"""Rebuilding one shard's part of a past graph from its log (pure: no Ray).

A *cut* selects, on every shard, the log entries that belong to a global state:

* a **clock cut** ``clock=(c_0, ..., c_{n-1})`` keeps, on shard ``k``, the prefix of its
  log up to worker clock ``c_k``, shrunk to the largest prefix whose entries' vector clocks
  stay within the cut (:func:`consistent_bound`). An entry's vector covers its causal past,
  so the shrunk cut never holds a receipt without its sending;
* a **time cut** ``at=T`` keeps every entry with event time ``<= T``. Event times never
  decrease along a vertex's history and are never smaller than the time of the message
  that caused them, so this set is consistent too;
* a **window** ``(t0, t1)`` is the time cut at ``t1`` restricted to the vertices and edges
  that changed at a time in ``[t0, t1]``, with per-edge change counts in the window.

Reconstruction starts from the newest shard checkpoint that lies wholly inside the cut
and replays event entries after it, reading the log only, through the shard's one replay
loop (:class:`shards.replay.LogReplay`): a time cut decodes only the blocks holding an
entry with time ``<= T``, so an early cut reads a prefix of the log.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from shards.codec import Schema
from shards.logstore import LogStore
from shards.records import VertexRecord
from shards.replay import LogReplay, consistent_bound, paused_gc, start_checkpoint
from snapshot.tables import EDGE_FIXED, VERTEX_FIXED, WINDOW_COLUMNS, Columns, column_name
from vertex.records import VertexId

__all__ = [
    "ShardPart",
    "consistent_bound",
    "part_columns",
    "part_rows",
    "rebuild_part",
    "start_checkpoint",
]


@dataclass
class ShardPart:
    """One shard's vertices at a cut, and how much work rebuilding them took."""

    shard: int
    vertices: dict[VertexId, VertexRecord]
    bound: int  # highest worker clock included
    replayed: int = 0  # event entries in the cut after the start checkpoint
    checkpoint: int = 0  # worker clock of the shard checkpoint started from (0: none)
    seconds: float = 0.0
    decoded: int = 0  # event entries decoded to get there
    windowed: bool = False
    window_edges: dict[tuple[VertexId, VertexId], list[float]] = field(default_factory=dict)
    window_vertices: set[VertexId] = field(default_factory=set)


def rebuild_part(
    store: LogStore,
    shard: int,
    *,
    bound: int | None = None,
    at: float | None = None,
    since: float | None = None,
) -> ShardPart:
    """Rebuild ``shard`` from ``store`` at a cut: entries up to worker clock ``bound``
    (``None``: the whole log) and, if ``at`` is given, only those with time ``<= at``.
    With ``since``, also count per edge the changes with time in ``[since, at]``. The
    vertices' incoming edges are left out (a snapshot's tables do not hold them)."""
    started = time.perf_counter()
    limit = math.inf if at is None else at
    # a window counts changes from `since` on: start before any of them
    before = math.nextafter(limit, math.inf) if since is None else min(limit, since)
    replay = LogReplay(store, bound=bound, at=at, start_before=before, in_edges=False)
    part = ShardPart(shard, replay.vertices, 0, checkpoint=replay.start, windowed=since is not None)
    if since is None:
        replay.run()
    else:
        _count_window(replay, since, part)
    part.vertices = replay.vertices
    part.replayed = replay.applied
    part.decoded = replay.decoded
    part.bound = replay.last_applied
    part.seconds = time.perf_counter() - started
    return part


def _count_window(replay: LogReplay, since: float, part: ShardPart) -> None:
    """Replay the cut, counting per edge the changes with time ``>= since``."""
    window = part.window_edges
    with paused_gc():
        for step in replay.entries():
            if step.time < since or not step.acted:
                continue
            part.window_vertices.add(step.vertex)
            for dst, props in step.edges:
                if props is not None:
                    times = window.setdefault((step.vertex, dst), [0, step.time, step.time])
                    times[0] += 1
                    times[2] = step.time


def part_rows(part: ShardPart) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Plain rows of a part: ``(vertices, edges)``. Window parts keep only what changed
    in the window and add ``window_count``/``window_first``/``window_last`` to edges."""
    windowed = part.windowed
    vertex_rows = []
    edge_rows = []
    for vid, record in part.vertices.items():
        if windowed and vid not in part.window_vertices:
            continue
        row: dict[str, Any] = {"id": vid, "type": record.type_name, "clock": record.clock}
        row["time"] = record.time
        row.update(_prefixed(record.state, VERTEX_FIXED))
        vertex_rows.append(row)
        for dst, props in record.out_edges.items():
            erow: dict[str, Any] = {"src": vid, "dst": dst}
            erow.update(_prefixed(props, EDGE_FIXED))
            if windowed:
                counts = part.window_edges.get((vid, dst))
                if counts is None:
                    continue
                erow["window_count"], erow["window_first"], erow["window_last"] = counts
            edge_rows.append(erow)
    return vertex_rows, edge_rows


def _prefixed(values: dict[str, Any], fixed: tuple[str, ...]) -> dict[str, Any]:
    """State keys as columns; a key that clashes with a fixed column gets ``state_``."""
    return {column_name(k, fixed): v for k, v in values.items()}


def part_columns(part: ShardPart, schema: Schema) -> tuple[Columns, Columns] | None:
    """The columns of a part's tables (:func:`~snapshot.tables.column_tables`): what
    :func:`part_rows` holds, gathered a column at a time (per vertex, not per edge, where
    it can). ``None`` when ``schema`` does not give every key its own column (a key it
    lacks, an id it does not type, two keys in one column): :func:`part_rows` and
    :func:`~snapshot.tables.snapshot_tables` handle those."""
    if not _own_columns(schema):
        return None
    records = part.vertices
    if part.windowed:
        ids = [vid for vid in records if vid in part.window_vertices]
        chosen = [records[vid] for vid in ids]
    else:
        ids, chosen = list(records), list(records.values())
    keys = schema.vertex.keys()
    if not all(record.state.keys() <= keys for record in chosen):
        return None
    vertices: Columns = {
        "id": ids,
        "type": [record.type_name for record in chosen],
        "clock": [record.clock for record in chosen],
        "time": [record.time for record in chosen],
    }
    for key in schema.vertex:
        vertices[column_name(key, VERTEX_FIXED)] = [record.state.get(key) for record in chosen]
    edges = _edge_columns(part, ids, chosen, schema)
    if edges is None or (schema.ids == "int" and not _all_ints(ids, edges["dst"])):
        return None
    return vertices, edges


def _own_columns(schema: Schema) -> bool:
    """Whether every key of ``schema`` has a column of its own."""
    for kinds, fixed, taken in (
        (schema.vertex, VERTEX_FIXED, set(VERTEX_FIXED)),
        (schema.edge, EDGE_FIXED, set(EDGE_FIXED + WINDOW_COLUMNS)),
    ):
        names = {column_name(key, fixed) for key in kinds}
        if len(names) < len(kinds) or names & taken:
            return False
    return True


def _edge_columns(
    part: ShardPart, ids: list[VertexId], chosen: list[VertexRecord], schema: Schema
) -> Columns | None:
    """The edge columns of the vertices ``ids`` (records ``chosen``); ``None`` if an
    edge has a property ``schema`` lacks."""
    src: list[Any] = []
    dst: list[Any] = []
    props: list[dict[str, Any]] = []
    window: Columns = {name: [] for name in WINDOW_COLUMNS}
    if part.windowed:
        counted = part.window_edges
        for vid, record in zip(ids, chosen, strict=True):
            for other, values in record.out_edges.items():
                counts = counted.get((vid, other))
                if counts is not None:
                    src.append(vid)
                    dst.append(other)
                    props.append(values)
                    for column, value in zip(window.values(), counts, strict=True):
                        column.append(value)
    else:
        for vid, record in zip(ids, chosen, strict=True):
            out = record.out_edges
            if out:
                src.extend([vid] * len(out))
                dst.extend(out)
                props.extend(out.values())
    keys = schema.edge.keys()
    if not all(values.keys() <= keys for values in props):
        return None
    edges: Columns = {"src": src, "dst": dst}
    for key in schema.edge:
        edges[column_name(key, EDGE_FIXED)] = [values.get(key) for values in props]
    if part.windowed:
        edges.update(window)
    return edges


def _all_ints(*columns: list[Any]) -> bool:
    return all(set(map(type, column)) <= {int} for column in columns)
