"""What one ``ShardCore.handle`` call logs, gathered while it runs and encoded at its end:
one block per log (:class:`BlockWriter`), and the schema of everything the shard ever
logged (:class:`SchemaTracker`). The format itself is :mod:`shards.codec`'s."""

from __future__ import annotations

from itertools import repeat
from typing import Any

from shards.codec import (
    CURSOR_KEY,
    SCHEMA_KEY,
    BlockHeader,
    EventBlock,
    Run,
    Schema,
    TemporalEntries,
    encode_commands,
    encode_events,
    encode_header,
    encode_schema,
)
from shards.logstore import LogBatch, LogName
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["BlockWriter", "SchemaTracker"]


class BlockWriter:
    """The entries of one ``handle`` call, encoded as one block per log at its end."""

    __slots__ = (
        "first",
        "events",
        "runs",
        "sends",
        "edges",
        "created",
        "deleted",
        "failed",
        "dropped",
        "late",
        "vectors",
        "seq0",
        "temporal",
        "temporal_type",
    )

    def __init__(self, first: int, seq0: list[int]) -> None:
        self.first = first
        self.events: list[tuple[Any, ...]] = []  # (vertex, clock, time, state, edge, in)
        self.runs: list[Run] = []
        self.sends: dict[int, tuple[tuple[int, int, VertexId, Any], ...]] = {}
        self.edges: dict[int, tuple[tuple[VertexId, dict[str, Any] | None], ...]] = {}
        self.created: dict[int, str] = {}
        self.deleted: list[int] = []
        self.failed: dict[int, str] = {}
        self.dropped: dict[int, tuple[str, ...]] = {}
        self.late: dict[int, float] = {}
        self.vectors: list[tuple[int, tuple[int, ...]]] = []
        self.seq0 = seq0
        self.temporal: list[tuple[int, TemporalEntries]] = []
        self.temporal_type: str | None = None

    def add_temporal(self, entries: TemporalEntries, created_type: str | None) -> None:
        """Log ``entries`` (the next ones of the block) as their columns; those that
        created their vertex created one of ``created_type``."""
        if created_type is not None:
            self.temporal_type = created_type
        self.temporal.append((len(self.events), entries))
        self.events.extend(repeat(_PLACEHOLDER, len(entries)))

    def encode(self, frontier: float, cursor: bytes, schema: SchemaTracker) -> LogBatch:
        vertex, clock, time, state, edge, ins = zip(*self.events, strict=True)
        last = self.first + len(vertex) - 1
        spans = [(start, len(entries)) for start, entries in self.temporal]
        temporal = TemporalEntries.concat([e for _, e in self.temporal]) if spans else None
        new_schema = schema.note(vertex, state, edge, self.edges, self.created, temporal)
        low, high = _time_range(time, temporal)
        events = EventBlock(
            self.first,
            vertex,  # type: ignore[arg-type]
            clock,  # type: ignore[arg-type]
            time,  # type: ignore[arg-type]
            state,  # type: ignore[arg-type]
            edge,  # type: ignore[arg-type]
            ins,  # type: ignore[arg-type]
            self.seq0,
            b"",
            self.edges,
            self.created,
            self.deleted,
            self.failed,
            self.dropped,
            self.late,
        )
        header = BlockHeader(self.first, last, low, high, frontier, self.vectors)
        meta = {CURSOR_KEY: cursor}
        if new_schema is not None:
            meta[SCHEMA_KEY] = new_schema
        return LogBatch(
            {
                LogName.COMMANDS: [(last, encode_commands(self.first, self.runs))],
                LogName.EVENTS: [
                    (last, encode_events(events, self.sends, spans, temporal, self.temporal_type))
                ],
                LogName.CLOCKS: [(last, encode_header(header))],
            },
            meta,
        )


_PLACEHOLDER = (None, None, None, None, None, None)
"""An entry logged as columns, in :attr:`BlockWriter.events` (left out when encoded)."""


def _time_range(time: tuple[Any, ...], temporal: TemporalEntries | None) -> tuple[Any, Any]:
    """The earliest and latest entry time of a block (its placeholders left out)."""
    if temporal is None:
        return min(time), max(time)
    rows = [t for t in time if t is not None]
    low, high = temporal.time.min().item(), temporal.time.max().item()
    return min([*rows, low]), max([*rows, high])


class SchemaTracker:
    """The kinds of every state key and edge property this shard ever logged (see
    :class:`~shards.codec.Schema`), noted block by block; the common case -- a key
    whose value has the same Python type as last time -- costs one lookup."""

    __slots__ = ("schema", "_vertex", "_edge")

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._vertex: dict[str, type] = {}
        self._edge: dict[str, type] = {}

    def note(
        self,
        vertex: tuple[VertexId, ...],
        states: tuple[dict[str, Any] | None, ...],
        edge: tuple[tuple[VertexId, dict[str, Any] | None] | None, ...],
        edges: dict[int, tuple[tuple[VertexId, dict[str, Any] | None], ...]],
        created: dict[int, str],
        temporal: TemporalEntries | None = None,
    ) -> bytes | None:
        """Note a block's columns (and its entries logged as columns); the encoded schema
        if it changed, else ``None``."""
        schema = self.schema
        changed = False
        seen = self._vertex
        for delta in states:
            if delta:
                for key, value in delta.items():
                    if seen.get(key) is not type(value):
                        changed |= schema.note(seen, "vertex", {key: value})
        seen = self._edge
        for one in edge:
            if one is not None and one[1] is not None:
                for key, value in one[1].items():
                    if seen.get(key) is not type(value):
                        changed |= schema.note(seen, "edge", {key: value})
        for ops in edges.values():
            for _, props in ops:
                if props is not None:
                    changed |= schema.note(seen, "edge", props)
        if schema.ids == "int" and any(type(vertex[i]) is not int for i in created):
            self.schema = schema = schema._replace(ids="str")
            changed = True
        if temporal is not None:  # after the rows: their vertices were created by rows
            changed |= self._note_temporal(temporal)
        return encode_schema(self.schema) if changed else None

    def _note_temporal(self, entries: TemporalEntries) -> bool:
        """Note the keys and value types of temporal entries."""
        state_keys, edge_keys = entries.keys()
        scalar = entries.time[:1].tolist()[0]
        kinds = {"first_ts": scalar, "last_ts": scalar}
        changed = False
        for key in state_keys:
            value = kinds.get(key, 0)
            if self._vertex.get(key) is not type(value):
                changed |= self.schema.note(self._vertex, "vertex", {key: value})
        for key in edge_keys:
            value = kinds.get(key, 0)
            if self._edge.get(key) is not type(value):
                changed |= self.schema.note(self._edge, "edge", {key: value})
        return changed


mark_module_api(globals())
