"""The gateway's wire format: Python values <-> ``chronoray.v1`` messages, both ways.

The one place that knows how a vertex id, a state value, an event time, an update record,
a vertex, a notification... looks on the wire; the server (:mod:`chronoray.gateway.service`)
and the client (:mod:`chronoray.client`) both use it. No Ray here.

What travels unchanged: ``None``, ``bool``, ``int`` (64-bit), ``float``, ``str``,
``bytes``, lists, and dicts with keys of those kinds; integer times stay integers. A tuple
arrives as a list. A value the server holds that has none of these forms (a set, an object)
is sent as its ``repr`` in the ``repr`` field, which a client can read but never send.

Reading a request checks every field (:func:`update_of`, :func:`vertex_id_of`...): a wrong
one raises :class:`InvalidField`, whose text starts with the field's path in the request
(``batch.records[3].dst: ...``), before anything is applied.

>>> value_of(to_value({"w": [1, 2.5, None, "x"]}))
{'w': [1, 2.5, None, 'x']}
>>> record = to_record(Update.add_edge(1, "b", 10, weight=-2).with_origin("s", 7))
>>> update_of(record, "s", "records[0]")
Update(kind=<UpdateKind.ADD_EDGE: 'add_edge'>, vertex=1, ts=10, dst='b', props={'weight': -2}, \
vertex_type=None, source='s', offset=7)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from chronoray.v1 import gateway_pb2 as pb
from ephemeral.notify import Notification, StreamPosition
from vertex.records import EDGE_KINDS, Update, UpdateKind, VertexId

__all__ = [
    "InvalidField",
    "KINDS",
    "edges_of",
    "notification_of",
    "position_of",
    "time_of",
    "to_edges",
    "to_notification",
    "to_position",
    "to_record",
    "to_time",
    "to_value",
    "to_values",
    "to_vertex",
    "to_vertex_id",
    "update_of",
    "updates_of",
    "value_of",
    "values_of",
    "vertex_id_of",
    "vertex_of",
]

_INT64 = (-(2**63), 2**63 - 1)

KINDS: dict[UpdateKind, int] = {
    UpdateKind.ADD_VERTEX: pb.ADD_VERTEX,
    UpdateKind.REMOVE_VERTEX: pb.REMOVE_VERTEX,
    UpdateKind.ADD_EDGE: pb.ADD_EDGE,
    UpdateKind.UPDATE_EDGE: pb.UPDATE_EDGE,
    UpdateKind.REMOVE_EDGE: pb.REMOVE_EDGE,
    UpdateKind.MESSAGE: pb.MESSAGE,
}
"""Update kinds and their wire numbers."""
_KIND_OF = {number: kind for kind, number in KINDS.items()}


class InvalidField(ValueError):
    """A field of a request is wrong: ``field`` is its path in the request."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(field, reason)
        self.field = field
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


# -- values -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A NumPy scalar (from pandas or Spark results) as the Python value it holds."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


def to_value(value: Any) -> pb.Value:
    """``value`` as a :class:`Value` (``repr`` for what has no protobuf form)."""
    value = _plain(value)
    if value is None:
        return pb.Value(null=True)
    if isinstance(value, bool):
        return pb.Value(bool=value)
    if isinstance(value, int):
        if _INT64[0] <= value <= _INT64[1]:
            return pb.Value(int=value)
        return pb.Value(repr=repr(value))
    if isinstance(value, float):
        return pb.Value(float=value)
    if isinstance(value, str):
        return pb.Value(str=value)
    if isinstance(value, bytes):
        return pb.Value(bytes=value)
    if isinstance(value, (list, tuple)):
        return pb.Value(list=pb.ValueList(items=[to_value(v) for v in value]))
    if isinstance(value, Mapping):
        entries = [pb.ValueEntry(key=to_value(k), value=to_value(v)) for k, v in value.items()]
        return pb.Value(map=pb.ValueMap(entries=entries))
    return pb.Value(repr=repr(value))


def value_of(message: pb.Value, field: str = "value", *, sent: bool = False) -> Any:
    """The Python value of ``message``; ``sent``: it comes from a client, which may not
    send an unset value nor a ``repr`` (:class:`InvalidField` naming ``field``)."""
    kind = message.WhichOneof("kind")
    if kind is None:
        if sent:
            raise InvalidField(field, "no value set")
        return None
    if kind == "null":
        return None
    if kind == "list":
        return [
            value_of(v, f"{field}.list.items[{i}]", sent=sent)
            for i, v in enumerate(message.list.items)
        ]
    if kind == "map":
        out = {}
        for i, entry in enumerate(message.map.entries):
            key = value_of(entry.key, f"{field}.map.entries[{i}].key", sent=sent)
            if isinstance(key, (list, dict)):
                raise InvalidField(f"{field}.map.entries[{i}].key", "a key cannot be a list or map")
            out[key] = value_of(entry.value, f"{field}.map.entries[{i}].value", sent=sent)
        return out
    if kind == "repr" and sent:
        raise InvalidField(
            field, "repr is what a server sends for a value without a form; send a value"
        )
    return getattr(message, kind)


