"""What one ``ShardCore.handle`` call logs, gathered while it runs and encoded at its end:
one block per log (:class:`BlockWriter`), and the schema of everything the shard ever
logged (:class:`SchemaTracker`). The format itself is :mod:`shards.codec`'s."""

from __future__ import annotations

from typing import Any

from shards.codec import (
    CURSOR_KEY,
    SCHEMA_KEY,
    BlockHeader,
    EventBlock,
    Run,
    Schema,
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

    def encode(self, frontier: float, cursor: bytes, schema: SchemaTracker) -> LogBatch:
        vertex, clock, time, state, edge, ins = zip(*self.events, strict=True)
        last = self.first + len(vertex) - 1
        new_schema = schema.note(vertex, state, edge, self.edges, self.created)
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
        header = BlockHeader(self.first, last, min(time), max(time), frontier, self.vectors)
        meta = {CURSOR_KEY: cursor}
        if new_schema is not None:
            meta[SCHEMA_KEY] = new_schema
        return LogBatch(
            {
                LogName.COMMANDS: [(last, encode_commands(self.first, self.runs))],
                LogName.EVENTS: [(last, encode_events(events, self.sends))],
                LogName.CLOCKS: [(last, encode_header(header))],
            },
            meta,
        )


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
    ) -> bytes | None:
        """Note a block's columns; the encoded schema if it changed, else ``None``."""
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
        return encode_schema(schema) if changed else None


mark_module_api(globals())
