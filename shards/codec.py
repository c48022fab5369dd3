"""The on-disk format of a shard's log, and the one module that encodes and decodes it.

Every value a shard writes -- blocks of commands and events, block headers with vector
clocks, shard checkpoints, the cursor, the checkpoint list, the schema and the manifest --
is made and read here. The manifest records :data:`FORMAT_VERSION`; a log of another
version is refused with :class:`LogFormatError` (it names the path's version and this one;
for format 2, the command that converts it: ``chronoray upgrade-log``, see
:mod:`shards.upgrade`). Logs of formats 3, 4 and 5 are read as they are: every value of
format 3 is a value of format 4 (which only adds ``commands`` runs logged as columns,
below), every value of format 4 one of format 5 (which only adds ``events`` entries
logged as columns, ``temporal`` below), and every value of format 5 one of format 6
(which only adds ``commands`` runs merged from several channels, below). A shard that
opens a log of an older format to write to it first gives it the manifest of format 6
(one atomic write, before anything of format 6 is written), so an older chronoray refuses
it rather than misreading it; ``chronoray upgrade-log`` does the same to such a log
without writing anything else.

Format 6, for a plain reader (Python with ``rocksdict``, ``zlib`` and ``pyarrow``)
--------------------------------------------------------------------------------
The log is a RocksDB database (see :mod:`shards.logstore`): column families ``events``,
``commands``, ``clocks`` and ``checkpoints`` keyed by an 8-byte big-endian unsigned integer,
and ``meta`` keyed by utf-8 strings. Every value is a *frame*: a payload followed by the
payload's CRC-32 (``zlib.crc32``, 4 bytes, little-endian) -- one checksum per stored value,
one C call per block. The payload is a pickle (protocol 5) of builtins only -- dicts,
lists, tuples, str, int, float, bool, None -- plus whatever plain values vertex states and
messages hold, so ``pickle.loads(value[:-4])`` decodes any of them once ``zlib.crc32
(value[:-4])`` matches ``value[-4:]``.

Decoding verifies the checksum first: a value that fails it (a flipped bit, a truncated,
extended or replaced value), or whose payload does not decode into the fields below,
raises :class:`LogCorrupted` (one error type, from :mod:`shards.logstore`) and is never
used; nothing of it is decoded before the checksum matched, so a corrupted length field
never allocates. The decoders name the column family (and the key where they get it);
the readers of :mod:`shards.replay` and the shard's recovery add the log's path, the key
and the shard. The checksum covers the value, not its key: readers check that a block's
extent (and a checkpoint's worker clock) matches its key.

Format 5 is format 6 without merged runs (a ``commands`` run's channel is always a
string), with ``"format": 5`` in the manifest; format 4 is format 5 without entries
logged as columns (``temporal``), with ``"format": 4``; format 3 is format 4 without
runs logged as columns, with ``"format": 3``; format 2 is format 3 without the frames
(each value the bare payload) and with ``"format": 2``; format 1 wrote whole vertices
(refused: re-ingest).

One ``ShardCore.handle`` call writes one *block* to each of ``events``, ``commands`` and
``clocks``, all three under the key of the block's **last worker clock** (so a range scan
from worker clock ``w`` starts with the block holding ``w``). A block holds the entries
of worker clocks ``first .. key``, one per behavior execution, as columns (lists of equal
length, entry ``i`` has worker clock ``first + i``). The payloads:

``events`` block (a dict):
    ``first``   first worker clock;
    ``vertex``  vertex id;
    ``clock``   the vertex's clock after the execution (0: the message found no vertex
                and did nothing);
    ``time``    event time of the entry (for clock 0: the message's time);
    ``state``   ``None`` (state unchanged) or a dict of the state keys the execution set
                (for a created vertex: its whole initial state);
    ``edge``    ``None`` or ``(target, props)``: the outgoing edge the execution set to
                props, or removed (props ``None``);
    ``in``      a pickle of the column of ``None`` or ``(source, props)``: the incoming
                edge record the execution set or removed (kept apart, like ``sends``, so
                that a replay that does not need incoming edges does not decode them);
    ``seq0``    list, per destination shard, of the sequence number of its first message;
    ``sends``   (absent if nothing was sent) a pickle of a dict ``i -> tuple of sends``,
                the messages entry ``i`` emitted in order, each ``(dest_shard, kind,
                target, payload)`` -- or ``(dest_shard, kind, target)`` when the payload is
                the props the entry set on its edge to ``target`` (an edge notice). The
                sender is the entry's vertex, the time the entry's time, and the sequence
                numbers per destination shard follow each other from ``seq0``. Kept apart
                so that a replay of states does not decode them;
    ``edges``   dict ``i -> tuple of (target, props)`` for entries that set or removed
                several outgoing edges (their ``edge`` is ``None``);
    ``created`` dict ``i -> type name``: entries that created their vertex (start from an
                empty vertex of that class, then apply the entry);
    ``deleted`` list of ``i``: entries that deleted their vertex;
    ``failed``  dict ``i -> error text``: failed executions (no effects; only the vertex's
                clock and time advance);
    ``dropped`` dict ``i -> tuple of state keys`` the execution removed;
    ``late``    (absent if none) dict ``i -> event time`` for entries of a *late* update
                applied with ``late="apply"``: the entry's ``time`` is the watermark it
                was applied at, this its own event time.
    ``temporal`` (format 5; absent if none) ``(spans, data, type name)``: entries logged
                as columns, left out of the columns above (which hold the other entries,
                in order). ``spans`` is a list of ``(index of the first entry, count)``
                in the block; ``data`` an Arrow IPC stream (zstd buffers, schema metadata
                ``chronoray.run`` = ``temporal``) of one record batch, its rows the
                entries of the spans in order, each what the built-in temporal class
                logs for one stream ``add_edge`` half without properties
                (:class:`TemporalEntries`): ``vertex``, ``other`` (int64), ``half``
                (int8: 0 the owner's, 1 the target's), ``clock``, ``degree``,
                ``counter``, ``count`` (int64), ``flags`` (int8: 1 the edge is new, 2
                ``first_ts`` and 4 ``last_ts`` set to ``touch``, 8 the entry created its
                vertex, of the type name), ``time``, ``touch``, ``first``, ``last``
                (int64 or float64, the stream's). Row ``(v, o, 0, k, t, d, c, f, x, n,
                a, b)`` is the entry ``(v, k, t, state, (o, {"count": n, "first_ts": a,
                "last_ts": b}), None)`` with ``state`` ``{"out_degree": d, "sent": c}``
                (only ``{"sent": c}`` unless flag 1), then ``first_ts``/``last_ts`` =
                ``x`` as flagged; a created vertex's state is its whole first state
                (``out_degree`` 1, ``in_degree`` 0, ``sent`` 1, ``received`` 0, then the
                times). The target's half (``1``) is the same with ``in_degree`` and
                ``received``, and the edge as the entry's incoming edge ``(o, {...})``.

``commands`` block (a dict): the message each execution handled.
    ``first``; ``runs``: a list of ``(channel, items)``, the entries' messages in order,
    grouped by the channel they came from (``src:<source>`` or ``shard:<k>``). ``items``
    is either a list of ``(position on the channel, message)``, each exactly as it
    arrived (see below), or -- for a run of stream ``add_edge`` halves that arrived as
    columns (format 4) -- ``bytes``: an Arrow IPC stream (``pyarrow.ipc.open_stream``;
    buffers zstd-compressed) of one record batch, row ``i`` the run's item ``i``:

    ``position``  int64, the item's position (both halves of an update share it);
    ``half``      int8, 0 for the owner's half, 1 for the target's;
    ``vertex``    int64, the vertex that handled it (the owner, or the target);
    ``other``     int64, the other end (the target for the owner's half, the owner for
                  the target's);
    ``time``      int64 or float64 (as the source typed it), the update's time;
    ``props``     (absent: no properties) a struct column of the update's properties; a
                  null slot or a null field is a property the update does not have.

    Row ``(p, 0, v, o, t, props)`` stands for the item ``(p, (K_UPDATE, v, None,
    ("add_edge", o, props, None), t))``, row ``(p, 1, v, o, t, props)`` for ``(p,
    (K_IN_EDGE, v, o, ("add_edge", props), t))`` (:class:`EdgeRun`,
    :func:`decode_commands` gives both forms the same entries).

    A run of stream ``message`` updates that arrived as columns (format 4) is ``bytes``
    too: an Arrow IPC stream whose schema metadata has ``chronoray.run`` = ``message``,
    row ``i`` the run's item ``i``, with the columns ``position`` (int64), ``vertex``
    (int64, the message's vertex), ``time`` (int64 or float64) and, unless every payload
    is empty, ``props`` (a struct column of the payloads, read as above). Row ``(p, v, t,
    props)`` stands for the item ``(p, (K_UPDATE, v, None, ("message", None, props,
    None), t))`` (:class:`MessageRun`).

    A *merged* run (format 6) holds the items of several source channels that a shard
    merged by event time (``(time, channel)``, each channel's items in its order): its
    ``channel`` is a tuple of channel names instead of one, and its ``items`` an edge or
    message run's ``bytes`` as above with one more column, ``channel`` (int32): row
    ``i``'s item came from channel ``channels[channel[i]]``. Positions are then those of
    each row's own channel (:class:`Channels`).

``clocks`` block header (a dict): ``first``; ``min_time``/``max_time`` of its entries'
    times; ``frontier`` (the source frontier the shard had been told); ``vectors`` (list
    of ``(worker clock, vector clock)``: from that entry on, the shard's vector clock over
    all shards was this tuple). Readers scan headers to skip blocks a time cut does not
    need and to find consistent clock cuts.

``checkpoints`` (key: worker clock ``wc``): the whole shard after ``wc`` -- a dict with
    ``wc``, ``max_time`` (latest entry time up to ``wc``), ``vector``, ``errors`` and the
    vertex columns ``vertex``, ``type``, ``state``, ``out`` (edge dicts), ``in`` (a pickle
    of the column of incoming-edge dicts), ``clock``, ``time``.

``meta``: ``manifest`` = ``{"format": 6, "shard": k, "num_shards": n}``; ``schema`` =
    ``{"ids": kind, "vertex": {state key: kind}, "edge": {edge property: kind}}``, the
    kind (``"int"``, ``"float"``, ``"bool"``, ``"str"`` or ``"json"``) of every value the
    log ever recorded under that key (ints and floats together are ``"float"``, other
    mixes ``"json"``), so that snapshot tables of any cut have the same columns and types;
    ``cursor`` =
    ``{"applied": {channel: position}, "next_seq": [...], "acked": [...], "floor": wc,
    "times": {channel: time}}`` (written with every block; ``floor`` is the first entry
    whose messages may be unacknowledged; ``times`` the event time of the last update
    applied from each source channel, absent in logs written before it); ``checkpoints``
    = list of ``(wc, max_time)``.

Messages travel (and are logged) as tuples ``(kind, dst, src, payload, ts)``: ``kind`` is
one of the ``K_*`` constants; a stream update (``K_UPDATE``, ``src`` ``None``) has the
payload ``(update kind, dst, props, vertex_type)`` and its source and position are its
channel (``src:<source>``) and position (:func:`update_messages`; the position is the
update's offset when its source is in time order, see :mod:`shards.feed`). A stream edge
update also reaches its target's shard, at the same position, as ``K_IN_EDGE`` with
``src`` the edge's owner and the payload ``(update kind, props)``
(:func:`target_message`). A late update applied at the watermark carries its own event
time as one more payload element.
"""

