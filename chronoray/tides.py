"""GraphTides streams: the graph stream format of the thesis's evaluation framework
(ch. 13.4.2) as a chronoray source, and its writer.

One entry per line, ``COMMAND,ENTITY_ID,PAYLOAD`` (the payload is everything after the
second comma, so it may hold commas)::

    CREATE_VERTEX,7,{"ts": 1, "name": "ada"}
    CREATE_EDGE,7-9,{"ts": 2, "weight": 3}
    MARKER,m1,{"phase": "bootstrap done"}
    SET_SPEED,,2.5
    PAUSE,,0.5
    UPDATE_VERTEX,7,{"ts": 3, "posts": 1}
    REMOVE_EDGE,7-9,{"ts": 4}

* **Graph events** -- the six operations of the thesis's system model:
  ``CREATE_VERTEX``, ``UPDATE_VERTEX``, ``REMOVE_VERTEX``, ``CREATE_EDGE``,
  ``UPDATE_EDGE``, ``REMOVE_EDGE``. A vertex is named by its id, an edge by
  ``SRC-DST``. Ids are non-negative integers (``[0-9]+``) or names without ``-``, ``,`` or
  white space. The payload is the entity's state as a JSON object (or nothing). They
  become :class:`~vertex.records.Update` records: ``add_vertex``/``message`` (the payload
  is the message a vertex class handles in ``on_message``)/``remove_vertex`` and
  ``add_edge``/``update_edge``/``remove_edge``, with the payload as properties.
* **Event time.** The format has no time column; chronoray's time cuts need one, so the
  payload's field ``time_field`` (default ``"ts"``, a finite non-negative number) is the
  update's event time and is not copied into its properties. With ``time_field=None``
  the time is the line number (a logical clock: the stream position).
* **Markers** ``MARKER,ID,PAYLOAD`` flag a point of the stream: a replayer notes when it
  passes one and when the result it stands for is reached (end-to-end latency).
* **Control events** steer a replayer: ``SET_SPEED,,FACTOR`` multiplies its initial rate
  by ``FACTOR`` (> 0; 1 = the initial rate), ``PAUSE,,SECONDS`` holds new events back.
* ``#`` comment lines and blank lines are skipped.

A second file can hold the markers and control events apart from the workload (the
thesis's merge at load time): its lines are ``POSITION,COMMAND,ENTITY_ID,PAYLOAD`` and
an entry goes after the first ``POSITION`` lines of the workload file, so control
parameters change between runs without touching the workload.

Guarantees are those of :mod:`chronoray.sources`: offsets are the workload's line
numbers (strictly increasing, the same on every read); a bad line is a
:class:`~chronoray.sources.MalformedRecord` naming the file, the line, its text and what
is wrong, raised by :meth:`GraphTidesSource.read` after every good update before it.
Markers and control events are not updates: :meth:`~GraphTidesSource.read` skips them,
:meth:`~GraphTidesSource.entries` yields them in place.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "s.tides"
>>> write_tides(path, [Update.add_edge(1, 2, 10), Marker("m1"), Update.message(2, 11, posts=1)])
3
>>> print(path.read_text(), end="")
CREATE_EDGE,1-2,{"ts":10}
MARKER,m1,
UPDATE_VERTEX,2,{"ts":11,"posts":1}
>>> [(type(e).__name__, getattr(e, "offset", None)) for e in GraphTidesSource(path).entries()]
[('Update', 1), ('Marker', None), ('Update', 3)]
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Literal

from chronoray.sources import MalformedRecord, _existing_file, _FileSource
from shards.watermark import OutOfOrder
from vertex.annotations import mark_module_api
from vertex.records import Update, UpdateKind

__all__ = [
    "Control",
    "GraphTidesSource",
    "Marker",
    "format_entry",
    "write_tides",
]

_VERTEX_COMMANDS = {
    "CREATE_VERTEX": UpdateKind.ADD_VERTEX,
    "UPDATE_VERTEX": UpdateKind.MESSAGE,
    "REMOVE_VERTEX": UpdateKind.REMOVE_VERTEX,
}
_EDGE_COMMANDS = {
    "CREATE_EDGE": UpdateKind.ADD_EDGE,
    "UPDATE_EDGE": UpdateKind.UPDATE_EDGE,
    "REMOVE_EDGE": UpdateKind.REMOVE_EDGE,
}
_COMMAND_OF = {kind: name for name, kind in (_VERTEX_COMMANDS | _EDGE_COMMANDS).items()}
_REMOVALS = (UpdateKind.REMOVE_VERTEX, UpdateKind.REMOVE_EDGE)
_CONTROLS = {"SET_SPEED": "speed", "PAUSE": "pause"}
_ID = re.compile(r"[^\s,\-]+")
_INT = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Marker:
    """``MARKER,ID,PAYLOAD``: a point of the stream. ``line`` is where it was read
    (``0`` for one not read from a file), in the controls file if it came from one."""

    id: str
    payload: dict[str, Any] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True, slots=True)
class Control:
    """A replayer control event: ``kind="speed"`` sets the rate to ``value`` times the
    initial one; ``kind="pause"`` holds new events back for ``value`` seconds."""

    kind: Literal["speed", "pause"]
    value: float
    line: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("speed", "pause"):
            raise ValueError(f"control kind must be 'speed' or 'pause', got {self.kind!r}")
        if (
            not math.isfinite(self.value)
            or self.value < 0
            or (self.kind == "speed" and self.value == 0)
        ):
            bound = "> 0" if self.kind == "speed" else ">= 0"
            raise ValueError(f"{self.kind} must be a finite number {bound}, got {self.value!r}")


Entry = Update | Marker | Control


# -- parsing ---------------------------------------------------------------------------------


def _vertex_id(text: str) -> int | str:
    if _INT.fullmatch(text):
        return int(text)
    if _ID.fullmatch(text):
        return text
    raise ValueError(
        f"bad vertex id {text!r} (a non-negative integer, or a name without '-', ',' or spaces)"
    )


def _edge_ids(text: str) -> tuple[int | str, int | str]:
    parts = text.split("-")
    if len(parts) != 2:
        raise ValueError(f"an edge id is SRC-DST, got {text!r}")
    return _vertex_id(parts[0]), _vertex_id(parts[1])


def _payload(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"payload is not JSON ({exc.msg} at column {exc.pos + 1})") from None
    if not isinstance(value, dict):
        raise ValueError(f"payload is not a JSON object but {type(value).__name__}")
    return value


def _time(props: dict[str, Any], time_field: str) -> float:
    if time_field not in props:
        raise ValueError(f"payload has no time field {time_field!r}")
    ts = props.pop(time_field)
    if isinstance(ts, bool) or not isinstance(ts, (int, float)):
        raise ValueError(f"time {time_field!r} is not a number: {ts!r}")
    if not math.isfinite(ts) or ts < 0:
        raise ValueError(f"time {time_field!r} must be finite and >= 0, got {ts!r}")
    return ts


def _control(command: str, entity: str, payload: str, lineno: int) -> Marker | Control:
    if command == "MARKER":
        if not _ID.fullmatch(entity):
            raise ValueError(f"bad marker id {entity!r}")
        return Marker(entity, _payload(payload), lineno)
    if entity:
        raise ValueError(f"{command} takes no entity id, got {entity!r}")
    try:
        value = float(payload)
    except ValueError:
        raise ValueError(f"{command} needs a number, got {payload!r}") from None
    return Control(_CONTROLS[command], value, lineno)  # type: ignore[arg-type]


def _update(
    command: str, entity: str, payload: str, lineno: int, time_field: str | None, source: str
) -> Update:
    props = _payload(payload)
    ts = lineno if time_field is None else _time(props, time_field)
    if command in _VERTEX_COMMANDS:
        kind, vertex, dst = _VERTEX_COMMANDS[command], _vertex_id(entity), None
    else:
        kind = _EDGE_COMMANDS[command]
        vertex, dst = _edge_ids(entity)
        if vertex == dst:
            raise ValueError(f"self-loop {entity!r} (the GraphTides model has none)")
    if kind in _REMOVALS and props:
        raise ValueError(f"{command} carries no state, got fields {sorted(props)}")
    return Update(kind, vertex, ts, dst, props, None, source, lineno)


def _parse(raw: bytes, lineno: int, time_field: str | None, source: str) -> Entry | str | None:
    """The entry of one line, a reason string if it is bad, ``None`` if it is skipped."""
    try:
        line = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 at byte {exc.start}"
    if not line.strip() or line.startswith("#"):
        return None
    parts = line.split(",", 2)
    if len(parts) < 3:
        return f"expected COMMAND,ENTITY_ID,PAYLOAD, got {len(parts)} field(s)"
    command, entity, payload = parts
    try:
        if command in _VERTEX_COMMANDS or command in _EDGE_COMMANDS:
            return _update(command, entity, payload, lineno, time_field, source)
        if command == "MARKER" or command in _CONTROLS:
            return _control(command, entity, payload, lineno)
    except ValueError as exc:
        return str(exc)
    known = ", ".join([*_VERTEX_COMMANDS, *_EDGE_COMMANDS, "MARKER", *_CONTROLS])
    return f"unknown command {command!r} (known: {known})"


def _text(raw: bytes) -> str:
    return raw.rstrip(b"\r\n").decode("utf-8", "backslashreplace")


# -- the source ------------------------------------------------------------------------------


class GraphTidesSource(_FileSource):
    """A GraphTides stream file as a chronoray source (see the module docstring for the
    format). ``controls``: a second file of ``POSITION,COMMAND,ENTITY_ID,PAYLOAD`` lines
    (markers and control events only) merged in at load time. ``time_field``: the
    payload field holding the event time (``None``: the line number). ``name`` defaults
    to the file's base name. A missing file raises ``FileNotFoundError`` here.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        controls: str | os.PathLike[str] | None = None,
        time_field: str | None = "ts",
    ) -> None:
        super().__init__(path, name)
        self.controls = None if controls is None else _existing_file(controls)
        self.time_field = time_field

    def entries(self) -> Iterator[Entry | MalformedRecord]:
        """Every entry in stream order -- updates (stamped ``(name, line)``), markers,
        control events -- and a :class:`MalformedRecord` in place of each bad line."""
        workload = self._workload()
        if self.controls is None:
            yield from (entry for _, entry in workload)
            return
        # a control entry at position p sorts after workload line p (ties: its own order)
        yield from (
            entry
            for _, _, entry in heapq.merge(
                ((line, 0, entry) for line, entry in workload),
                ((position, 1, entry) for position, entry in self._controls()),
                key=lambda item: (item[0], item[1]),
            )
        )

    def records(self) -> Iterator[Update | MalformedRecord]:
        """The updates and bad lines in file order, continuing after bad lines (what
        :func:`~chronoray.sources.read_updates` resumes with)."""
        for _, entry in self._workload():
            if isinstance(entry, (Update, MalformedRecord)):
                yield entry

    def first_disorder(self, floor: float = -math.inf, applied: int = 0) -> OutOfOrder | None:
        """The first update whose time is below one before it (or, after line
        ``applied``, below ``floor``), as the refusal to raise; ``None`` if in order."""
        latest, below_floor = -math.inf, False
        for record in self.records():
            if isinstance(record, MalformedRecord):
                continue
            if record.offset > applied and latest < floor:
                latest, below_floor = floor, True
            if record.ts < latest:
                return OutOfOrder(self._where, record.offset, record.ts, latest, below_floor)
            latest, below_floor = record.ts, False
        return None

    def _workload(self) -> Iterator[tuple[int, Entry | MalformedRecord]]:
        name, time_field = self.name, self.time_field
        with open(self.path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                entry = _parse(raw, lineno, time_field, name)  # updates stamped (name, line)
                if isinstance(entry, str):
                    yield lineno, MalformedRecord(self._where, lineno, _text(raw), entry)
                elif entry is not None:
                    yield lineno, entry

    def _controls(self) -> Iterator[tuple[int, Marker | Control | MalformedRecord]]:
        assert self.controls is not None
        where, last = os.fspath(self.controls), 0
        with open(self.controls, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                position, _, rest = raw.partition(b",")
                if not raw.strip() or raw.startswith(b"#"):
                    continue
                if not re.fullmatch(rb"[0-9]+", position) or int(position) < last:
                    reason = f"POSITION must be an integer >= {last} (the previous one)"
                    yield last, MalformedRecord(where, lineno, _text(raw), reason)
                    continue
                last = int(position)
                entry = _parse(rest, lineno, self.time_field, self.name)
                if isinstance(entry, (Marker, Control)):
                    yield last, entry
                elif entry is not None:
                    reason = entry if isinstance(entry, str) else "only markers and controls here"
                    yield last, MalformedRecord(where, lineno, _text(raw), reason)


# -- writing -----------------------------------------------------------------------------------


def _id_text(vertex: int | str) -> str:
    """The id as written; one that would not read back as itself is refused."""
    if isinstance(vertex, int) and not isinstance(vertex, bool) and vertex >= 0:
        return str(vertex)
    if isinstance(vertex, str) and _ID.fullmatch(vertex) and not _INT.fullmatch(vertex):
        return vertex
    raise ValueError(f"vertex id {vertex!r} cannot be written as a GraphTides id")


def format_entry(entry: Entry, time_field: str = "ts") -> str:
    """One entry as a GraphTides line (without the newline); an update's time goes into
    its payload's ``time_field``.

    >>> format_entry(Update.add_edge(3, 4, 7.5, weight=-2))
    'CREATE_EDGE,3-4,{"ts":7.5,"weight":-2}'
    >>> format_entry(Control("speed", 2.0))
    'SET_SPEED,,2.0'
    """
    if isinstance(entry, Marker):
        payload = json.dumps(entry.payload, separators=(",", ":")) if entry.payload else ""
        return f"MARKER,{entry.id},{payload}"
    if isinstance(entry, Control):
        return f"{'SET_SPEED' if entry.kind == 'speed' else 'PAUSE'},,{entry.value!r}"
    if entry.kind not in _COMMAND_OF:
        raise ValueError(f"{entry.kind.value} updates have no GraphTides command")
    if time_field in entry.props:
        raise ValueError(f"property {time_field!r} is the time field")
    entity = _id_text(entry.vertex)
    if entry.dst is not None:
        entity += "-" + _id_text(entry.dst)
    payload = json.dumps({time_field: entry.ts, **entry.props}, separators=(",", ":"))
    return f"{_COMMAND_OF[entry.kind]},{entity},{payload}"


def write_tides(
    path: str | os.PathLike[str] | IO[str], entries: Iterable[Entry], time_field: str = "ts"
) -> int:
    """Write ``entries`` as a GraphTides file (a path, or an open text file); returns the
    number of lines written."""
    with contextlib.ExitStack() as stack:
        out: IO[str] = (
            path  # type: ignore[assignment]
            if hasattr(path, "write")
            else stack.enter_context(open(path, "w", encoding="utf-8", newline="\n"))  # type: ignore[arg-type]
        )
        count = 0
        for entry in entries:
            out.write(format_entry(entry, time_field) + "\n")
            count += 1
    return count


mark_module_api(globals(), public=("Control", "GraphTidesSource", "Marker", "write_tides"))
