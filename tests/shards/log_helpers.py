"""Shared pieces of the shard tests: what a shard's log holds, decoded."""

from __future__ import annotations

from typing import Any

from shards.codec import decode_events
from shards.logstore import LogName, LogStore


def logged_events(store: LogStore) -> list[tuple[Any, ...]]:
    """Every entry of the ``events`` log, in order, as ``(vertex, clock, time, state,
    edge, in)``."""
    events: list[tuple[Any, ...]] = []
    for _, value in store.scan(LogName.EVENTS, 1):
        block = decode_events(value)
        events += zip(
            block.vertex, block.clock, block.time, block.state, block.edge, block.ins, strict=True
        )
    return events