def to_values(mapping: Mapping[str, Any]) -> dict[str, pb.Value]:
    """A dict with string keys (a state, an edge's properties) as wire values."""
    return {str(k): to_value(v) for k, v in mapping.items()}


def values_of(
    values: Mapping[str, pb.Value], field: str = "values", *, sent: bool = False
) -> dict[str, Any]:
    """A ``map<string, Value>`` field as a dict (see :func:`value_of` for ``sent``)."""
    out = {}
    for key, value in values.items():
        if sent and not key:
            raise InvalidField(field, "an empty key")
        out[key] = value_of(value, f"{field}[{key!r}]", sent=sent)
    return out


def to_vertex_id(vertex: VertexId) -> pb.VertexId:
    """A vertex id (``int`` or ``str``) on the wire."""
    if isinstance(vertex, bool) or not isinstance(vertex, (int, str)):
        raise TypeError(f"a vertex id is an int or a str, got {vertex!r}")
    return pb.VertexId(int=vertex) if isinstance(vertex, int) else pb.VertexId(str=vertex)


def vertex_id_of(message: pb.VertexId, field: str = "vertex") -> VertexId:
    """The vertex id of ``message``; :class:`InvalidField` if unset or an empty string."""
    kind = message.WhichOneof("id")
    if kind is None:
        raise InvalidField(field, "no vertex id set (int or str)")
    if kind == "str" and not message.str:
        raise InvalidField(field, "an empty string is not a vertex id")
    return message.int if kind == "int" else message.str  # type: ignore[no-any-return]


def to_time(t: float) -> pb.Time:
    """An event time; an integral ``int`` stays one."""
    if isinstance(t, int) and not isinstance(t, bool):
        return pb.Time(int=t)
    return pb.Time(float=float(t))


def time_of(message: pb.Time, field: str = "ts") -> float:
    """The event time of ``message``; :class:`InvalidField` if unset, NaN or infinite."""
    kind = message.WhichOneof("value")
    if kind is None:
        raise InvalidField(field, "no time set (int or float)")
    if kind == "int":
        return message.int  # type: ignore[no-any-return]
    if not math.isfinite(message.float):
        raise InvalidField(field, f"time must be finite, got {message.float}")
    return message.float  # type: ignore[no-any-return]


# -- updates ------------------------------------------------------------------------------


def to_record(update: Update) -> pb.UpdateRecord:
    """An update stamped with its offset (``with_origin``) as an :class:`UpdateRecord`."""
    if update.offset < 1:
        raise ValueError(f"update {update!r} has no offset: stamp it with with_origin()")
    return pb.UpdateRecord(
        offset=update.offset,
        kind=KINDS[update.kind],  # type: ignore[arg-type]
        vertex=to_vertex_id(update.vertex),
        dst=None if update.dst is None else to_vertex_id(update.dst),
        ts=to_time(update.ts),
        props=to_values(update.props),
        vertex_type=update.vertex_type or "",
    )


def updates_of(
    records: Iterable[pb.UpdateRecord],
    source: str,
    field: str,
    after: int = 0,
    vertex_types: Iterable[str] | None = None,
) -> list[Update]:
    """The :class:`Update` s of the records a client sent as ``field`` (a repeated
    field), stamped ``(source, offset)``, every field checked: offsets strictly increase
    from above ``after``; ``vertex_types`` are the names an ``add_vertex`` may give."""
    known = frozenset(vertex_types or ())
    updates = []
    for i, record in enumerate(records):
        try:
            update = _update_of(record, source, known)
            if update.offset <= after:
                raise InvalidField(
                    "offset", f"{update.offset} does not follow {after} (offsets strictly increase)"
                )
        except InvalidField as exc:
            raise InvalidField(f"{field}[{i}].{exc.field}", exc.reason) from None
        after = update.offset
        updates.append(update)
    return updates


def update_of(
    record: pb.UpdateRecord, source: str, field: str, vertex_types: Iterable[str] = ()
) -> Update:
    """One record's :class:`Update` (see :func:`updates_of`); ``field`` names it."""
    try:
        return _update_of(record, source, frozenset(vertex_types))
    except InvalidField as exc:
        raise InvalidField(f"{field}.{exc.field}", exc.reason) from None