from __future__ import annotations

import io
import os
import pickle
import zlib
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np
import pyarrow as pa

from shards.logstore import LogBatch, LogCorrupted
from vertex.annotations import mark_module_api
from vertex.columns import struct_dicts
from vertex.records import Update, UpdateKind, VertexId

__all__ = [
    "EdgeRun",
    "MessageRun",
    "run_from_ipc",
    "Channels",
    "FORMAT_VERSION",
    "READABLE_VERSIONS",
    "UPGRADABLE_VERSION",
    "MANIFEST_KEY",
    "CURSOR_KEY",
    "CHECKPOINTS_KEY",
    "SCHEMA_KEY",
    "K_UPDATE",
    "K_USER",
    "K_EDGE_ADDED",
    "K_EDGE_UPDATED",
    "K_EDGE_REMOVED",
    "K_EDGE_REJECTED",
    "K_TARGET_DELETED",
    "K_SPAWN",
    "K_IN_EDGE",
    "KIND_NAMES",
    "LogFormatError",
    "LogCorrupted",
    "frame_value",
    "value_payload",
    "Message",
    "CommandEntry",
    "EventBlock",
    "BlockHeader",
    "Manifest",
    "Cursor",
    "Schema",
    "value_kind",
    "CheckpointColumns",
    "encode_events",
    "decode_events",
    "encode_commands",
    "decode_commands",
    "run_message",
    "Run",
    "earliest_time",
    "owner_halves",
    "encode_header",
    "decode_header",
    "encode_checkpoint",
    "decode_checkpoint",
    "encode_checkpoint_list",
    "decode_checkpoint_list",
    "encode_cursor",
    "decode_cursor",
    "encode_manifest",
    "manifest_batch",
    "decode_manifest",
    "read_manifest_value",
    "encode_schema",
    "decode_schema",
    "update_messages",
    "owner_message",
    "target_message",
    "update_to_plain",
    "update_from_plain",
]

FORMAT_VERSION = 6
READABLE_VERSIONS = (3, 4, 5, 6)
"""Formats read as they are: every value of format 3 is a value of format 4, every value
of format 4 one of format 5, every value of format 5 one of format 6."""
UPGRADABLE_VERSION = 2
"""The one older format :mod:`shards.upgrade` converts (``chronoray upgrade-log``)."""
MANIFEST_KEY = "manifest"
CURSOR_KEY = "cursor"
CHECKPOINTS_KEY = "checkpoints"
SCHEMA_KEY = "schema"

K_UPDATE = 0  # payload: a stream Update
K_USER = 1  # payload: dict sent by ctx.send
K_EDGE_ADDED = 2  # at the target; payload: edge props
K_EDGE_UPDATED = 3  # at the target; payload: edge props
K_EDGE_REMOVED = 4  # at the target; payload: None
K_EDGE_REJECTED = 5  # back at the source; payload: None
K_TARGET_DELETED = 6  # at each source of an incoming edge; payload: None
K_SPAWN = 7  # payload: (vertex_type, props)
K_IN_EDGE = 8  # at the target of a stream edge update; src: the owner; payload: (kind, props)

KIND_NAMES = {
    K_UPDATE: "update",
    K_USER: "message",
    K_EDGE_ADDED: "edge_added",
    K_EDGE_UPDATED: "edge_updated",
    K_EDGE_REMOVED: "edge_removed",
    K_EDGE_REJECTED: "edge_rejected",
    K_TARGET_DELETED: "target_deleted",
    K_SPAWN: "spawn",
    K_IN_EDGE: "in_edge",
}

Message = tuple[int, VertexId, "VertexId | None", Any, float]

_PROTOCOL = 5
_dumps = pickle.dumps
_loads = pickle.loads


class LogFormatError(ValueError):
    """The log was written in another format version (or is not a chronoray log)."""


# -- the frame of every value ----------------------------------------------------------------

_CRC_BYTES = 4
_crc32 = zlib.crc32
_MEMORY_ERRORS = (MemoryError, OverflowError, RecursionError)


def frame_value(payload: bytes) -> bytes:
    """A value as stored: ``payload`` then its CRC-32 (4 bytes, little-endian).

    >>> frame_value(b"abc").hex()
    '616263c2412435'
    """
    return payload + _crc32(payload).to_bytes(_CRC_BYTES, "little")


def value_payload(data: bytes, family: str, key: int | str | None = None) -> memoryview:
    """The payload of a stored value (no copy), its checksum verified first;
    :class:`LogCorrupted` naming ``family`` and ``key`` if it does not match (or the value
    is too short to hold one).

    >>> bytes(value_payload(frame_value(b"abc"), "events", 7))
    b'abc'
    >>> value_payload(b"abc" + bytes(4), "events", 7)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shards.logstore.LogCorrupted: corrupted log value (column family 'events', key 7): checksum ...
    """
    size = len(data) - _CRC_BYTES
    if size < 1:
        raise LogCorrupted(
            f"{len(data)} bytes, too short for a value and its {_CRC_BYTES}-byte checksum",
            family,
            key,
        )
    view = memoryview(data)
    body = view[:size]
    stored = int.from_bytes(view[size:], "little")
    if _crc32(body) != stored:
        raise LogCorrupted(
            f"checksum mismatch over {size:,} bytes (stored {stored:#010x}, computed "
            f"{_crc32(body):#010x})",
            family,
            key,
        )
    return body


def _undecodable(family: str, key: int | str | None, exc: BaseException) -> LogCorrupted:
    kind = "too large to decode" if isinstance(exc, _MEMORY_ERRORS) else "undecodable"
    return LogCorrupted(
        f"{kind} despite a matching checksum ({type(exc).__name__}: {exc})", family, key
    )


def _load(data: bytes, family: str, key: int | str | None = None) -> Any:
    """The pickled value inside a stored value, its checksum verified first."""
    body = value_payload(data, family, key)
    try:
        return _loads(body)
    except Exception as exc:
        raise _undecodable(family, key, exc) from exc


# -- events ------------------------------------------------------------------------------


Edge = tuple[VertexId, "dict[str, Any] | None"]
Send = tuple[Any, ...]


@dataclass(slots=True)
class EventBlock:
    """The decoded ``events`` block (see the module doc); ``key`` is its last worker clock.

    The messages the entries sent stay encoded until :meth:`messages` asks for them (only
    recovery needs them, not a replay of states); ``ins`` is ``None`` when decoded without
    incoming edges."""

    first: int
    vertex: list[VertexId]
    clock: list[int]
    time: list[float]
    state: list[dict[str, Any] | None]
    edge: list[Edge | None]
    ins: list[Edge | None] | None
    seq0: list[int]
    sends: bytes = b""
    edges: dict[int, tuple[Edge, ...]] = field(default_factory=dict)
    created: dict[int, str] = field(default_factory=dict)
    deleted: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    dropped: dict[int, tuple[str, ...]] = field(default_factory=dict)
    late: dict[int, float] = field(default_factory=dict)

    @property
    def key(self) -> int:
        """The worker clock of the block's last entry (its key in the log)."""
        return self.first + len(self.vertex) - 1

    def edge_ops(self, i: int) -> tuple[Edge, ...]:
        """The outgoing edges entry ``i`` set or removed."""
        one = self.edge[i]
        return (one,) if one is not None else self.edges.get(i, ())

    def special(self) -> list[int]:
        """Indices of entries that create, delete, fail, drop state keys or touch several
        edges, in order: the rare ones a replay handles one by one."""
        rare = set(self.created)
        rare.update(self.deleted, self.failed, self.dropped, self.edges)
        return sorted(rare)

    def logged_spans(self) -> list[tuple[int, int, int]]:
        """``(index of the first entry, count, first row)`` of each span of entries logged
        as columns (format 5), rows of :attr:`logged_entries`; none for a block whose
        entries are all rows (see :class:`ColumnsBlock`)."""
        return []

    def messages(self) -> Iterator[tuple[int, int, int, Message]]:
        """``(index, dest shard, seq, message)`` of every message the block's entries sent,
        in send order."""
        if not self.sends:
            return
        try:
            sent = sorted(_loads(self.sends).items())
        except Exception as exc:  # inside a verified value: a bug, or a forged checksum
            raise _undecodable("events", self.key, exc) from exc
        seq = list(self.seq0)
        for i, sends in sent:
            vid, time = self.vertex[i], self.time[i]
            props = dict(self.edge_ops(i))
            for send in sends:
                if len(send) == 3:  # the payload is what the entry set on that edge
                    dest, kind, dst = send
                    payload = props[dst]
                else:
                    dest, kind, dst, payload = send
                yield i, dest, seq[dest], (kind, dst, vid, payload, time)
                seq[dest] += 1


