"""Retrospective queries on one vertex: its state at a past time or clock, its history.

They read the log of the vertex's shard only (read-only), never the live graph.
"""

from __future__ import annotations

import math
from typing import Any

from shards.codec import decode_event
from shards.core import VertexRecord, replay_event
from shards.logstore import LogName, LogStore
from snapshot.reconstruct import start_checkpoint
from vertex.records import VertexId

__all__ = ["vertex_history", "vertex_state_at"]


def _start(
    store: LogStore, vertex_id: VertexId, before: float, bound: int
) -> tuple[int, dict[VertexId, VertexRecord]]:
    """The newest shard checkpoint wholly before the question, with only the vertex kept."""
    start, vertices = start_checkpoint(store, bound, before)
    return start, {vertex_id: vertices[vertex_id]} if vertex_id in vertices else {}


def vertex_history(
    store: LogStore, vertex_id: VertexId, t0: float = -math.inf, t1: float = math.inf
) -> list[dict[str, Any]]:
    """Every state ``vertex_id`` had with event time in ``[t0, t1]``, oldest first.

    Each item: ``wc`` (shard worker clock), ``clock``, ``time``, ``type``, ``state``,
    ``out_edges``, ``in_edges``, or ``deleted: True`` for its deletion. The state the
    vertex already had at ``t0`` comes first (with its own, earlier, time) if it existed.
    """
    bound = store.last_seq(LogName.EVENTS)
    start, vertices = _start(store, vertex_id, t0, bound)
    history: list[dict[str, Any]] = []
    seeded = False
    for wc, data in store.scan(LogName.EVENTS, start + 1):
        entry = decode_event(data)
        if entry.vertex != vertex_id:
            continue
        if entry.time > t1:
            break
        if entry.time >= t0 and not seeded:
            seeded = True
            if vertex_id in vertices:
                history.append(_state(vertices[vertex_id], wc=None))
        replay_event(vertices, entry)
        if entry.time < t0 or entry.clock == 0:
            continue
        if entry.deleted:
            history.append({"wc": wc, "clock": entry.clock, "time": entry.time, "deleted": True})
        elif vertex_id in vertices and entry.error is None:
            history.append(_state(vertices[vertex_id], wc))
    if not seeded and vertex_id in vertices:
        history.append(_state(vertices[vertex_id], wc=None))
    return history


def vertex_state_at(
    store: LogStore, vertex_id: VertexId, *, at: float | None = None, bound: int | None = None
) -> dict[str, Any] | None:
    """The state of ``vertex_id`` after every entry of its shard up to worker clock
    ``bound`` with time ``<= at``; ``None`` if it did not exist then."""
    last = store.last_seq(LogName.EVENTS)
    bound = last if bound is None else min(bound, last)
    limit = math.inf if at is None else at
    start, vertices = _start(store, vertex_id, math.nextafter(limit, math.inf), bound)
    for _, data in store.scan(LogName.EVENTS, start + 1, bound + 1):
        entry = decode_event(data)
        if entry.vertex == vertex_id and entry.time <= limit:
            replay_event(vertices, entry)
    record = vertices.get(vertex_id)
    return None if record is None else _state(record, None)


def _state(record: VertexRecord, wc: int | None) -> dict[str, Any]:
    state = record.snapshot()
    state["wc"] = wc
    return state
