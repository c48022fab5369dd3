"""Encoding of log entries and messages.

Log values are pickles (protocol 5) of tuples of builtin values only -- no chronoray
class is pickled -- so a plain Python process with ``rocksdict`` can decode a shard's log
without chronoray installed (as long as vertex states hold builtin values). The
field order below is the on-disk format; :data:`FORMAT_VERSION` names it.

Messages travel as tuples ``(kind, dst, src, payload, ts)``; ``kind`` is one of the
``K_*`` constants.
"""

from __future__ import annotations

import pickle
from typing import Any, NamedTuple

from vertex.records import Update, UpdateKind, VertexId

__all__ = [
    "FORMAT_VERSION",
    "K_UPDATE",
    "K_USER",
    "K_EDGE_ADDED",
    "K_EDGE_UPDATED",
    "K_EDGE_REMOVED",
    "K_EDGE_REJECTED",
    "K_TARGET_DELETED",
    "K_SPAWN",
    "KIND_NAMES",
    "Message",
    "CommandEntry",
    "EventEntry",
    "encode",
    "decode_command",
    "decode_event",
    "update_to_plain",
    "update_from_plain",
]

FORMAT_VERSION = 1

K_UPDATE = 0  # payload: a stream Update (logged as a plain tuple)
K_USER = 1  # payload: dict sent by ctx.send
K_EDGE_ADDED = 2  # at the target; payload: edge props
K_EDGE_UPDATED = 3  # at the target; payload: edge props
K_EDGE_REMOVED = 4  # at the target; payload: None
K_EDGE_REJECTED = 5  # back at the source; payload: None
K_TARGET_DELETED = 6  # at each source of an incoming edge; payload: None
K_SPAWN = 7  # payload: (vertex_type, props)

KIND_NAMES = {
    K_UPDATE: "update",
    K_USER: "message",
    K_EDGE_ADDED: "edge_added",
    K_EDGE_UPDATED: "edge_updated",
    K_EDGE_REMOVED: "edge_removed",
    K_EDGE_REJECTED: "edge_rejected",
    K_TARGET_DELETED: "target_deleted",
    K_SPAWN: "spawn",
}

Message = tuple[int, VertexId, "VertexId | None", Any, float]


class CommandEntry(NamedTuple):
    """A command-log entry: the message a behavior execution handled.

    ``channel``/``position`` identify where it came from (``src:<source>`` with the
    stream offset, or ``shard:<k>`` with that channel's message sequence number).
    """

    vertex: VertexId
    clock: int
    kind: int
    sender: VertexId | None
    payload: Any
    ts: float
    channel: str
    position: int


class EventEntry(NamedTuple):
    """An event-log entry: the outcome of one behavior execution.

    ``checkpoint`` is ``None`` or the vertex's full state after the execution as
    ``(type_name, state, out_edges, in_edges)`` -- written at creation and every
    ``checkpoint_interval`` executions of the vertex; otherwise ``state_set``/``state_del``
    are the state delta. ``edge_ops`` (outgoing edges set to props, or removed: ``None``)
    and ``in_ops`` (the same for incoming edge records) are always given, so a replay can
    tell which edges an execution changed. ``sends`` are the messages it emitted as
    ``(dest_shard, seq, message)``. A failed execution has ``error`` set and no effects.
    """

    vertex: VertexId
    clock: int
    time: float
    checkpoint: tuple[str, dict[str, Any], dict[Any, Any], dict[Any, Any]] | None
    state_set: dict[str, Any]
    state_del: tuple[str, ...]
    edge_ops: tuple[tuple[VertexId, dict[str, Any] | None], ...]
    in_ops: tuple[tuple[VertexId, dict[str, Any] | None], ...]
    sends: tuple[tuple[int, int, Message], ...]
    error: str | None
    deleted: bool


def encode(entry: tuple[Any, ...]) -> bytes:
    """Serialize a log entry (a plain tuple)."""
    return pickle.dumps(tuple(entry), protocol=5)


def decode_command(data: bytes) -> CommandEntry:
    """Decode a command-log value."""
    return CommandEntry(*pickle.loads(data))


def decode_event(data: bytes) -> EventEntry:
    """Decode an event-log value."""
    return EventEntry(*pickle.loads(data))


def update_to_plain(update: Update) -> tuple[Any, ...]:
    """An update as a tuple of builtins (its logged form).

    >>> u = Update.add_edge(1, 2, 5, weight=3).with_origin("f.txt", 9)
    >>> update_from_plain(update_to_plain(u)) == u
    True
    """
    return (
        update.kind.value,
        update.vertex,
        update.ts,
        update.dst,
        dict(update.props),
        update.vertex_type,
        update.source,
        update.offset,
    )


def update_from_plain(plain: tuple[Any, ...]) -> Update:
    """Inverse of :func:`update_to_plain`."""
    kind, vertex, ts, dst, props, vertex_type, source, offset = plain
    return Update(UpdateKind(kind), vertex, ts, dst, props, vertex_type, source, offset)