def encode_events(
    block: EventBlock,
    sends: dict[int, tuple[tuple[int, int, VertexId, Any], ...]],
    spans: Sequence[tuple[int, int]] = (),
    temporal: TemporalEntries | None = None,
    created_type: str | None = None,
) -> bytes:
    """One ``events`` value; ``sends`` are the messages entries sent, by entry index, as
    ``(dest shard, kind, target, payload)``; ``temporal``: entries logged as columns, in
    the ``spans`` ``(index of the first, count)`` of the block (its columns hold
    placeholders there, which are left out; those that created their vertex created one
    of ``created_type``)."""
    columns: list[Sequence[Any]] = [
        block.vertex,
        block.clock,
        block.time,
        block.state,
        block.edge,
        block.ins or (),
    ]
    if spans:
        columns = [_without(c, spans) for c in columns]
    value: dict[str, Any] = {
        "first": block.first,
        "vertex": columns[0],
        "clock": columns[1],
        "time": columns[2],
        "state": columns[3],
        "edge": columns[4],
        "in": _dumps(columns[5], _PROTOCOL),
        "seq0": block.seq0,
    }
    if temporal is not None:
        value["temporal"] = (list(spans), temporal.to_ipc(), created_type)
    if sends:
        edge, several = block.edge, block.edges
        referring = [i for i in sends if edge[i] is not None or i in several]
        if referring:
            sends = dict(sends)
            for i in referring:
                sends[i] = _refer(block, i, sends[i])
        value["sends"] = _dumps(sends, _PROTOCOL)
    for name in ("edges", "created", "deleted", "failed", "dropped", "late"):
        if getattr(block, name):
            value[name] = getattr(block, name)
    return frame_value(_dumps(value, _PROTOCOL))


def _without(column: Sequence[Any], spans: Sequence[tuple[int, int]]) -> list[Any]:
    """``column`` without the entries of ``spans`` (their placeholders)."""
    out: list[Any] = []
    at = 0
    for start, count in spans:
        out.extend(column[at:start])
        at = start + count
    out.extend(column[at:])
    return out


def _splice(
    rows: Sequence[Sequence[Any]], spans: list[tuple[int, int]], logged: Sequence[Sequence[Any]]
) -> list[tuple[Any, ...]]:
    """Columns of a block's rows with the entries logged as columns put back in their
    spans (inverse of :func:`_without`): ``logged[c]`` holds column ``c`` of those."""
    out: list[list[Any]] = [[] for _ in rows]
    taken = at = done = 0
    for start, count in spans:
        if start < at or count < 0:
            raise ValueError(f"span {(start, count)} after entry {at}")
        for whole, column, extra in zip(out, rows, logged, strict=True):
            whole.extend(column[taken : taken + start - at])
            whole.extend(extra[done : done + count])
        taken += start - at
        at, done = start + count, done + count
    if logged and done != len(logged[0]):
        raise ValueError(f"spans of {done} entries for {len(logged[0])} logged as columns")
    for whole, column in zip(out, rows, strict=True):
        whole.extend(column[taken:])
    return [tuple(whole) for whole in out]


_LAZY: Any = object()  # a column of a ColumnsBlock not made yet
_SLOTS = {name: EventBlock.__dict__[name] for name in ("state", "edge", "ins")}


class ColumnsBlock(EventBlock):
    """An ``events`` block with entries logged as columns (format 5,
    :class:`TemporalEntries`): the same block :class:`EventBlock` describes, entry for
    entry, but its ``state``, ``edge`` and ``ins`` columns are made (with a dict per
    entry) only when something reads them. ``vertex``, ``clock`` and ``time`` are spliced
    at once (cheap). A replay that can apply a span wholly from the columns
    (:meth:`logged_spans`, :attr:`logged_entries`, the rows between the spans through
    :meth:`segment`) never makes them."""

    __slots__ = ("logged_entries", "created_type", "_spans", "_rows", "_starts", "_before")

    logged_entries: TemporalEntries
    created_type: str | None
    _spans: list[tuple[int, int]]
    _rows: tuple[Sequence[Any], Sequence[Any], Sequence[Any] | None]
    _starts: list[int]
    _before: list[int]

    def __init__(
        self,
        v: dict[str, Any],
        rows: list[Any],
        spans: list[tuple[int, int]],
        entries: TemporalEntries,
        created_type: str | None,
        in_edges: bool,
    ) -> None:
        """The block of the decoded ``events`` value ``v`` whose six entry columns without
        the spans are ``rows`` (``ins`` ``None`` unless ``in_edges``)."""
        vertex, clock, time, state, edge, ins = rows
        logged = [entries.vertex.tolist(), entries.clock.tolist(), entries.time.tolist()]
        spliced = _splice([vertex, clock, time], spans, logged)
        n = len(vertex)
        if not len(clock) == len(time) == len(state) == len(edge) == n or (
            ins is not None and len(ins) != n
        ):
            raise ValueError(f"columns of unequal length ({n} vertices)")
        created = v.get("created", {})
        made = np.flatnonzero(entries.flags & TEMPORAL_CREATED)
        if len(made):
            firsts = [start - done for start, done in _offsets(spans)]
            made = made + np.repeat(firsts, [c for _, c in spans])[made]
            created = dict(created)
            created.update((i, created_type) for i in made.tolist())
        super().__init__(
            v["first"],
            spliced[0],  # type: ignore[arg-type]
            spliced[1],  # type: ignore[arg-type]
            spliced[2],  # type: ignore[arg-type]
            _LAZY,
            _LAZY,
            _LAZY if in_edges else None,
            v["seq0"],
            v.get("sends", b""),
            v.get("edges", {}),
            created,
            v.get("deleted", []),
            v.get("failed", {}),
            v.get("dropped", {}),
            v.get("late", {}),
        )
        self.logged_entries = entries
        self.created_type = created_type
        self._spans = spans
        self._rows = (state, edge, ins)
        offsets = _offsets(spans)
        self._starts = [start for start, _ in spans]
        self._before = [start - done for start, done in offsets]  # rows before each span

    def logged_spans(self) -> list[tuple[int, int, int]]:
        return [
            (start, count, done)
            for (start, count), (_, done) in zip(self._spans, _offsets(self._spans), strict=True)
        ]

    def _row(self, i: int) -> int | None:
        """The index among the rows of entry ``i`` (``None``: it is logged as columns)."""
        k = bisect_right(self._starts, i) - 1
        if k < 0:
            return i
        start, count = self._spans[k]
        if i < start + count:
            return None
        return i - start - count + self._before[k]

    def segment(self, lo: int, hi: int) -> EventBlock:
        """Entries ``lo .. hi-1``, none of them logged as columns, as a block of their own
        (its first entry ``lo``; its messages left out)."""
        row = self._row(lo)
        if row is None or (hi > lo and self._row(hi - 1) != row + hi - 1 - lo):
            raise ValueError(f"entries {lo}..{hi - 1} are not all rows")
        state, edge, ins = self._rows
        a, b = row, row + hi - lo

        def shifted(found: dict[int, Any]) -> dict[int, Any]:
            return {i - lo: x for i, x in found.items() if lo <= i < hi} if found else {}

        return EventBlock(
            self.first + lo,
            self.vertex[lo:hi],
            self.clock[lo:hi],
            self.time[lo:hi],
            state[a:b],  # type: ignore[arg-type]
            edge[a:b],  # type: ignore[arg-type]
            None if ins is None else ins[a:b],  # type: ignore[arg-type]
            self.seq0,
            b"",
            shifted(self.edges),
            shifted(self.created),
            [i - lo for i in self.deleted if lo <= i < hi],
            shifted(self.failed),
            shifted(self.dropped),
            shifted(self.late),
        )

    def edge_ops(self, i: int) -> tuple[Edge, ...]:
        if _SLOTS["edge"].__get__(self) is _LAZY:
            row = self._row(i)
            if row is not None:  # a row's edge, without making the column
                one = self._rows[1][row]
                return (one,) if one is not None else self.edges.get(i, ())
        return super().edge_ops(i)

    def _make(self) -> None:
        """Make the ``state``, ``edge`` and ``ins`` columns (a dict per entry)."""
        state, edge, ins = self._rows
        logged = self.logged_entries.columns(ins is not None)[3:]
        if ins is None:
            columns = _splice([state, edge], self._spans, logged[:2])
            columns.append(None)  # type: ignore[arg-type]
        else:
            columns = _splice([state, edge, ins], self._spans, logged)
        for name, column in zip(("state", "edge", "ins"), columns, strict=True):
            _SLOTS[name].__set__(self, column)

    def _column(self, name: str) -> Any:
        value = _SLOTS[name].__get__(self)
        if value is _LAZY:
            self._make()
            value = _SLOTS[name].__get__(self)
        return value

    @property
    def state(self) -> list[dict[str, Any] | None]:
        """Each entry's state changes (made on first read)."""
        return self._column("state")  # type: ignore[no-any-return]

    @state.setter
    def state(self, value: list[dict[str, Any] | None]) -> None:
        _SLOTS["state"].__set__(self, value)

    @property
    def edge(self) -> list[Edge | None]:
        """Each entry's outgoing edge (made on first read)."""
        return self._column("edge")  # type: ignore[no-any-return]

    @edge.setter
    def edge(self, value: list[Edge | None]) -> None:
        _SLOTS["edge"].__set__(self, value)

    @property
    def ins(self) -> list[Edge | None] | None:
        """Each entry's incoming edge (made on first read), ``None`` when decoded without."""
        return self._column("ins")  # type: ignore[no-any-return]

    @ins.setter
    def ins(self, value: list[Edge | None] | None) -> None:
        _SLOTS["ins"].__set__(self, value)


