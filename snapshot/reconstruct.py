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
and replays event entries after it, reading the log only.
"""

from __future__ import annotations

import math
import pickle
import time
from dataclasses import dataclass, field
from typing import Any

from shards.codec import decode_event
from shards.core import (
    VertexRecord,
    list_shard_checkpoints,
    load_shard_checkpoint,
    replay_event,
)
from shards.logstore import LogName, LogStore
from vertex.records import VertexId

__all__ = ["ShardPart", "consistent_bound", "rebuild_part", "start_checkpoint"]


@dataclass
class ShardPart:
    """One shard's vertices at a cut, and how much work rebuilding them took."""

    shard: int
    vertices: dict[VertexId, VertexRecord]
    bound: int  # highest worker clock included
    replayed: int = 0  # event entries replayed
    checkpoint: int = 0  # worker clock of the shard checkpoint started from (0: none)
    seconds: float = 0.0
    windowed: bool = False
    window_edges: dict[tuple[VertexId, VertexId], list[float]] = field(default_factory=dict)
    window_vertices: set[VertexId] = field(default_factory=set)


def consistent_bound(store: LogStore, shard: int, clock: tuple[int, ...]) -> int:
    """The largest worker clock ``b <= clock[shard]`` such that every entry of this shard
    up to ``b`` has a vector clock within ``clock`` (so including them keeps the cut
    consistent)."""
    bound = min(clock[shard], store.last_seq(LogName.EVENTS))
    for wc, data in store.scan(LogName.CLOCKS, 1, bound + 1):
        vector = pickle.loads(data)
        if any(v > c for j, (v, c) in enumerate(zip(vector, clock, strict=True)) if j != shard):
            return wc - 1
    return bound


def start_checkpoint(
    store: LogStore, bound: int, before: float
) -> tuple[int, dict[VertexId, VertexRecord]]:
    """The newest shard checkpoint at worker clock ``<= bound`` all of whose entries have
    event times ``< before``, as ``(worker clock, vertices)``; ``(0, {})`` if none."""
    start = 0
    for wc, max_time in list_shard_checkpoints(store):
        if wc <= bound and max_time < before:
            start = wc
    if not start:
        return 0, {}
    checkpoint = load_shard_checkpoint(store, start)
    assert checkpoint is not None and checkpoint.wc == start
    return start, checkpoint.vertices


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
    With ``since``, also count per edge the changes with time in ``[since, at]``."""
    started = time.perf_counter()
    last = store.last_seq(LogName.EVENTS)
    bound = last if bound is None else min(bound, last)
    limit = math.inf if at is None else at
    # a window counts changes from `since` on: start before any of them
    before = math.nextafter(limit, math.inf) if since is None else min(limit, since)
    start_from, vertices = start_checkpoint(store, bound, before)
    part = ShardPart(shard, vertices, 0, checkpoint=start_from, windowed=since is not None)
    window = part.window_edges
    for wc, data in store.scan(LogName.EVENTS, start_from + 1, bound + 1):
        entry = decode_event(data)
        if entry.time > limit:
            continue
        replay_event(vertices, entry)
        part.replayed += 1
        part.bound = wc
        if since is not None and entry.time >= since and entry.error is None and entry.clock:
            part.window_vertices.add(entry.vertex)
            for dst, props in entry.edge_ops:
                if props is not None:
                    times = window.setdefault((entry.vertex, dst), [0, entry.time, entry.time])
                    times[0] += 1
                    times[2] = entry.time
    part.bound = max(part.bound, start_from)
    part.seconds = time.perf_counter() - started
    return part


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
        row.update(_prefixed(record.state, ("id", "type", "clock", "time")))
        vertex_rows.append(row)
        for dst, props in record.out_edges.items():
            erow: dict[str, Any] = {"src": vid, "dst": dst}
            erow.update(_prefixed(props, ("src", "dst")))
            if windowed:
                counts = part.window_edges.get((vid, dst))
                if counts is None:
                    continue
                erow["window_count"], erow["window_first"], erow["window_last"] = counts
            edge_rows.append(erow)
    return vertex_rows, edge_rows


def _prefixed(values: dict[str, Any], reserved: tuple[str, ...]) -> dict[str, Any]:
    """State keys as columns; a key that clashes with a fixed column gets ``state_``."""
    return {(f"state_{k}" if k in reserved else str(k)): v for k, v in values.items()}
