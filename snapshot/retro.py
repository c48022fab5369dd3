"""Retrospective queries on one vertex: its state at a past time or clock, its history.

They read the log of the vertex's shard only (read-only), never the live graph, through
the shard's replay loop (:class:`shards.replay.LogReplay`), which decodes only the blocks
holding an entry with a time at or before the one asked about.
"""

from __future__ import annotations

import math
from typing import Any

from shards.logstore import LogStore
from shards.records import VertexRecord
from shards.replay import LogReplay
from vertex.records import VertexId

__all__ = ["vertex_history", "vertex_state_at"]


def vertex_history(
    store: LogStore, vertex_id: VertexId, t0: float = -math.inf, t1: float = math.inf
) -> list[dict[str, Any]]:
    """Every state ``vertex_id`` had with event time in ``[t0, t1]``, oldest first.

    Each item: ``wc`` (shard worker clock), ``clock``, ``time``, ``type``, ``state``,
    ``out_edges``, ``in_edges``, or ``deleted: True`` for its deletion. The state the
    vertex already had at ``t0`` comes first (with its own, earlier, time) if it existed.
    """
    history: list[dict[str, Any]] = []
    if t0 > -math.inf:
        before = LogReplay(store, at=math.nextafter(t0, -math.inf), only=(vertex_id,)).run()
        if vertex_id in before:
            history.append(_state(before[vertex_id], wc=None))
    for step in LogReplay(store, at=t1, start_before=t0, only=(vertex_id,)).entries():
        if step.time < t0 or step.clock == 0:
            continue
        if step.deleted:
            history.append({"wc": step.wc, "clock": step.clock, "time": step.time, "deleted": True})
        elif step.record is not None and step.error is None:
            history.append(_state(step.record, step.wc))
    return history


def vertex_state_at(
    store: LogStore, vertex_id: VertexId, *, at: float | None = None, bound: int | None = None
) -> dict[str, Any] | None:
    """The state of ``vertex_id`` after every entry of its shard up to worker clock
    ``bound`` with time ``<= at``; ``None`` if it did not exist then."""
    record = LogReplay(store, bound=bound, at=at, only=(vertex_id,)).run().get(vertex_id)
    return None if record is None else _state(record, None)


def _state(record: VertexRecord, wc: int | None) -> dict[str, Any]:
    state = record.snapshot()
    state["wc"] = wc
    return state