def _offsets(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Per span, its first index in the block and in the entries logged as columns."""
    out, done = [], 0
    for start, count in spans:
        out.append((start, done))
        done += count
    return out


def _refer(block: EventBlock, i: int, sends: tuple[Send, ...]) -> tuple[Send, ...]:
    """Edge notices whose payload is the props the entry set on that edge refer to it."""
    edge = block.edge[i]
    if edge is not None and len(sends) == 1:  # the common case: one edge, its notice
        dest, kind, dst, payload = sends[0]
        if dst == edge[0] and payload is not None and payload is edge[1]:
            return ((dest, kind, dst),)
        return sends
    props = dict(block.edge_ops(i))
    if not props:
        return sends
    out: list[Send] = []
    for dest, kind, dst, payload in sends:
        if payload is not None and props.get(dst) is payload:
            out.append((dest, kind, dst))
        else:
            out.append((dest, kind, dst, payload))
    return tuple(out)


def decode_events(data: bytes, in_edges: bool = True) -> EventBlock:
    """Inverse of :func:`encode_events` (without the incoming-edge column unless
    ``in_edges``); :class:`LogCorrupted` if the value fails its checksum or its columns
    do not decode (their lengths are checked)."""
    v = _load(data, "events")
    try:
        columns = [
            v["vertex"],
            v["clock"],
            v["time"],
            v["state"],
            v["edge"],
            _loads(v["in"]) if in_edges else None,
        ]
        temporal = v.get("temporal")
        if temporal is not None:
            spans, logged, created_type = temporal
            entries = TemporalEntries.from_ipc(logged)
            block: EventBlock = ColumnsBlock(
                v, columns, [tuple(span) for span in spans], entries, created_type, in_edges
            )
            if not len(block.vertex) or len(block.clock) != len(block.vertex):
                raise ValueError(f"columns of unequal or no length ({len(block.vertex)} vertices)")
            return block
        vertex, clock, time, state, edge, ins = columns
        block = EventBlock(
            v["first"],
            vertex,
            clock,
            time,
            state,
            edge,
            ins,
            v["seq0"],
            v.get("sends", b""),
            v.get("edges", {}),
            v.get("created", {}),
            v.get("deleted", []),
            v.get("failed", {}),
            v.get("dropped", {}),
            v.get("late", {}),
        )
        n = len(block.vertex)
        ins = block.ins
        if not (
            n
            and len(block.clock) == n
            and len(block.time) == n
            and len(block.state) == n
            and len(block.edge) == n
            and (ins is None or len(ins) == n)
        ):
            raise ValueError(f"columns of unequal or no length ({n} vertices)")
    except Exception as exc:
        raise _undecodable("events", None, exc) from exc
    return block


# -- commands ----------------------------------------------------------------------------


class CommandEntry(NamedTuple):
    """A command-log entry: the message one behavior execution handled.

    ``channel``/``position`` identify where it came from (``src:<source>`` with the
    stream offset, or ``shard:<k>`` with that channel's message sequence number). A stream
    update's payload is its plain tuple (:func:`update_to_plain`).
    """

    wc: int
    vertex: VertexId
    kind: int
    sender: VertexId | None
    payload: Any
    ts: float
    channel: str
    position: int


_ADD_EDGE = UpdateKind.ADD_EDGE.value
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")
_RUN_KEY = b"chronoray.run"  # schema metadata naming a logged run's class (absent: edges)
_CHANNEL = "channel"  # a merged run's column of channel indexes (format 6)


class _ColumnRun:
    """What every run of one source channel's rows as columns has (:class:`EdgeRun`,
    :class:`MessageRun`): numpy columns :attr:`COLUMNS` -- ``position`` (not decreasing)
    and ``time`` (int64 or float64, the source's type) among them -- then ``props``, a
    struct column or ``None``; the constructor takes them in that order."""

    __slots__ = ()
    COLUMNS: ClassVar[tuple[str, ...]]
    KIND: ClassVar[bytes | None] = None  # the schema metadata value of its logged form
    position: np.ndarray
    time: np.ndarray
    props: pa.StructArray | None

    def _columns(self) -> list[np.ndarray]:
        return [getattr(self, c) for c in self.COLUMNS]

    def __len__(self) -> int:
        return len(self.position)

    def kind(self) -> tuple[Any, ...]:
        """What runs must share to be one run (:meth:`concat`): class, each column's
        dtype and the properties' Arrow type."""
        dtypes = tuple(c.dtype for c in self._columns())
        return type(self), dtypes, None if self.props is None else self.props.type

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _ColumnRun)
        same = (
            all(map(np.array_equal, self._columns(), other._columns()))
            and self.time.dtype == other.time.dtype
        )
        if self.props is None or other.props is None:
            return same and self.props is other.props
        return same and self.props.equals(other.props)

    __hash__ = None  # type: ignore[assignment]

    @property
    def last_position(self) -> int:
        """The position of the last row."""
        return int(self.position[-1])

    @property
    def last_time(self) -> Any:
        """The time of the last row, as the row path has it (an ``int`` or a ``float``)."""
        return self.time[-1].item()

    def earliest(self) -> float:
        """The earliest time of a row."""
        return self.time.min().item()  # type: ignore[no-any-return]

    def prop_dicts(self) -> list[dict[str, Any]]:
        """Each row's properties (a message's payload) as a new dict."""
        if self.props is None:
            return [{} for _ in range(len(self))]
        return struct_dicts(self.props)

    def after(self, position: int) -> Self:
        """The rows past ``position`` (the run itself when all are)."""
        start = int(np.searchsorted(self.position, position, side="right"))
        return self.slice(start, len(self)) if start else self

    def slice(self, start: int, stop: int) -> Self:
        """Rows ``start .. stop-1`` (views, no copy)."""
        props = None if self.props is None else self.props.slice(start, stop - start)
        return type(self)(*(c[start:stop] for c in self._columns()), props)  # type: ignore[call-arg]

    def take(self, order: np.ndarray) -> Self:
        """The rows at ``order``, in that order."""
        props = None if self.props is None else self.props.take(_arrow_of(order))
        return type(self)(*(c[order] for c in self._columns()), props)  # type: ignore[call-arg]

    @classmethod
    def concat(cls, runs: list[Self]) -> Self:
        """The rows of ``runs`` (of one source and one :meth:`kind`) in order."""
        if len(runs) == 1:
            return runs[0]
        columns = (np.concatenate([getattr(r, c) for r in runs]) for c in cls.COLUMNS)
        props = runs[0].props
        if props is not None:
            props = pa.concat_arrays([r.props for r in runs])
        return cls(*columns, props)  # type: ignore[call-arg]

    def to_ipc(self, channel: np.ndarray | None = None) -> bytes:
        """The run as an Arrow IPC stream of one record batch, zstd-compressed (its
        schema names the run's class, but for edges: the form logs of format 4 have);
        ``channel``: a merged run's channel index per row (:class:`Channels`), logged as
        the column ``channel``."""
        columns = [_arrow_of(c) for c in self._columns()]
        names = list(self.COLUMNS)
        if self.props is not None:
            columns.append(self.props)
            names.append("props")
        if channel is not None:
            columns.append(_arrow_of(channel.astype(np.int32, copy=False)))
            names.append(_CHANNEL)
        metadata = None if self.KIND is None else {_RUN_KEY: self.KIND}
        return _ipc_bytes(columns, names, metadata)

    @classmethod
    def from_ipc(cls, data: bytes) -> Self:
        """Inverse of :meth:`to_ipc`."""
        return cls._from_table(pa.ipc.open_stream(data).read_all().combine_chunks())

    @classmethod
    def _from_table(cls, table: pa.Table) -> Self:
        columns = (_numpy_of(table.column(c).combine_chunks()) for c in cls.COLUMNS)
        props = table.column("props").chunk(0) if "props" in table.schema.names else None
        return cls(*columns, props)  # type: ignore[call-arg]


@dataclass(frozen=True, slots=True, eq=False)
class EdgeRun(_ColumnRun):
    """Stream ``add_edge`` halves of one source channel as columns: row ``i`` means the
    item :meth:`items` builds -- for ``half`` 0 the owner's ``(position, (K_UPDATE,
    vertex, None, ("add_edge", other, props, None), time))``, for ``half`` 1 the target's
    ``(position, (K_IN_EDGE, vertex, other, ("add_edge", props), time))`` (see
    :func:`owner_message`, :func:`target_message`). Positions do not decrease (both halves
    of an update share theirs, the owner's first); ``time`` keeps the source's type (int64
    or float64); ``props`` is a struct column of the rows' properties or ``None`` (none).
    Numpy arrays and an Arrow column: a run pickles as a few buffers.

    >>> run = EdgeRun(np.array([4, 4]), np.array([0, 1], np.int8), np.array([1, 2]),
    ...               np.array([2, 1]), np.array([7, 7]), None)
    >>> run.items()
    [(4, (0, 1, None, ('add_edge', 2, {}, None), 7)), (4, (8, 2, 1, ('add_edge', {}), 7))]
    >>> EdgeRun.from_ipc(run.to_ipc()) == run, len(run.after(4))
    (True, 0)
    """

    COLUMNS: ClassVar[tuple[str, ...]] = ("position", "half", "vertex", "other", "time")
    position: np.ndarray
    half: np.ndarray
    vertex: np.ndarray
    other: np.ndarray
    time: np.ndarray
    props: pa.StructArray | None

    def updates(self) -> int:
        """Rows that are an owner's half (each stands for one update)."""
        return int(np.count_nonzero(self.half == 0))

    def rows(self) -> Iterator[tuple[int, int, VertexId, VertexId, dict[str, Any], Any]]:
        """Each row as Python values ``(position, half, vertex, other, props, time)``."""
        return zip(
            self.position.tolist(),
            self.half.tolist(),
            self.vertex.tolist(),
            self.other.tolist(),
            self.prop_dicts(),
            self.time.tolist(),
            strict=True,
        )

    def items(self) -> list[tuple[int, Message]]:
        """The ``(position, message)`` items the row path gets for these rows (the
        definition of what a run means)."""
        return [(p, run_message(h, v, o, props, t)) for p, h, v, o, props, t in self.rows()]


_MESSAGE_KIND = UpdateKind.MESSAGE.value


@dataclass(frozen=True, slots=True, eq=False)
class MessageRun(_ColumnRun):
    """Stream ``message`` updates of one source channel as columns: row ``i`` means the
    item ``(position, (K_UPDATE, vertex, None, ("message", None, payload, None), time))``
    (:func:`owner_message` of ``Update.message(vertex, time, **payload)``). Positions
    increase; ``time`` keeps the source's type (int64 or float64); ``props`` is a struct
    column of the payloads or ``None`` (every payload empty). Every row is a whole update
    for its vertex's shard (:attr:`half` is all 0, as an :class:`EdgeRun`'s owner rows).

    >>> run = MessageRun(np.array([3, 5]), np.array([1, 2]), np.array([7, 8]),
    ...                  pa.array([{"amount": 4}, {"amount": -1}]))
    >>> run.items()[0]
    (3, (0, 1, None, ('message', None, {'amount': 4}, None), 7))
    >>> MessageRun.from_ipc(run.to_ipc()) == run, len(run.after(3))
    (True, 1)
    """

    COLUMNS: ClassVar[tuple[str, ...]] = ("position", "vertex", "time")
    KIND: ClassVar[bytes | None] = b"message"
    position: np.ndarray
    vertex: np.ndarray
    time: np.ndarray
    props: pa.StructArray | None

    @property
    def half(self) -> np.ndarray:
        """All 0: every row goes to its vertex's shard only."""
        return np.zeros(len(self), np.int8)

    def updates(self) -> int:
        """Rows (each stands for one update)."""
        return len(self)

    def items(self) -> list[tuple[int, Message]]:
        """The ``(position, message)`` items the row path gets for these rows (the
        definition of what a run means)."""
        return [
            (p, (K_UPDATE, v, None, (_MESSAGE_KIND, None, props, None), t))
            for p, v, t, props in zip(
                self.position.tolist(),
                self.vertex.tolist(),
                self.time.tolist(),
                self.prop_dicts(),
                strict=True,
            )
        ]


TEMPORAL_NEW, TEMPORAL_FIRST, TEMPORAL_LAST, TEMPORAL_CREATED = 1, 2, 4, 8
"""Flags of a :class:`TemporalEntries` row: the edge is new, the vertex's ``first_ts``
(``last_ts``) changed, the entry created its vertex."""


@dataclass(frozen=True, slots=True, eq=False)
class TemporalEntries:
    """``events`` entries of the built-in temporal rule as columns (format 5): row ``i``
    is what :class:`~vertex.TemporalVertex`'s hooks logged for one stream ``add_edge``
    half without properties (:meth:`columns` gives the entries the row path logs, key for
    key and type for type). ``half`` 0 (the owner's): the state changes ``out_degree``
    (``degree``, only for a new edge), ``sent`` (``counter``) and the outgoing edge to
    ``other``; ``half`` 1 (the target's): ``in_degree`` (only for a new edge),
    ``received`` and the incoming edge from ``other``; an entry that created its vertex
    (flag :data:`TEMPORAL_CREATED`) sets its whole first state. ``first_ts`` and
    ``last_ts`` are set to ``touch`` where ``flags`` say so; the edge record is
    ``{"count", "first_ts", "last_ts"}``. Times keep their type (int64 or float64)."""

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "vertex",
        "other",
        "half",
        "clock",
        "time",
        "degree",
        "counter",
        "flags",
        "touch",
        "count",
        "first",
        "last",
    )
    KIND: ClassVar[bytes] = b"temporal"
    vertex: np.ndarray
    other: np.ndarray
    half: np.ndarray
    clock: np.ndarray
    time: np.ndarray
    degree: np.ndarray
    counter: np.ndarray
    flags: np.ndarray
    touch: np.ndarray
    count: np.ndarray
    first: np.ndarray
    last: np.ndarray

    def __len__(self) -> int:
        return len(self.vertex)

    @classmethod
    def concat(cls, parts: Sequence[TemporalEntries]) -> TemporalEntries:
        """The entries of ``parts`` in order."""
        if len(parts) == 1:
            return parts[0]
        return cls(*(np.concatenate([getattr(p, c) for p in parts]) for c in cls.COLUMNS))

    def to_ipc(self) -> bytes:
        """The entries as a zstd Arrow IPC stream of one record batch."""
        return _ipc_bytes(
            [_arrow_of(getattr(self, c)) for c in self.COLUMNS],
            list(self.COLUMNS),
            {_RUN_KEY: self.KIND},
        )

    @classmethod
    def from_ipc(cls, data: bytes) -> TemporalEntries:
        """Inverse of :meth:`to_ipc`."""
        reader = pa.ipc.open_stream(data)
        if (reader.schema.metadata or {}).get(_RUN_KEY) != cls.KIND:
            raise ValueError("not temporal entries")
        batch = reader.read_next_batch()
        return cls(*(_numbers(batch.column(c)) for c in cls.COLUMNS))

    def keys(self) -> tuple[list[str], list[str]]:
        """The state keys and the outgoing-edge keys the entries set (what a schema notes)."""
        state = [key for key, sets in zip(_STATE_KEYS, self._setters(), strict=True) if sets.any()]
        return state, (["count", "first_ts", "last_ts"] if (self.half == 0).any() else [])

    def _setters(self) -> tuple[np.ndarray, ...]:
        """Per state key of :data:`_STATE_KEYS`, the rows that set it (a mask): an entry that
        created its vertex sets the four counters; otherwise the owner's half its
        ``out_degree`` (a new edge) and ``sent``, the target's its ``in_degree`` (a new edge)
        and ``received``; ``first_ts`` and ``last_ts`` where the flags say."""
        flags, owner = self.flags, self.half == 0
        made, new, target = (flags & TEMPORAL_CREATED) != 0, (flags & TEMPORAL_NEW) != 0, ~owner
        return (
            made | (owner & new),
            made | (target & new),
            made | owner,
            made | target,
            (flags & TEMPORAL_FIRST) != 0,
            (flags & TEMPORAL_LAST) != 0,
        )

    def columns(self, in_edges: bool = True) -> tuple[Any, ...]:
        """The rows as the row path logs them, as the six columns of an
        :class:`EventBlock`: vertex, clock, time, state changes, outgoing edge, incoming
        edge (``None`` unless ``in_edges``)."""
        vertex, other, half, clock, time, degree, counter, flags, touch, n, t0, t1 = (
            getattr(self, c).tolist() for c in self.COLUMNS
        )
        state: list[Any] = []
        out_edge: list[Any] = []
        in_edge: list[Any] = []
        add_state, add_out, add_in = state.append, out_edge.append, in_edge.append
        for o, h, d, c, f, t, k, a, b in zip(
            other, half, degree, counter, flags, touch, n, t0, t1, strict=True
        ):
            if f & TEMPORAL_CREATED:
                changes = _created(h)
            elif h:
                changes = {"in_degree": d, "received": c} if f & TEMPORAL_NEW else {"received": c}
            else:
                changes = {"out_degree": d, "sent": c} if f & TEMPORAL_NEW else {"sent": c}
            if f & TEMPORAL_FIRST:
                changes["first_ts"] = t
            if f & TEMPORAL_LAST:
                changes["last_ts"] = t
            add_state(changes)
            if h:
                add_out(None)
                add_in((o, {"count": k, "first_ts": a, "last_ts": b}) if in_edges else None)
            else:
                add_out((o, {"count": k, "first_ts": a, "last_ts": b}))
                add_in(None)
        return vertex, clock, time, state, out_edge, (in_edge if in_edges else None)

    def slice(self, start: int, stop: int) -> TemporalEntries:
        """Rows ``start .. stop-1`` (views, no copy)."""
        return TemporalEntries(*(getattr(self, c)[start:stop] for c in self.COLUMNS))

    def take(self, rows: np.ndarray) -> TemporalEntries:
        """The rows ``rows`` selects (a boolean mask or indices), in order."""
        return TemporalEntries(*(getattr(self, c)[rows] for c in self.COLUMNS))

    def effects(self, in_edges: bool = True) -> TemporalEffects | None:
        """What applying the rows in order to the records of their vertices leaves, found
        in numpy (a sort by vertex and one by edge, no Python per row): per vertex its
        last clock and time and the last value of each state key the rows set, per edge
        its last record (``None``: a row created its vertex after an earlier row of it,
        which the rule never logs). Replaying them is the same as applying :meth:`columns`
        entry by entry (see :class:`TemporalEffects`); the dicts of edge records are made
        here, one per edge."""
        n = len(self)
        vertex, half, flags = self.vertex, self.half, self.flags
        order = np.argsort(vertex, kind="stable")
        ranked = vertex[order]
        starts, ends = _runs(ranked[1:] != ranked[:-1], n)
        group = np.empty(n, np.intp)
        group[order] = np.repeat(np.arange(len(starts)), ends - starts)
        first, last = order[starts], order[ends - 1]
        made = (flags & TEMPORAL_CREATED) != 0
        created = np.flatnonzero(made[first])
        if len(created) != np.count_nonzero(made):
            return None
        created = created[np.argsort(first[created], kind="stable")]
        at_owner, at_target = (half == 0).astype(np.int64), (half != 0).astype(np.int64)
        key_values = (  # each state key's values (_created's where the row created its vertex)
            np.where(made, at_owner, self.degree),
            np.where(made, at_target, self.degree),
            np.where(made, at_owner, self.counter),
            np.where(made, at_target, self.counter),
            self.touch,
            self.touch,
        )
        specs = tuple(zip(self._setters(), key_values, strict=True))
        set_first = np.full((len(starts), len(specs)), -1, np.int64)  # row that first set it
        found: list[tuple[np.ndarray, np.ndarray]] = []
        for k, (sets, values) in enumerate(specs):
            rows = order[sets[order]]  # by vertex, in order
            ranked = group[rows]
            lo, hi = _runs(ranked[1:] != ranked[:-1], len(rows))
            vertices = group[rows[lo]]
            set_first[vertices, k] = rows[lo]
            found.append((vertices, values[rows[hi - 1]]))
        # dict.update appends a key new to the state where an entry first set it: the keys in
        # their usual order (that of _STATE_KEYS) append in that order, others need theirs
        before = np.maximum.accumulate(set_first, axis=1)[:, :-1]
        disordered = np.asarray(((set_first[:, 1:] >= 0) & (set_first[:, 1:] < before)).any(1))
        keys: list[tuple[str, list[int], list[Any]]] = []
        odd: dict[int, list[tuple[int, int, str, Any]]] = {}
        for k, (key, (vertices, values)) in enumerate(zip(_STATE_KEYS, found, strict=True)):
            bad = disordered[vertices]
            if bad.any():
                for j, row, value in zip(
                    vertices[bad].tolist(),
                    set_first[vertices[bad], k].tolist(),
                    values[bad].tolist(),
                    strict=True,
                ):
                    odd.setdefault(j, []).append((row, k, key, value))
                vertices, values = vertices[~bad], values[~bad]
            if len(vertices):
                keys.append((key, vertices.tolist(), values.tolist()))
        return TemporalEffects(
            vertex[first].tolist(),
            self.clock[last].tolist(),
            self.time[last].tolist(),
            created.tolist(),
            keys,
            [(j, [(key, value) for _, _, key, value in sorted(p)]) for j, p in odd.items()],
            *self._edge_records(group, in_edges),
        )

    def _edge_records(self, group: np.ndarray, in_edges: bool) -> tuple[_EdgeRecords, ...]:
        """Per edge (vertex, half, other) its last record, edges in the order of their
        first row, as ``(vertex group, other, record)`` columns: the outgoing ones, then
        the incoming ones (none unless ``in_edges``)."""
        rows = np.arange(len(self)) if in_edges else np.flatnonzero(self.half == 0)
        keys = self.vertex[rows], self.half[rows], self.other[rows]
        rows = rows[np.lexsort((rows, *reversed(keys)))]  # by vertex, half, other, row
        vertex, half, other = self.vertex[rows], self.half[rows], self.other[rows]
        change = (vertex[1:] != vertex[:-1]) | (half[1:] != half[:-1])
        lo, hi = _runs(change | (other[1:] != other[:-1]), len(rows))
        by_first = np.argsort(rows[lo], kind="stable")
        last = rows[hi[by_first] - 1]
        out: list[_EdgeRecords] = []
        for h in (0, 1):
            at = last[self.half[last] == h]
            records = [
                {"count": n, "first_ts": a, "last_ts": b}
                for n, a, b in zip(
                    self.count[at].tolist(),
                    self.first[at].tolist(),
                    self.last[at].tolist(),
                    strict=True,
                )
            ]
            out.append((group[at].tolist(), self.other[at].tolist(), records))
        return tuple(out)