def _update_of(record: pb.UpdateRecord, source: str, known: frozenset[str]) -> Update:
    """A record's update; :class:`InvalidField` names the field within the record."""
    offset = record.offset
    if offset < 1:
        raise InvalidField("offset", "offsets start at 1")
    kind = _KIND_OF.get(record.kind)
    if kind is None:
        raise InvalidField("kind", f"not an update kind: {record.kind}")
    vertex = vertex_id_of(record.vertex)
    dst = None
    if kind in EDGE_KINDS:
        if not record.HasField("dst"):
            raise InvalidField("dst", f"{kind.value} needs the edge's target")
        dst = vertex_id_of(record.dst, "dst")
    elif record.HasField("dst"):
        raise InvalidField("dst", f"{kind.value} takes no dst")
    if not record.HasField("ts"):
        raise InvalidField("ts", "no time set (int or float)")
    ts = time_of(record.ts)
    props: dict[str, Any] = {}
    if record.props:
        if kind == UpdateKind.REMOVE_EDGE:
            raise InvalidField("props", "remove_edge takes no properties")
        props = values_of(record.props, "props", sent=True)
    vertex_type = record.vertex_type or None
    if vertex_type is not None:
        if kind != UpdateKind.ADD_VERTEX:
            raise InvalidField("vertex_type", f"{kind.value} takes no vertex_type")
        if vertex_type not in known:
            choices = ", ".join(sorted(known)) or "none"
            raise InvalidField(
                "vertex_type", f"unknown vertex type {vertex_type!r} (known: {choices})"
            )
    return Update(kind, vertex, ts, dst, props, vertex_type, source, offset)


# -- vertices, edges, notifications -------------------------------------------------------


def to_edges(edges: Mapping[VertexId, Mapping[str, Any]]) -> list[pb.Edge]:
    """An edge map (other end -> properties) on the wire."""
    return [pb.Edge(vertex=to_vertex_id(v), props=to_values(p)) for v, p in edges.items()]


def edges_of(edges: Iterable[pb.Edge]) -> dict[VertexId, dict[str, Any]]:
    """Wire edges as an edge map (other end -> properties)."""
    return {vertex_id_of(e.vertex): values_of(e.props) for e in edges}


def to_vertex(vertex: VertexId, found: Mapping[str, Any]) -> pb.VertexReply:
    """A vertex as ``GraphCluster.vertex`` returns it, on the wire."""
    return pb.VertexReply(
        vertex=to_vertex_id(vertex),
        type=found["type"],
        clock=found["clock"],
        time=to_time(found["time"]),
        state=to_values(found["state"]),
        out_edges=to_edges(found["out_edges"]),
        in_edges=to_edges(found["in_edges"]),
    )


def vertex_of(reply: pb.VertexReply) -> dict[str, Any]:
    """A :class:`VertexReply` as ``GraphCluster.vertex`` returns a vertex."""
    return {
        "type": reply.type,
        "clock": reply.clock,
        "time": time_of(reply.time, "time"),
        "state": values_of(reply.state),
        "out_edges": edges_of(reply.out_edges),
        "in_edges": edges_of(reply.in_edges),
    }


def to_notification(n: Notification) -> pb.Notification:
    """An :class:`ephemeral.notify.Notification` on the wire."""
    return pb.Notification(
        vertex=to_vertex_id(n.vertex),
        type=n.type_name,
        clock=n.clock,
        time=to_time(n.time),
        shard=n.shard,
        wc=n.wc,
        created=n.old_state is None,
        deleted=n.state is None,
        old_state=to_values(n.old_state or {}),
        state=to_values(n.state or {}),
    )


def notification_of(message: pb.Notification) -> Notification:
    """A wire notification as an :class:`ephemeral.notify.Notification`."""
    return Notification(
        vertex_id_of(message.vertex),
        message.type,
        message.clock,
        time_of(message.time, "time"),
        message.shard,
        message.wc,
        None if message.created else values_of(message.old_state),
        None if message.deleted else values_of(message.state),
    )


def to_position(position: StreamPosition) -> pb.Position:
    """A stream position on the wire."""
    return pb.Position(start=position.start, after=position.after, since=position.since)


def position_of(message: pb.Position, field: str = "resume") -> StreamPosition:
    """The stream position of ``message``; :class:`InvalidField` if malformed."""
    if not message.after or len(message.start) != len(message.after):
        raise InvalidField(field, "a position needs one start and one after clock per shard")
    since = message.since if message.HasField("since") else None
    if since is not None and math.isnan(since):
        raise InvalidField(f"{field}.since", "not a number")
    return StreamPosition(tuple(message.start), tuple(message.after), since)