_STATE_KEYS = ("out_degree", "in_degree", "sent", "received", "first_ts", "last_ts")
"""The state keys the temporal rule sets, in the order an entry's changes hold them."""

_EdgeRecords = tuple[list[int], list[VertexId], list[dict[str, Any]]]


class TemporalEffects(NamedTuple):
    """What a run of :class:`TemporalEntries` leaves (:meth:`TemporalEntries.effects`):
    its distinct ``vertex`` ids with their last ``clock`` and ``time``; ``created``, the
    indices (into ``vertex``) of the vertices a row created, in the order they were
    created; ``keys``, per state key ``(key, indices, last values)`` in the order an
    entry's changes hold the keys, for the vertices whose keys were first set in that
    order; ``disordered``, for the others, ``(index, [(key, last value), ...])`` in the
    order the keys were first set; ``out`` and ``ins``, the last record of each outgoing
    (incoming) edge as ``(indices, other ends, records)``, in the order the edges were
    first set. Applying them in that order -- create, set the keys, set the edges --
    leaves each record exactly as the rows entry by entry do: same values, types and key
    order (``dict.update`` keeps a key where it is and appends a new one)."""

    vertex: list[VertexId]
    clock: list[int]
    time: list[Any]
    created: list[int]
    keys: list[tuple[str, list[int], list[Any]]]
    disordered: list[tuple[int, list[tuple[str, Any]]]]
    out: _EdgeRecords
    ins: _EdgeRecords


def _runs(change: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the runs of equal values of a sorted column of ``n`` values
    whose value changes after each position where ``change`` (``n - 1`` of them) is true."""
    if not n:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    cut = np.flatnonzero(change) + 1
    return np.concatenate(([0], cut)), np.concatenate((cut, [n]))


_NUMBERS = {pa.int8(): np.int8, pa.int64(): np.int64, pa.float64(): np.float64}
_ARROW = {np.dtype(dtype): arrow for arrow, dtype in _NUMBERS.items()}


def _numbers(array: pa.Array) -> np.ndarray:
    """A primitive Arrow column without nulls as a numpy view of its buffer (pyarrow's own
    ``to_numpy`` imports pandas, which a reader of logs does not need)."""
    dtype = _NUMBERS.get(array.type)
    if dtype is None or array.null_count:
        raise ValueError(f"a column of {array.type} with {array.null_count} nulls")
    size = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * size)


def _numpy_of(array: pa.Array) -> np.ndarray:
    """An Arrow column as numpy: a view of its buffer where :func:`_numbers` can take it,
    pyarrow's ``to_numpy`` otherwise."""
    if array.type in _NUMBERS and not array.null_count:
        return _numbers(array)
    return array.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _arrow_of(column: np.ndarray) -> pa.Array:
    """A numpy column of int8, int64 or float64 as an Arrow array sharing its buffer (a
    copy only if it is not contiguous); another dtype goes through ``pa.array``. Inverse
    of :func:`_numbers`. ``pa.array`` of a numpy array first imports pandas (to check
    whether it is a pandas object: 0.3-0.4 s of CPU in a shard process that never holds
    one)."""
    arrow = _ARROW.get(column.dtype)
    if arrow is None:
        return pa.array(column)
    column = np.ascontiguousarray(column)
    return pa.Array.from_buffers(arrow, len(column), [None, pa.py_buffer(column)])


def _created(half: int) -> dict[str, Any]:
    """The first state of a vertex an ``add_edge`` half created (its counters; its times
    follow)."""
    if half:
        return {"out_degree": 0, "in_degree": 1, "sent": 0, "received": 1}
    return {"out_degree": 1, "in_degree": 0, "sent": 1, "received": 0}


def _ipc_bytes(
    columns: list[pa.Array], names: list[str], metadata: dict[bytes, bytes] | None
) -> bytes:
    """One record batch of ``columns`` as a zstd-compressed Arrow IPC stream."""
    table = pa.RecordBatch.from_arrays(columns, names, metadata=metadata)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_IPC_OPTIONS) as writer:
        writer.write_batch(table)
    return sink.getvalue().to_pybytes()  # type: ignore[no-any-return]


def run_from_ipc(data: bytes) -> EdgeRun | MessageRun:
    """A run logged as columns (:meth:`EdgeRun.to_ipc`, :meth:`MessageRun.to_ipc`)."""
    return _run_and_channels(data)[0]


def _run_and_channels(data: bytes) -> tuple[EdgeRun | MessageRun, np.ndarray | None]:
    """A run logged as columns and, for a merged run, its ``channel`` column."""
    table = pa.ipc.open_stream(data).read_all().combine_chunks()
    kind = (table.schema.metadata or {}).get(_RUN_KEY)
    run_class: type[EdgeRun | MessageRun] = MessageRun if kind == MessageRun.KIND else EdgeRun
    channel = None
    if _CHANNEL in table.schema.names:
        channel = _numpy_of(table.column(_CHANNEL).combine_chunks())
    return run_class._from_table(table), channel


@dataclass(frozen=True, slots=True, eq=False)
class Channels:
    """The source channels of a *merged* run: rows of several channels' runs in their
    merge order (``(time, channel)``, each channel's rows in its own order), row ``i``
    from channel ``names[index[i]]`` (format 6). A shard logs the run once, with this
    index as a column, instead of one run per stretch of rows of one channel.

    >>> Channels(("src:a", "src:b"), np.array([0, 1, 1, 0])).last_rows()
    [('src:a', 3), ('src:b', 2)]
    """

    names: tuple[str, ...]
    index: np.ndarray

    def last_rows(self) -> list[tuple[str, int]]:
        """Each channel with rows in the run, and the index of its last row."""
        present, first = np.unique(self.index[::-1], return_index=True)
        last = (len(self.index) - 1 - first).tolist()
        return [(self.names[c], r) for c, r in zip(present.tolist(), last, strict=True)]

    def row_names(self) -> list[str]:
        """Each row's channel name."""
        names = self.names
        return [names[i] for i in self.index.tolist()]


def earliest_time(items: Sequence[tuple[int, Message]]) -> float:
    """The earliest event time of ``(position, message)`` items (one C loop).

    >>> earliest_time([(1, (0, 1, None, ("add_edge", 2, {}, None), 5)), (2, (0, 1, None, (), 3))])
    3
    """
    return min(map(_TIME, map(_MESSAGE, items)))  # type: ignore[no-any-return]


_MESSAGE, _TIME = itemgetter(1), itemgetter(4)


def owner_halves(items: Sequence[tuple[int, Message]]) -> int:
    """Items that are an owner's half or a whole update (not a target's ``K_IN_EDGE``
    half): each stands for one update of its source.

    >>> owner_halves([(1, (0, 1, None, ("add_edge", 2, {}, None), 5)), (1, (8, 2, 1, (), 5))])
    1
    """
    return sum(1 for _, message in items if message[0] != K_IN_EDGE)


def run_message(half: int, vertex: VertexId, other: VertexId, props: Any, ts: Any) -> Message:
    """The message of one :class:`EdgeRun` row (see there)."""
    if half == 0:
        return (K_UPDATE, vertex, None, (_ADD_EDGE, other, props, None), ts)
    return (K_IN_EDGE, vertex, other, (_ADD_EDGE, props), ts)


Run = tuple["str | Channels", "list[tuple[int, Message]] | EdgeRun | MessageRun"]
"""A run of a ``commands`` block: its channel and its items (or their columns); a run
merged from several channels has their :class:`Channels` (and is columns)."""


def encode_commands(first: int, runs: list[Run]) -> bytes:
    """One ``commands`` value from the runs of ``(position, message)`` items applied per
    channel, in order (messages are plain tuples already: nothing to convert); a run
    taken as columns is logged as its columns (:meth:`EdgeRun.to_ipc`), a merged run
    with its channel index (format 6)."""
    return frame_value(_dumps({"first": first, "runs": list(map(_logged, runs))}, _PROTOCOL))


def _logged(run: Run) -> tuple[str | tuple[str, ...], Any]:
    channel, items = run
    if isinstance(channel, Channels):
        assert isinstance(items, EdgeRun | MessageRun), "a merged run is columns"
        return channel.names, items.to_ipc(channel.index)
    return channel, items.to_ipc() if isinstance(items, EdgeRun | MessageRun) else items


def _run_items(
    channel: str | tuple[str, ...], logged: Any
) -> Iterator[tuple[str, tuple[int, Message]]]:
    """A logged run's ``(channel, item)`` pairs, in order."""
    if type(logged) is not bytes:
        assert isinstance(channel, str)
        return zip(repeat(channel), logged)
    run, index = _run_and_channels(logged)
    if index is None:
        assert isinstance(channel, str)
        return zip(repeat(channel), run.items())
    return zip(Channels(tuple(channel), index).row_names(), run.items(), strict=True)


def decode_commands(data: bytes) -> list[CommandEntry]:
    """Inverse of :func:`encode_commands`: one :class:`CommandEntry` per entry, a stream
    update's payload in its full plain form (:func:`update_to_plain`) -- a run logged as
    columns gives exactly the entries of its items; :class:`LogCorrupted` if the value
    fails its checksum or does not decode."""
    v = _load(data, "commands")
    out = []
    try:
        wc = v["first"]
        for run_channel, logged in v["runs"]:
            for channel, (position, (kind, vid, sender, payload, ts)) in _run_items(
                run_channel, logged
            ):
                source = channel.removeprefix("src:")
                if kind == K_UPDATE:
                    u_kind, dst, props, vtype = payload[:4]
                    payload = (u_kind, vid, ts, dst, props, vtype, source, position)
                elif kind == K_IN_EDGE:
                    payload = (payload[0], sender, ts, vid, payload[1], None, source, position)
                out.append(CommandEntry(wc, vid, kind, sender, payload, ts, channel, position))
                wc += 1
    except Exception as exc:
        raise _undecodable("commands", None, exc) from exc
    return out


# the kind member's own str: enum hashing and .value are Python-level, and slow
_PAYLOAD = attrgetter("offset", "vertex", "kind._value_", "dst", "props", "vertex_type", "ts")


def update_messages(updates: list[Update]) -> list[tuple[int, Message]]:
    """Stream updates as ``(offset, message)`` items: ``(K_UPDATE, vertex, None, (kind,
    dst, props, vertex_type), ts)``. The source and offset travel as the batch's channel
    and the item's position, so the message holds only what they do not say.

    >>> update_messages([Update.add_edge(1, 2, 5.0, w=1).with_origin("s", 7)])
    [(7, (0, 1, None, ('add_edge', 2, {'w': 1}, None), 5.0))]
    """
    return [
        (offset, (K_UPDATE, vertex, None, (kind, dst, _plain_props(props), vtype), ts))
        for offset, vertex, kind, dst, props, vtype, ts in map(_PAYLOAD, updates)
    ]


def _plain_props(props: Any) -> dict[str, Any]:
    return props if type(props) is dict else dict(props)


def owner_message(update: Update, ts: float, event_ts: float | None = None) -> Message:
    """The stream update as its owner's shard gets it, logged at ``ts`` (``event_ts``: the
    update's own time, for a late update applied at the watermark ``ts``).

    >>> owner_message(Update.add_edge(1, 2, 5.0).with_origin("s", 7), 5.0)
    (0, 1, None, ('add_edge', 2, {}, None), 5.0)
    """
    payload: tuple[Any, ...] = (
        update.kind._value_,
        update.dst,
        _plain_props(update.props),
        update.vertex_type,
    )
    if event_ts is not None:
        payload += (event_ts,)
    return (K_UPDATE, update.vertex, None, payload, ts)


def target_message(update: Update, ts: float, event_ts: float | None = None) -> Message:
    """The other half of a stream edge update, for its target's shard (see the module doc).

    >>> target_message(Update.add_edge(1, 2, 5.0, w=3).with_origin("s", 7), 5.0)
    (8, 2, 1, ('add_edge', {'w': 3}), 5.0)
    """
    dst = update.dst
    assert dst is not None, "only edge updates have a target half"
    payload: tuple[Any, ...] = (update.kind._value_, _plain_props(update.props))
    if event_ts is not None:
        payload += (event_ts,)
    return (K_IN_EDGE, dst, update.vertex, payload, ts)


def update_to_plain(update: Update) -> tuple[Any, ...]:
    """An update as a tuple of builtins: ``(kind, vertex, ts, dst, props, vertex_type,
    source, offset)``.

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


# -- block headers -----------------------------------------------------------------------


class BlockHeader(NamedTuple):
    """The ``clocks`` value of a block: its extent, time range, the source frontier and
    the vector clocks its entries ran under."""

    first: int
    last: int
    min_time: float
    max_time: float
    frontier: float
    vectors: list[tuple[int, tuple[int, ...]]]


def encode_header(header: BlockHeader) -> bytes:
    """One ``clocks`` value (its key is ``header.last``)."""
    return frame_value(
        _dumps(
            {
                "first": header.first,
                "min_time": header.min_time,
                "max_time": header.max_time,
                "frontier": header.frontier,
                "vectors": header.vectors,
            },
            _PROTOCOL,
        )
    )


def decode_header(key: int, data: bytes) -> BlockHeader:
    """Inverse of :func:`encode_header`; :class:`LogCorrupted` naming ``key`` if the value
    fails its checksum or does not decode."""
    v = _load(data, "clocks", key)
    try:
        header = BlockHeader(
            v["first"], key, v["min_time"], v["max_time"], v["frontier"], list(v["vectors"])
        )
        if not 1 <= header.first <= key:
            raise ValueError(f"first worker clock {header.first} outside 1..{key}")
    except Exception as exc:
        raise _undecodable("clocks", key, exc) from exc
    return header


# -- shard checkpoints -------------------------------------------------------------------


class CheckpointColumns(NamedTuple):
    """A shard checkpoint as columns, one row per vertex."""

    wc: int
    max_time: float
    vector: tuple[int, ...]
    errors: int
    vertex: list[VertexId]
    type: list[str]
    state: list[dict[str, Any]]
    out: list[dict[VertexId, dict[str, Any]]]
    ins: list[dict[VertexId, dict[str, Any]]]
    clock: list[int]
    time: list[float]


def encode_checkpoint(columns: CheckpointColumns) -> bytes:
    """One ``checkpoints`` value."""
    c = columns
    return frame_value(
        _dumps(
            {
                "wc": c.wc,
                "max_time": c.max_time,
                "vector": list(c.vector),
                "errors": c.errors,
                "vertex": c.vertex,
                "type": c.type,
                "state": c.state,
                "out": c.out,
                "in": _dumps(c.ins, _PROTOCOL),
                "clock": c.clock,
                "time": c.time,
            },
            _PROTOCOL,
        )
    )


def decode_checkpoint(data: bytes, in_edges: bool = True) -> CheckpointColumns:
    """Inverse of :func:`encode_checkpoint` (incoming edges empty unless ``in_edges``);
    :class:`LogCorrupted` if the value fails its checksum or its columns do not decode
    (their lengths are checked)."""
    v = _load(data, "checkpoints")
    try:
        c = CheckpointColumns(
            v["wc"],
            v["max_time"],
            tuple(v["vector"]),
            v["errors"],
            v["vertex"],
            v["type"],
            v["state"],
            v["out"],
            _loads(v["in"]) if in_edges else [{} for _ in v["vertex"]],
            v["clock"],
            v["time"],
        )
        n = len(c.vertex)
        if not all(len(column) == n for column in (c.type, c.state, c.out, c.ins, c.clock, c.time)):
            raise ValueError(f"columns of unequal length ({n} vertices)")
    except Exception as exc:
        raise _undecodable("checkpoints", None, exc) from exc
    return c


def encode_checkpoint_list(checkpoints: list[tuple[int, float]]) -> bytes:
    """The ``checkpoints`` meta value: ``(wc, max_time)`` of every shard checkpoint."""
    return frame_value(_dumps([tuple(c) for c in checkpoints], _PROTOCOL))


def decode_checkpoint_list(data: bytes | None) -> list[tuple[int, float]]:
    """Inverse of :func:`encode_checkpoint_list` (``None``: no checkpoint yet)."""
    if data is None:
        return []
    v = _load(data, "meta", CHECKPOINTS_KEY)
    try:
        return [(wc, t) for wc, t in v]
    except Exception as exc:
        raise _undecodable("meta", CHECKPOINTS_KEY, exc) from exc


# -- cursor and manifest -----------------------------------------------------------------


class Cursor(NamedTuple):
    """Channel positions applied, outbox sequence numbers, the first entry whose
    messages may be unacknowledged (``floor``), and the event time of the last update
    applied per source channel (``times``)."""

    applied: dict[str, int]
    next_seq: list[int]
    acked: list[int]
    floor: int
    times: dict[str, float] = {}


def encode_cursor(cursor: Cursor) -> bytes:
    """The ``cursor`` meta value."""
    return frame_value(_dumps(cursor._asdict(), _PROTOCOL))


def decode_cursor(data: bytes) -> Cursor:
    """Inverse of :func:`encode_cursor`; :class:`LogCorrupted` if the value fails its
    checksum or does not decode."""
    v = _load(data, "meta", CURSOR_KEY)
    try:
        return Cursor(
            dict(v["applied"]),
            list(v["next_seq"]),
            list(v["acked"]),
            int(v["floor"]),
            dict(v.get("times", {})),
        )
    except Exception as exc:
        raise _undecodable("meta", CURSOR_KEY, exc) from exc


class Manifest(NamedTuple):
    """What a log is: its format version and which shard of how many wrote it."""

    format: int
    shard: int
    num_shards: int


def encode_manifest(manifest: Manifest) -> bytes:
    """The ``manifest`` meta value."""
    return frame_value(_dumps(manifest._asdict(), _PROTOCOL))


def manifest_batch(manifest: Manifest) -> LogBatch:
    """A log batch writing ``manifest`` alone (one atomic write)."""
    log = LogBatch()
    log.put_meta(MANIFEST_KEY, encode_manifest(manifest))
    return log


def decode_manifest(data: bytes, where: str) -> Manifest:
    """Inverse of :func:`encode_manifest`; :class:`LogFormatError` naming ``where`` if the
    log was written in another format version (for format 2: how to convert it),
    :class:`LogCorrupted` naming ``where`` if the manifest is corrupted.

    >>> decode_manifest(encode_manifest(Manifest(FORMAT_VERSION, 0, 2)), "x").num_shards
    2
    >>> decode_manifest(encode_manifest(Manifest(1, 0, 2)), "logs/shard-0")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shards.codec.LogFormatError: logs/shard-0 holds a log in format 1; this chronoray ...
    """
    found = read_manifest_value(data, where)
    if found.format == UPGRADABLE_VERSION:
        parent = os.path.dirname(where.rstrip("/")) or "."
        raise LogFormatError(
            f"{where} holds a log in format {found.format}; this chronoray reads format "
            f"{FORMAT_VERSION} only: convert it in place with `chronoray upgrade-log "
            f"--log-dir {parent}` (the graph's log directory)"
        )
    if found.format not in READABLE_VERSIONS:
        raise LogFormatError(
            f"{where} holds a log in format {found.format}; this chronoray reads formats "
            f"{READABLE_VERSIONS[0]}-{FORMAT_VERSION} only (re-ingest the data into a new "
            "log directory)"
        )
    return found


def read_manifest_value(data: bytes, where: str) -> Manifest:
    """The manifest a ``manifest`` meta value holds, whatever its format version: of
    format 3 and later framed (its checksum verified), before that a bare pickle (no
    checksum; the whole value must be the pickle). :class:`LogCorrupted` naming ``where``
    if it is neither."""
    try:
        body = value_payload(data, "meta", MANIFEST_KEY)
    except LogCorrupted as exc:
        old = _bare_manifest(data)
        if old is None or old.format >= READABLE_VERSIONS[0]:  # a framed one, frame broken
            raise exc.at(where) from None
        return old
    try:
        v = _loads(body)
        return Manifest(int(v["format"]), int(v["shard"]), int(v["num_shards"]))
    except Exception as exc:
        raise _undecodable("meta", MANIFEST_KEY, exc).at(where) from exc


def _bare_manifest(data: bytes) -> Manifest | None:
    """The manifest of a log of format 1 or 2 (a pickle, no checksum), if ``data`` is
    wholly one."""
    stream = io.BytesIO(data)
    try:
        v = pickle.Unpickler(stream).load()
        found = Manifest(int(v["format"]), int(v["shard"]), int(v["num_shards"]))
    except Exception:
        return None
    return found if stream.tell() == len(data) else None


# -- schema --------------------------------------------------------------------------------

_KINDS = {int: "int", float: "float", bool: "bool", str: "str"}


def value_kind(value: Any) -> str:
    """The column kind of a value: ``int``, ``float``, ``bool``, ``str`` or ``json``.

    >>> [value_kind(v) for v in (1, 2.5, True, "a", [1], None)]
    ['int', 'float', 'bool', 'str', 'json', 'json']
    """
    return _KINDS.get(type(value), "json")


def _widen(kind: str | None, other: str) -> str:
    if kind is None or kind == other:
        return other
    if {kind, other} == {"int", "float"}:
        return "float"
    return "json"


class Schema(NamedTuple):
    """The columns a shard's states and edges ever had, with their kinds (see the module
    doc), and whether vertex ids were all ints (``ids``: ``"int"``) or not (``"str"``)."""

    ids: str
    vertex: dict[str, str]
    edge: dict[str, str]

    @classmethod
    def empty(cls) -> Schema:
        """The schema of a log with nothing in it."""
        return cls("int", {}, {})

    def merge(self, other: Schema) -> Schema:
        """The union of two schemas (kinds widened where they differ).

        >>> a = Schema("int", {"n": "int"}, {})
        >>> a.merge(Schema("int", {"n": "float", "s": "str"}, {"w": "int"}))
        Schema(ids='int', vertex={'n': 'float', 's': 'str'}, edge={'w': 'int'})
        """
        vertex, edge = dict(self.vertex), dict(self.edge)
        for mine, theirs in ((vertex, other.vertex), (edge, other.edge)):
            for key, kind in theirs.items():
                mine[key] = _widen(mine.get(key), kind)
        ids = "int" if self.ids == other.ids == "int" else "str"
        return Schema(ids, vertex, edge)

    def note(self, seen: dict[str, type], column: str, values: dict[str, Any]) -> bool:
        """Record the kinds of ``values`` (a state delta or edge props) in ``column``
        (``"vertex"`` or ``"edge"``); ``seen`` caches the Python type last seen per key so
        the common case costs one lookup per key. Returns whether the schema changed."""
        kinds = self.vertex if column == "vertex" else self.edge
        changed = False
        for key, value in values.items():
            t = type(value)
            if seen.get(key) is t:
                continue
            seen[key] = t
            kind = _widen(kinds.get(key), value_kind(value))
            if kinds.get(key) != kind:
                kinds[key] = kind
                changed = True
        return changed


def encode_schema(schema: Schema) -> bytes:
    """The ``schema`` meta value."""
    return frame_value(_dumps(schema._asdict(), _PROTOCOL))


def decode_schema(data: bytes | None) -> Schema:
    """Inverse of :func:`encode_schema` (``None``: :meth:`Schema.empty`);
    :class:`LogCorrupted` if the value fails its checksum or does not decode."""
    if data is None:
        return Schema.empty()
    v = _load(data, "meta", SCHEMA_KEY)
    try:
        return Schema(str(v["ids"]), dict(v["vertex"]), dict(v["edge"]))
    except Exception as exc:
        raise _undecodable("meta", SCHEMA_KEY, exc) from exc


mark_module_api(globals())
