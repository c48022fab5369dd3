"""Sources: where stream updates come from (edge files, Python iterables).

A :class:`Source` has a stable ``name`` and a :meth:`~Source.read` method yielding
:class:`~vertex.records.Update` records, each stamped ``with_origin(name, offset)``.
The ``(source, offset)`` id is what makes ingestion exactly-once: a shard remembers
the highest offset it applied per source, so a resent update (after a crash, or a
second ingest of the same file) is applied once.

Guarantees of the sources in this module:

* **Offsets strictly increase** within one ``read()``. For files the offset is the
  1-based line number (comment and blank lines are skipped but still counted), so the
  same file read again yields the same ids. For :class:`IterableSource` it is the
  1-based position, or the update's own ``offset`` when that is already ``>= 0``.
* **Stable names.** A file source is named after the file's base name by default
  (``"collegemsg.txt"``), so re-ingesting the same file is recognised; two
  *different* files with the same base name need distinct ``name`` arguments.
* **Strict validation.** A bad record raises :class:`MalformedRecord` naming the file,
  the 1-based line, the raw text and the reason (wrong field count, non-integer id,
  non-numeric / non-integer / NaN / infinite / negative time, rating outside
  ``[-10, 10]``). Python's lenient parsing is *not* used as the definition of valid:
  ``"1_000"``, ``" 5"`` inside a CSV field, non-ASCII digits, ``"nan"`` are rejected.
* **Everything before, nothing after.** ``read()`` raises at a malformed record only
  after yielding every good update before it, and yields nothing after it.
  :func:`read_updates` with ``on_error="skip"`` instead counts the record, optionally
  writes it to a rejects file, and continues with the next line.
* Time order is **not** required of a source (streams may be unordered); SNAP times are
  ``int``, Bitcoin CSV times ``float`` exactly as ``float(text)``. What the graph needs is
  decided by the source feed (:mod:`shards.watermark`): a source that must be in order is
  refused at its first update going back in time (:class:`OutOfOrder`); a file is checked
  before anything of it is applied (:func:`check_order`). :class:`SortedSource` sorts any
  source by time outside memory; an allowed lateness reorders bounded disorder instead.
* No Ray: this module only reads files and builds records.

Resumable sources: besides ``read()``, the built-in sources have ``records()``, which
yields each record's outcome -- an ``Update`` or a ``MalformedRecord`` *instance* (not
raised) -- and carries on after a bad record. :func:`read_updates` uses ``records()``
when a source has it; a source with only ``read()`` cannot be resumed after it raised.

>>> from vertex.records import Update
>>> src = IterableSource([Update.add_edge(1, 2, 10), Update.add_edge(2, 3, 11)], name="demo")
>>> [(u.vertex, u.dst, u.source, u.offset) for u in src.read()]
[(1, 2, 'demo', 1), (2, 3, 'demo', 2)]
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import hashlib
import heapq
import io
import math
import os
import pickle
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import IO, Any, Literal, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shards.watermark import OutOfOrder, show_time
from vertex.annotations import mark_module_api
from vertex.columns import UpdateBatch
from vertex.records import Update, UpdateKind

__all__ = [
    "BitcoinCsvSource",
    "FileFingerprint",
    "IterableSource",
    "MalformedRecord",
    "OutOfOrder",
    "ReadStats",
    "RejectWriter",
    "SnapEdgeSource",
    "SortedSource",
    "Source",
    "check_order",
    "late_record",
    "open_source",
    "read_columns",
    "read_updates",
]

_ADD_EDGE = UpdateKind.ADD_EDGE
_MESSAGE = UpdateKind.MESSAGE
_new = object.__new__
_set = object.__setattr__
_UPDATE_FIELDS = ("kind", "vertex", "ts", "dst", "props", "vertex_type", "source", "offset")


def _edge_checked(
    src: int, dst: int, ts: float, props: dict[str, int], source: str, offset: int
) -> Update:
    """``Update.add_edge(src, dst, ts, **props).with_origin(source, offset)``, built once."""
    return Update(_ADD_EDGE, src, ts, dst, props, None, source, offset)


def _edge_fast(
    src: int, dst: int, ts: float, props: dict[str, int], source: str, offset: int
) -> Update:
    """Same as :func:`_edge_checked` without ``__init__``/``__post_init__``.

    Only for values the parsers already validated (int ids, a real ``UpdateKind``); about
    twice as fast, which matters at tens of thousands of lines per second.
    """
    u = _new(Update)
    _set(u, "kind", _ADD_EDGE)
    _set(u, "vertex", src)
    _set(u, "ts", ts)
    _set(u, "dst", dst)
    _set(u, "props", props)
    _set(u, "vertex_type", None)
    _set(u, "source", source)
    _set(u, "offset", offset)
    return u


# The fast builder sets every field by name: use it only while Update has exactly these fields.
_edge = _edge_fast if tuple(f.name for f in fields(Update)) == _UPDATE_FIELDS else _edge_checked


class MalformedRecord(ValueError):
    """A record a source cannot turn into an :class:`Update`.

    ``source`` is the file path (file sources) or the source name, ``line`` the 1-based
    line number (position, for iterables), ``text`` the raw line without its newline
    (the item's ``repr``, for iterables), ``reason`` what is wrong with it.
    """

    def __init__(self, source: str, line: int, text: str, reason: str) -> None:
        super().__init__(source, line, text, reason)  # args as given: picklable
        self.source = source
        self.line = line
        self.text = text
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}: {self.text!r}"


@runtime_checkable
class Source(Protocol):
    """Anything that yields stamped updates.

    ``name`` is the stable id used in the ``(source, offset)`` ids. ``read()`` yields
    updates stamped ``with_origin(name, offset)`` with strictly increasing offsets, and
    raises :class:`MalformedRecord` at a bad record after yielding all good ones before it.
    """

    name: str

    def read(self) -> Iterator[Update]:
        """Yield the source's updates, stamped with ``(name, offset)``."""
        ...


@dataclass
class ReadStats:
    """Live counters of one :func:`read_updates` iteration.

    ``read``: updates yielded so far; ``rejected``: malformed records skipped so far;
    ``last_offset``: offset of the last update yielded (``-1`` before the first).
    """

    read: int = 0
    rejected: int = 0
    last_offset: int = -1


# -- shared machinery -------------------------------------------------------------------


class _RecordSource:
    """Base of the built-in sources: ``read()`` derived from the resumable ``records()``."""

    name: str

    def records(self) -> Iterator[Update | MalformedRecord]:  # pragma: no cover - abstract
        raise NotImplementedError

    def read(self) -> Iterator[Update]:
        """Yield the updates; raise :class:`MalformedRecord` at the first bad record."""
        with contextlib.closing(self.records()) as records:
            for record in records:
                if isinstance(record, MalformedRecord):
                    raise record
                yield record


def _existing_file(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
    return p


def _text(raw: bytes) -> str:
    """The raw line without its line ending, as text (undecodable bytes escaped)."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return raw.decode("utf-8", "backslashreplace")


def _show(field: bytes) -> str:
    return repr(field.decode("utf-8", "backslashreplace"))


_INT = re.compile(rb"-?[0-9]+")
_DECIMAL = re.compile(rb"-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")
_NONFINITE = re.compile(rb"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def _check_id(field: bytes, what: str) -> str | None:
    if _INT.fullmatch(field):
        return None
    return f"{what} id is not an integer: {_show(field)}"


# -- columns: the file read in chunks, lines parsed by Arrow kernels --------------------------

_CHUNK_BYTES = 1 << 22  # bytes of whole lines parsed at once


def _chunks(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """``(first line number, whole lines, ends with a newline)`` of the file, in order,
    each chunk about :data:`_CHUNK_BYTES` (the file's last line may lack its newline)."""
    lineno, rest = 1, b""
    with open(path, "rb") as f:
        while True:
            data = f.read(_CHUNK_BYTES)
            if not data:
                if rest:
                    yield lineno, rest, False
                return
            data = rest + data if rest else data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            chunk, rest = data[:cut], data[cut:]
            yield lineno, chunk, True
            lineno += chunk.count(b"\n")


def _ints(fields: pa.StructArray, name: str, rows: np.ndarray) -> np.ndarray:
    """Field ``name`` of the matched ``rows`` as int64 (``ArrowInvalid`` beyond int64)."""
    column = fields.field(name).take(pa.array(rows))
    return pc.cast(column, pa.int64()).to_numpy()  # type: ignore[no-any-return]


def _disorder(
    batch: UpdateBatch, latest: float, floor: float, applied: int
) -> tuple[int, float, float, bool] | None:
    """The first row of ``batch`` below the largest time before it (``latest`` before the
    batch) or, past line ``applied``, below ``floor``: ``(line, time, the time it went back
    from, whether that is the floor)``; ``None`` if there is none."""
    ts = batch.column("time")
    offsets = batch.column("offset")
    before = np.maximum.accumulate(np.concatenate(([latest], ts[:-1].astype(np.float64))))
    threshold = np.where(offsets > applied, np.maximum(before, floor), before)
    bad = ts < threshold
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    previous = latest if i == 0 else batch.table.column("time")[i - 1].as_py()
    below = bool(offsets[i] > applied) and floor > before[i]
    line = int(offsets[i])
    return line, batch.table.column("time")[i].as_py(), floor if below else previous, below


# -- SNAP ---------------------------------------------------------------------------------

# Fast path: one regex per line; anything it does not match goes through _snap_slow, which
# is the authoritative parser (it accepts what the regex misses and names every problem).
_SNAP_LINE = re.compile(rb"[ \t]*(-?[0-9]+)[ \t]+(-?[0-9]+)[ \t]+([0-9]+)[ \t]*\r?\n?")
# the same pattern for Arrow's kernels (RE2, one line without its newline, named groups)
_SNAP_COLUMNS = r"^[ \t]*(?P<src>-?[0-9]+)[ \t]+(?P<dst>-?[0-9]+)[ \t]+(?P<ts>[0-9]+)[ \t]*\r?$"


def _snap_slow(raw: bytes) -> tuple[int, int, int] | str | None:
    """``(src, dst, ts)``, a reason string for a bad line, or ``None`` for a skipped line."""
    stripped = raw.strip()
    if not stripped or stripped.startswith(b"#"):
        return None
    fields = stripped.split()
    if len(fields) != 3:
        return f"expected 3 whitespace-separated fields SRC DST TS, got {len(fields)}"
    src, dst, ts = fields
    problem = _check_id(src, "source") or _check_id(dst, "target")
    if problem:
        return problem
    if _INT.fullmatch(ts):
        t = int(ts)
        if t < 0:
            return f"negative time: {_show(ts)}"
        return int(src), int(dst), t
    if _NONFINITE.fullmatch(ts):
        return f"time is not finite: {_show(ts)}"
    if _DECIMAL.fullmatch(ts):
        if float(ts) < 0:
            return f"negative time: {_show(ts)}"
        return f"time is not an integer: {_show(ts)}"
    return f"time is not a number: {_show(ts)}"


class _FileSource(_RecordSource):
    """A source reading one file; named after the file's base name unless given a name."""

    path: Path
    _line: re.Pattern[bytes]  # the fast parser's pattern; its last group is the time
    _time: type[int] | type[float]

    def __init__(self, path: str | os.PathLike[str], name: str | None = None) -> None:
        self.path = _existing_file(path)
        self.name = name if name is not None else self.path.name
        self._where = os.fspath(path)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where!r}, name={self.name!r})"

    @property
    def where(self) -> str:
        """The file as the user named it (what errors show)."""
        return self._where

    def first_disorder(self, floor: float = -math.inf, applied: int = 0) -> OutOfOrder | None:
        """The first line whose time is below one before it (or, after line ``applied``,
        below ``floor``), as the refusal to raise; ``None`` if the file is in time order.
        Malformed lines are left to :meth:`records`; the times are compared as columns."""
        latest: float = -math.inf
        for item in self.batches():
            if isinstance(item, UpdateBatch):
                found = _disorder(item, latest, floor, applied)
                if found is not None:
                    return OutOfOrder(self._where, *found)
                latest = item.table.column("time")[-1].as_py()
            elif isinstance(item, Update):
                threshold = max(latest, floor) if item.offset > applied else latest
                if item.ts < threshold:
                    below = item.offset > applied and floor > latest
                    return OutOfOrder(self._where, item.offset, item.ts, threshold, below)
                latest = item.ts
        return None

    def batches(self) -> Iterator[UpdateBatch | Update | MalformedRecord]:
        """The file's outcomes as :meth:`records` gives them, in file order, with runs of
        good lines as :class:`~vertex.columns.UpdateBatch` es parsed by Arrow kernels: a
        chunk of lines is split, matched against the fast pattern and cast as columns;
        a line the pattern misses goes through the authoritative row parser (its update,
        its :class:`MalformedRecord` or nothing), and a chunk the kernels cannot take
        whole (invalid UTF-8, an id beyond int64) is read row by row. Memory is bounded
        by one chunk. A file format without a columns pattern gives its :meth:`records`."""
        if self._columns_pattern is None:
            yield from self.records()
            return
        for lineno, chunk, complete in _chunks(self.path):
            try:
                yield from self._chunk_batches(chunk, lineno, complete)
            except (pa.ArrowInvalid, UnicodeDecodeError):
                yield from self._chunk_records(chunk, lineno)

    def _chunk_records(self, chunk: bytes, lineno: int) -> Iterator[Update | MalformedRecord]:
        """A chunk's outcomes through the row parser."""
        for n, raw in enumerate(io.BytesIO(chunk), lineno):
            yield from self._parse(raw, n)

    def _chunk_batches(
        self, chunk: bytes, lineno: int, complete: bool
    ) -> Iterator[UpdateBatch | Update | MalformedRecord]:
        lines = pc.split_pattern(pa.array([chunk], pa.binary()), b"\n").flatten()
        if complete:  # the chunk ends with a newline: drop the empty piece after it
            lines = lines.slice(0, len(lines) - 1)
        text = lines.cast(pa.string())  # raises ArrowInvalid on invalid UTF-8
        fields = pc.extract_regex(text, self._columns_pattern)  # type: ignore[arg-type]
        good = fields.is_valid().to_numpy(zero_copy_only=False)
        rows, batch = self._columns(fields, good, lineno)
        odd = np.flatnonzero(~good)
        start = 0
        for j in odd.tolist():
            cut = int(np.searchsorted(rows, j))
            if cut > start:
                yield batch.slice(start, cut)
            start = cut
            raw = lines[j].as_py()
            yield from self._parse(
                raw + b"\n" if complete or j < len(lines) - 1 else raw, lineno + j
            )
        if len(rows) > start:
            yield batch.slice(start)

    _columns_pattern: str | None = None  # the fast pattern for Arrow (RE2), named groups

    def _columns(
        self, fields: pa.StructArray, good: np.ndarray, lineno: int
    ) -> tuple[np.ndarray, UpdateBatch]:
        """The rows the pattern matched (indices into the chunk's lines; ``good`` may be
        narrowed by value checks) and their batch."""
        raise NotImplementedError

    def _parse(self, raw: bytes, lineno: int) -> list[Update | MalformedRecord]:
        raise NotImplementedError


class SnapEdgeSource(_FileSource):
    """A SNAP temporal edge list: one ``SRC DST TS`` line per edge occurrence.

    Fields are separated by spaces/tabs; ``SRC``/``DST`` are integer vertex ids, ``TS``
    a non-negative integer time. Lines starting with ``#`` and blank lines are skipped.
    Each line becomes ``Update.add_edge(src, dst, ts)`` with offset = its line number.
    ``name`` defaults to the file's base name. A missing file raises
    ``FileNotFoundError`` here, at construction.
    """

    _line = _SNAP_LINE
    _time = int
    _columns_pattern = _SNAP_COLUMNS

    def _columns(
        self, fields: pa.StructArray, good: np.ndarray, lineno: int
    ) -> tuple[np.ndarray, UpdateBatch]:
        rows = np.flatnonzero(good)
        src, dst, ts = (_ints(fields, name, rows) for name in ("src", "dst", "ts"))
        return rows, UpdateBatch.edges(self.name, src, dst, ts, rows + lineno)

    def records(self) -> Iterator[Update | MalformedRecord]:
        """Each line's outcome in file order, continuing after bad lines."""
        name, match, edge, slow = self.name, _SNAP_LINE.fullmatch, _edge, self._parse
        with open(self.path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                m = match(raw)
                if m is not None:
                    src, dst, ts = m.groups()
                    yield edge(int(src), int(dst), int(ts), {}, name, lineno)
                    continue
                yield from slow(raw, lineno)

    def _parse(self, raw: bytes, lineno: int) -> list[Update | MalformedRecord]:
        """A line the fast pattern missed: its update, its error, or nothing (skipped)."""
        parsed = _snap_slow(raw)
        if parsed is None:
            return []
        if isinstance(parsed, str):
            return [MalformedRecord(self._where, lineno, _text(raw), parsed)]
        src_i, dst_i, ts_i = parsed
        return [_edge(src_i, dst_i, ts_i, {}, self.name, lineno)]


# -- Bitcoin OTC CSV -----------------------------------------------------------------------

_CSV_LINE = re.compile(
    rb"(-?[0-9]+),(-?[0-9]+),([+-]?[0-9]+),([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\r?\n?"
)
_CSV_COLUMNS = (
    r"^(?P<src>-?[0-9]+),(?P<dst>-?[0-9]+),(?P<rating>[+-]?[0-9]+),"
    r"(?P<ts>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\r?$"
)
_RATING = re.compile(rb"[+-]?[0-9]+")
_RATING_MIN, _RATING_MAX = -10, 10


def _csv_slow(raw: bytes) -> tuple[int, int, int, float] | str | None:
    """``(src, dst, rating, ts)``, a reason string for a bad line, or ``None`` (blank)."""
    line = raw.rstrip(b"\r\n")
    if not line.strip():
        return None
    fields = line.split(b",")
    if len(fields) != 4:
        return f"expected 4 comma-separated fields SRC,DST,RATING,TIME, got {len(fields)}"
    src, dst, rating, ts = fields
    problem = _check_id(src, "source") or _check_id(dst, "target")
    if problem:
        return problem
    if not _RATING.fullmatch(rating):
        return f"rating is not an integer: {_show(rating)}"
    r = int(rating)
    if not _RATING_MIN <= r <= _RATING_MAX:
        return f"rating {r} is outside [{_RATING_MIN}, {_RATING_MAX}]"
    if _NONFINITE.fullmatch(ts):
        return f"time is not finite: {_show(ts)}"
    if not _DECIMAL.fullmatch(ts):
        return f"time is not a number: {_show(ts)}"
    t = float(ts)
    if not math.isfinite(t):
        return f"time is not finite: {_show(ts)}"
    if t < 0:
        return f"negative time: {_show(ts)}"
    return int(src), int(dst), r, t


class BitcoinCsvSource(_FileSource):
    """SNAP's Bitcoin OTC/Alpha CSV: ``SRC,DST,RATING,TIME`` lines, no header.

    ``SRC``/``DST`` are integer ids, ``RATING`` an integer in ``[-10, 10]``, ``TIME``
    non-negative Unix seconds with a fractional part, kept as ``float(text)``. Fields
    must not carry spaces; blank lines are skipped. Each line becomes
    ``Update.add_edge(src, dst, ts, weight=rating)`` with offset = its line number.
    ``name`` defaults to the file's base name. A missing file raises
    ``FileNotFoundError`` here, at construction.
    """

    _line = _CSV_LINE
    _time = float
    _columns_pattern = _CSV_COLUMNS

    def _columns(
        self, fields: pa.StructArray, good: np.ndarray, lineno: int
    ) -> tuple[np.ndarray, UpdateBatch]:
        rows = np.flatnonzero(good)
        rating_text = pc.utf8_ltrim(fields.field("rating").take(pa.array(rows)), "+")
        rating = pc.cast(rating_text, pa.int64()).to_numpy()
        ts = pc.cast(fields.field("ts").take(pa.array(rows)), pa.float64()).to_numpy()
        ok = (rating >= _RATING_MIN) & (rating <= _RATING_MAX) & np.isfinite(ts)
        if not ok.all():  # the row parser names what is wrong with these lines
            good[rows[~ok]] = False
            rows, rating, ts = rows[ok], rating[ok], ts[ok]
        src, dst = (_ints(fields, name, rows) for name in ("src", "dst"))
        props = {"weight": rating}
        return rows, UpdateBatch.edges(self.name, src, dst, ts, rows + lineno, props)

    def records(self) -> Iterator[Update | MalformedRecord]:
        """Each line's outcome in file order, continuing after bad lines."""
        name, match, edge, slow = self.name, _CSV_LINE.fullmatch, _edge, self._parse
        isfinite = math.isfinite
        with open(self.path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                m = match(raw)
                if m is not None:
                    src, dst, rating, ts = m.groups()
                    r = int(rating)
                    t = float(ts)
                    if _RATING_MIN <= r <= _RATING_MAX and isfinite(t):
                        yield edge(int(src), int(dst), t, {"weight": r}, name, lineno)
                        continue
                yield from slow(raw, lineno)

    def _parse(self, raw: bytes, lineno: int) -> list[Update | MalformedRecord]:
        """A line the fast path did not take: its update, its error, or nothing (blank)."""
        parsed = _csv_slow(raw)
        if parsed is None:
            return []
        if isinstance(parsed, str):
            return [MalformedRecord(self._where, lineno, _text(raw), parsed)]
        src_i, dst_i, r_i, t_f = parsed
        return [_edge(src_i, dst_i, t_f, {"weight": r_i}, self.name, lineno)]


# -- Python iterables ------------------------------------------------------------------------


class IterableSource(_RecordSource):
    """Updates from any iterable of :class:`Update`.

    The offset of an update is its 1-based position, unless the update already carries
    an ``offset >= 0``, which is kept; either way offsets must strictly increase, and an
    item that breaks that -- or is not an ``Update`` -- is a :class:`MalformedRecord`
    (``line`` = position, ``text`` = ``repr(item)``). Updates are restamped with this
    source's ``name``.

    The default name ``"iterable"`` is shared by every unnamed iterable: since a shard
    applies each ``(source, offset)`` once, give distinct streams distinct names. A
    one-shot iterator (e.g. a generator) can be read only once.
    """

    def __init__(self, iterable: Iterable[Update], name: str = "iterable") -> None:
        self._items = iterable
        self.name = name

    def __repr__(self) -> str:
        return f"IterableSource(<{type(self._items).__name__}>, name={self.name!r})"

    def records(self) -> Iterator[Update | MalformedRecord | None]:
        """Each item's outcome in order, continuing after bad items (``None``: nothing to
        read now, passed on; it takes no position)."""
        name = self.name
        for got in self._checked():
            if got is None or isinstance(got, MalformedRecord):
                yield got
                continue
            yield _stamped(*got, name)

    def batches(self) -> Iterator[UpdateBatch | Update | MalformedRecord | None]:
        """:meth:`records`, with each run of a list or tuple's plain edge additions --
        ``add_edge`` between ``int`` ids (within int64), no properties, times all ``int``
        or all ``float`` -- and each run of its plain messages -- ``message`` to an
        ``int`` id, times all ``int`` or all ``float``, payloads with the same keys in
        the same order, each key's values all ``int`` (within int64), all ``float``, all
        ``str`` or all ``bool`` -- as one :class:`~vertex.columns.UpdateBatch` (converted
        once, here: no stamped copy per update), which the feed routes as columns. Any
        other item ends the run and comes as :meth:`records` gives it; a run of messages
        whose payload values do not fit one Arrow column each comes as its records.
        Other iterables give their :meth:`records`: a generator may wait between items,
        and holding its updates back until a run is full would delay them."""
        if not isinstance(self._items, list | tuple):
            yield from self.records()
            return
        name, items = self.name, self._items
        at = _Position()
        for start in range(0, len(items), _ROWS):
            chunk = items[start : start + _ROWS]
            whole = _chunk_columns(chunk, at, name)
            if whole is not None:
                yield whole
            else:
                yield from self._chunk_runs(chunk, at)

    def _chunk_runs(
        self, chunk: list[Any] | tuple[Any, ...], at: _Position
    ) -> Iterator[UpdateBatch | Update | MalformedRecord | None]:
        """:meth:`batches` of a chunk of a list one item at a time: runs of one
        :func:`_column_key` as batches, the other items as :meth:`records` gives them."""
        name = self.name
        run: list[tuple[Update, int]] = []
        run_key: tuple[Any, ...] = ()
        for got in self._checked(chunk, at):
            if got is not None and not isinstance(got, MalformedRecord):
                item, offset = got
                key = _column_key(item)
                if key is not None:
                    if run and key != run_key:
                        yield from _column_run(name, run, run_key)
                        run = []
                    run_key = key
                    run.append(got)
                    continue
                got = _stamped(item, offset, name)
            if run:
                yield from _column_run(name, run, run_key)
                run = []
            yield got
        if run:
            yield from _column_run(name, run, run_key)

    def _checked(
        self, items: Iterable[Any] | None = None, at: _Position | None = None
    ) -> Iterator[tuple[Update, int] | MalformedRecord | None]:
        """Each item (of ``items``, from ``at``: a part of the iterable) with its offset,
        or its :class:`MalformedRecord` (see the class)."""
        name = self.name
        at = _Position() if at is None else at
        for item in self._items if items is None else items:
            if item is None:
                yield None
                continue
            at.pos += 1
            pos = at.pos
            if not isinstance(item, Update):
                yield MalformedRecord(
                    name, pos, repr(item), f"item {pos} is not an Update but {type(item).__name__}"
                )
                continue
            offset = item.offset if item.offset >= 0 else pos
            if offset <= at.last:
                yield MalformedRecord(
                    name,
                    pos,
                    repr(item),
                    f"offset {offset} of item {pos} does not increase (previous {at.last})",
                )
                continue
            at.last = offset
            yield item, offset


@dataclass(slots=True)
class _Position:
    """Where the reading of an iterable stands: items read (its positions are 1-based,
    ``None`` takes none) and the last offset taken."""

    pos: int = 0
    last: int = -1


_KIND, _TS, _VERTEX, _DST, _PROPS, _VTYPE, _OFFSET = (
    attrgetter(name) for name in ("kind", "ts", "vertex", "dst", "props", "vertex_type", "offset")
)


def _chunk_columns(
    chunk: list[Any] | tuple[Any, ...], at: _Position, name: str
) -> UpdateBatch | None:
    """A chunk of a list as one :class:`~vertex.columns.UpdateBatch` when every item is an
    update of one :func:`_column_key` with increasing offsets -- checked a field at a time
    over the chunk, in C loops (``map``, ``set``, numpy), not an item at a time -- and
    ``at`` moved past it; ``None`` (nothing read) for any other chunk, which
    :meth:`IterableSource._chunk_runs` then reads item by item (and reports its errors)."""
    if set(map(type, chunk)) != {Update} or set(map(_VTYPE, chunk)) != {None}:
        return None
    kinds = set(map(_KIND, chunk))
    kind = kinds.pop() if len(kinds) == 1 else None
    if kind is not _ADD_EDGE and kind is not _MESSAGE:
        return None
    times, vertices = list(map(_TS, chunk)), list(map(_VERTEX, chunk))
    time_types = set(map(type, times))
    if time_types not in ({int}, {float}) or set(map(type, vertices)) != {int}:
        return None
    try:
        offsets = np.fromiter(map(_OFFSET, chunk), np.int64, len(chunk))
        time = np.array(times, np.int64 if time_types == {int} else np.float64)
        vertex = np.array(vertices, np.int64)
    except OverflowError:
        return None
    positions = np.arange(at.pos + 1, at.pos + len(chunk) + 1, dtype=np.int64)
    offsets = np.where(offsets >= 0, offsets, positions)
    if offsets[0] <= at.last or (len(offsets) > 1 and not (np.diff(offsets) > 0).all()):
        return None
    props = list(map(_PROPS, chunk))
    if kind is _ADD_EDGE:
        batch = _chunk_edges(chunk, props, name, vertex, time, offsets)
    else:
        batch = _chunk_messages(props, name, vertex, time, offsets)
    if batch is not None:
        at.pos, at.last = at.pos + len(chunk), int(offsets[-1])
    return batch


def _chunk_edges(
    chunk: list[Any] | tuple[Any, ...],
    props: list[Any],
    name: str,
    vertex: np.ndarray,
    time: np.ndarray,
    offsets: np.ndarray,
) -> UpdateBatch | None:
    """:func:`_chunk_columns` for edge additions: none with properties, int64 targets."""
    if any(props):
        return None
    targets = list(map(_DST, chunk))
    if set(map(type, targets)) != {int}:
        return None
    try:
        dst = np.array(targets, np.int64)
    except OverflowError:
        return None
    return UpdateBatch.edges(name, vertex, dst, time, offsets)


def _chunk_messages(
    props: list[Any], name: str, vertex: np.ndarray, time: np.ndarray, offsets: np.ndarray
) -> UpdateBatch | None:
    """:func:`_chunk_columns` for messages: dict payloads with the same keys in the same
    order, each key's values one column (:func:`_payload_columns`)."""
    if set(map(type, props)) != {dict}:
        return None
    keys = set(map(tuple, props))
    if len(keys) != 1:
        return None
    columns = _payload_columns(props, keys.pop())
    if columns is False:
        return None
    return UpdateBatch.messages(name, vertex, time, offsets, columns)


def _stamped(item: Update, offset: int, name: str) -> Update:
    """``item`` with the id ``(name, offset)``: itself if it carries that id already."""
    if item.source == name and item.offset == offset:
        return item
    return item.with_origin(name, offset)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _column_key(u: Update) -> tuple[Any, ...] | None:
    """What the updates of one column run share -- their kind, time type and (messages)
    payload keys -- for an update :meth:`IterableSource.batches` may take as columns: an
    ``add_edge`` between int64 ids without properties, or a ``message`` to an int64 id
    with a ``dict`` payload; at an int64 or float time, naming no class. ``None``: the
    update travels as a row. (One function: it runs once per item of a list.)"""
    ts, vertex = u.ts, u.vertex
    time_type = type(ts)
    if time_type is int:
        if not _INT64_MIN <= ts <= _INT64_MAX:
            return None
    elif time_type is not float:
        return None
    if type(vertex) is not int or u.vertex_type is not None:
        return None
    if not _INT64_MIN <= vertex <= _INT64_MAX:
        return None
    kind, props = u.kind, u.props
    if kind is _MESSAGE:
        return (_MESSAGE, time_type, *props) if type(props) is dict else None
    if kind is _ADD_EDGE and not props:
        dst = u.dst
        if type(dst) is int and _INT64_MIN <= dst <= _INT64_MAX:
            return (_ADD_EDGE, time_type)
    return None


def _column_run(
    name: str, run: list[tuple[Update, int]], key: tuple[Any, ...]
) -> Iterator[UpdateBatch | Update]:
    """Updates ``(update, offset)`` of one :func:`_column_key` ``key`` as columns: one
    batch, or -- messages whose payloads do not fit -- their stamped rows."""
    vertex = np.array([u.vertex for u, _ in run], np.int64)
    time = np.array([u.ts for u, _ in run], np.int64 if key[1] is int else np.float64)
    offset = np.array([o for _, o in run], np.int64)
    if key[0] is _ADD_EDGE:
        dst = np.array([u.dst for u, _ in run], np.int64)
        yield UpdateBatch.edges(name, vertex, dst, time, offset)
        return
    props = _payload_columns([u.props for u, _ in run], key[2:])
    if props is False:
        yield from (_stamped(u, o, name) for u, o in run)
        return
    yield UpdateBatch.messages(name, vertex, time, offset, props)


_PAYLOAD_TYPES = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}


def _payload_columns(
    payloads: list[Any], keys: tuple[Any, ...]
) -> pa.StructArray | None | Literal[False]:
    """Payloads with the keys ``keys`` as a struct column (``None``: no keys), or
    ``False`` when a key is not a ``str`` or its values are not all of one type of
    :data:`_PAYLOAD_TYPES` (ints within int64): then only rows keep them exactly."""
    if not keys:
        return None
    arrays = []
    for key in keys:
        if type(key) is not str:
            return False
        values = [p[key] for p in payloads]
        types = set(map(type, values))
        arrow_type = _PAYLOAD_TYPES.get(types.pop()) if len(types) == 1 else None
        if arrow_type is None:
            return False
        try:
            arrays.append(pa.array(values, arrow_type))
        except (pa.ArrowException, OverflowError):
            return False
    return pa.StructArray.from_arrays(arrays, list(keys))


# -- time order -----------------------------------------------------------------------------


class SortedSource(_RecordSource):
    """``source``'s updates in time order, sorted outside memory: a file larger than
    memory is read once into sorted runs of ``run_size`` updates (temporary files in
    ``tmpdir``), which are then merged, so at most ``run_size`` updates and one chunk per
    run are in memory at a time.

    Updates keep their source name and offsets (a file's line numbers) and leave in
    ``(time, offset)`` order, the same order each time the file is read. Malformed records
    come first, before any update (see :func:`read_updates`): with ``on_error="raise"``
    the first one stops the ingestion before anything is applied. Detection sees the
    file's own order: after a read, :attr:`out_of_order` counts the updates whose time
    was below one before them, :attr:`max_lateness` the largest such gap.

    >>> from vertex.records import Update
    >>> src = SortedSource(IterableSource([Update.add_edge(1, 2, 9), Update.add_edge(2, 3, 4)]))
    >>> [(u.ts, u.offset) for u in src.read()]
    [(4, 2), (9, 1)]
    """

    offsets_increase = False  # a sorted file's line numbers do not

    def __init__(
        self, source: Source, run_size: int = 1_000_000, tmpdir: str | None = None
    ) -> None:
        if run_size < 1:
            raise ValueError("run_size must be >= 1")
        self.source = source
        self.name = source.name
        self.run_size = run_size
        self.tmpdir = tmpdir
        self.path = getattr(source, "path", None)
        self.out_of_order = 0
        self.max_lateness = 0.0

    def __repr__(self) -> str:
        return f"SortedSource({self.source!r})"

    @property
    def where(self) -> str:
        """What errors show: the wrapped source's file or name."""
        return str(getattr(self.source, "where", self.name))

    def records(self) -> Iterator[Update | MalformedRecord]:
        """Malformed records of the source in its order, then its updates sorted."""
        inner = getattr(self.source, "records", None)
        records = inner() if callable(inner) else self.source.read()
        self.out_of_order, self.max_lateness, latest = 0, 0.0, -math.inf
        with tempfile.TemporaryDirectory(prefix="chronoray-sort-", dir=self.tmpdir) as tmp:
            runs: list[Path] = []
            run: list[tuple[float, int, Update]] = []
            for record in records:
                if isinstance(record, MalformedRecord):
                    yield record
                    continue
                if record.ts < latest:
                    self.out_of_order += 1
                    self.max_lateness = max(self.max_lateness, latest - record.ts)
                else:
                    latest = record.ts
                run.append((record.ts, record.offset, record))
                if len(run) >= self.run_size:
                    runs.append(_spill(run, Path(tmp) / f"run-{len(runs)}"))
                    run = []
            run.sort(key=_order)
            if not runs:
                yield from (u for _, _, u in run)
                return
            if run:
                runs.append(_spill(run, Path(tmp) / f"run-{len(runs)}"))
            yield from (u for _, _, u in heapq.merge(*map(_unspill, runs), key=_order))


def _order(item: tuple[float, int, Update]) -> tuple[float, int]:
    return item[0], item[1]


_CHUNK = 10_000  # updates per pickle in a run file


def _spill(run: list[tuple[float, int, Update]], path: Path) -> Path:
    """Write ``run`` sorted to ``path`` as consecutive pickled chunks."""
    run.sort(key=_order)
    with open(path, "wb") as f:
        for i in range(0, len(run), _CHUNK):
            pickle.dump(run[i : i + _CHUNK], f, protocol=5)
    run.clear()
    return path


def _unspill(path: Path) -> Iterator[tuple[float, int, Update]]:
    """The items of a run file, one chunk in memory at a time."""
    with open(path, "rb") as f:
        while True:
            try:
                chunk = pickle.load(f)
            except EOFError:
                return
            yield from chunk


def check_order(source: Source, floor: float = -math.inf, applied: int = 0) -> None:
    """Raise :class:`OutOfOrder` at the first line of a file source that goes back in time
    (or, after line ``applied`` -- what the graph applied of it before --, below
    ``floor``), before anything of it is applied; other sources are checked as they are
    read (their refusal comes after what preceded it was applied)."""
    first_disorder = getattr(source, "first_disorder", None)
    if callable(first_disorder):
        refusal = first_disorder(floor, applied)
        if refusal is not None:
            raise refusal


# -- file identity --------------------------------------------------------------------------

_BLOCK = 1 << 14  # bytes read at once; a prefix hash is taken at the end of each
_MARKS = 100  # prefix hashes kept at most (besides lines 1, 10, 100 and the last)


@dataclass(frozen=True, slots=True)
class FileFingerprint:
    """What a file held when it was ingested: its path, size, line count, the SHA-256 of its
    bytes, and ``marks``, the SHA-256 (hex, 16 digits) of its first ``line`` lines for a
    few line counts (1, 10, 100, about 100 spread evenly over its bytes, and the last line).

    A file source's offsets are line numbers, so another file under the same source name
    names *other* records with the same ids: the graph would skip them as resends. Two
    files hold the same records through line ``n`` when their prefixes hash alike there
    (:meth:`agrees`): a file that grew (appended lines), or whose lines after what the graph
    applied were fixed, is still the same source.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> a, b = os.path.join(d, "a.txt"), os.path.join(d, "b.txt")
    >>> _ = open(a, "w").write("1 2 10\\n2 3 11\\n")
    >>> _ = open(b, "w").write("1 2 10\\n2 3 11\\n3 4 12\\n")
    >>> fa = FileFingerprint.of(a)
    >>> fa.lines, fa.size
    (2, 14)
    >>> FileFingerprint.of(b, at=fa.mark_lines()).agrees(fa, through=2)
    True
    """

    path: str
    size: int
    lines: int
    sha256: str
    marks: tuple[tuple[int, str], ...]

    @classmethod
    def of(cls, path: str | os.PathLike[str], at: Iterable[int] = ()) -> FileFingerprint:
        """Read the file at ``path`` once; ``at``: line counts to mark besides the usual
        ones (those of another fingerprint, to compare with it). Lines end at ``\\n``
        only, as a file source counts them; blocks without a line to mark are hashed
        whole (about 800 MB a second here)."""
        wanted = sorted({1, 10, 100, *at})
        whole = hashlib.sha256()
        marks: dict[int, str] = {}
        size = lines = 0
        tail = b""  # the last line read while it has no line end yet
        with open(path, "rb") as f:
            while block := f.read(_BLOCK):
                size += len(block)
                data = tail + block
                cut = data.rfind(b"\n") + 1
                body, tail = data[:cut], data[cut:]
                n = body.count(b"\n")
                due = wanted[
                    bisect.bisect_right(wanted, lines) : bisect.bisect_right(wanted, lines + n)
                ]
                if due:  # lines to mark in this block: hashed line by line
                    for line in body.split(b"\n")[:-1]:
                        whole.update(line)
                        whole.update(b"\n")
                        lines += 1
                        if lines in due:
                            marks[lines] = whole.copy().hexdigest()[:16]
                else:
                    whole.update(body)
                    lines += n
                if n:
                    marks[lines] = whole.copy().hexdigest()[:16]
        if tail:
            whole.update(tail)
            lines += 1
            marks[lines] = whole.copy().hexdigest()[:16]
        kept = _thin(sorted(marks.items()), set(wanted) | {lines})
        return cls(os.path.abspath(path), size, lines, whole.hexdigest(), tuple(kept))

    def mark_lines(self) -> list[int]:
        """The line counts this fingerprint has a prefix hash for."""
        return [line for line, _ in self.marks]

    def agrees(self, recorded: FileFingerprint, through: int) -> bool:
        """Whether this file starts with what ``recorded`` held through line ``through``
        (checked at its last mark at or before ``through``; ``True`` if ``through < 1``).
        This fingerprint must mark the lines ``recorded`` marks (``of(path, at=...)``)."""
        if self.sha256 == recorded.sha256 or through < 1:
            return True
        line = max((n for n, _ in recorded.marks if n <= through), default=0)
        if line == 0:
            return True
        return dict(self.marks).get(line) == dict(recorded.marks)[line]

    def describe(self) -> str:
        """The file as people read it: path, lines, size."""
        return f"{self.path} ({self.lines:,} lines, {self.size:,} bytes)"

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "path": self.path,
            "size": self.size,
            "lines": self.lines,
            "sha256": self.sha256,
            "marks": [list(m) for m in self.marks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> FileFingerprint:
        """The fingerprint :meth:`as_dict` gave."""
        marks = tuple((int(n), str(h)) for n, h in data["marks"])  # type: ignore[attr-defined]
        return cls(
            str(data["path"]),
            int(data["size"]),  # type: ignore[call-overload]
            int(data["lines"]),  # type: ignore[call-overload]
            str(data["sha256"]),
            marks,
        )


def _thin(marks: list[tuple[int, str]], keep: set[int]) -> list[tuple[int, str]]:
    """At most about :data:`_MARKS` evenly spread marks, plus those at the lines ``keep``."""
    regular = [m for m in marks if m[0] not in keep]
    step = max(1, math.ceil(len(regular) / _MARKS))
    chosen = {m[0] for m in regular[step - 1 :: step]} | keep
    return [m for m in marks if m[0] in chosen]


# -- opening and reading ------------------------------------------------------------------


def open_source(
    path: str | os.PathLike[str],
    format: Literal["snap", "bitcoin-csv", "graphtides"],
    name: str | None = None,
) -> Source:
    """The file source for ``format`` (``"snap"``, ``"bitcoin-csv"`` or ``"graphtides"``,
    :mod:`chronoray.tides`) reading ``path``."""
    if format == "snap":
        return SnapEdgeSource(path, name)
    if format == "bitcoin-csv":
        return BitcoinCsvSource(path, name)
    if format == "graphtides":
        from chronoray.tides import GraphTidesSource  # it builds on this module

        return GraphTidesSource(path, name)
    raise ValueError(
        f"unknown source format {format!r}; expected 'snap', 'bitcoin-csv' or 'graphtides'"
    )


class RejectWriter:
    """Appends ``source<TAB>line<TAB>reason<TAB>text`` lines; opens the file on first use.

    The rejects file of an ingestion: malformed records skipped (``on_error="skip"``) and
    late updates set aside (:func:`late_record`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None

    def write(self, record: MalformedRecord) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8", newline="\n")
        self._file.write(f"{record.source}\t{record.line}\t{record.reason}\t{record.text}\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def late_record(update: Update, watermark: float, where: str) -> MalformedRecord:
    """How a late update is written to the rejects file: where it came from (the file and
    its line, or the source and position), by how much it was late, and the update.

    >>> r = late_record(Update.add_edge(1, 2, 90).with_origin("f.txt", 7), 100, "f.txt")
    >>> r.source, r.line, r.text
    ('f.txt', 7, 'add_edge 1 2 90')
    >>> r.reason
    'late by 10 s: time 90 is before the watermark 100'
    """
    u = update
    text = " ".join(str(x) for x in (u.kind.value, u.vertex, u.dst, u.ts) if x is not None)
    if u.props:
        text += " " + " ".join(f"{k}={v!r}" for k, v in u.props.items())
    reason = (
        f"late by {show_time(watermark - u.ts)} s: time {show_time(u.ts)} is before the "
        f"watermark {show_time(watermark)}"
    )
    return MalformedRecord(where, u.offset, text, reason)


def read_updates(
    source: Source,
    on_error: Literal["raise", "skip"] = "raise",
    rejects: str | os.PathLike[str] | None = None,
) -> tuple[Iterator[Update], ReadStats]:
    """Iterate ``source``'s updates, handling malformed records per ``on_error``.

    Returns the iterator and a :class:`ReadStats` updated live as it advances.

    * ``"raise"``: a :class:`MalformedRecord` propagates, after every good update before
      it was yielded; ``rejects`` is not used.
    * ``"skip"``: a malformed record is counted in ``ReadStats.rejected``, written to
      ``rejects`` (if given) as ``{source}\\t{line}\\t{reason}\\t{text}`` -- the file is
      created on the first reject, appended to, flushed per line -- and reading goes on.
      This needs a resumable source (one with ``records()``, like all built-in ones); a
      source with only ``read()`` ends at its first malformed record, which propagates.

    For a source without ``records()`` the updates are also checked: each must be an
    :class:`Update` (else ``TypeError``) with an offset greater than the previous one
    (else ``ValueError``), since exactly-once application relies on it.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if not isinstance(source, Source):
        raise TypeError(f"not a Source (needs .name and .read()): {source!r}")
    stats = ReadStats()
    records = getattr(source, "records", None)
    if callable(records):
        writer = RejectWriter(rejects) if rejects is not None and on_error == "skip" else None
        return _from_records(records(), on_error == "skip", writer, stats), stats
    return _from_read(source, stats), stats


_ROWS = 8192  # rows of a batch handed on at once (memory and progress stay fine-grained)


def read_columns(
    source: Source,
    on_error: Literal["raise", "skip"] = "raise",
    rejects: str | os.PathLike[str] | None = None,
) -> tuple[Iterator[UpdateBatch | Update | None], ReadStats]:
    """:func:`read_updates`, with runs of good records as
    :class:`~vertex.columns.UpdateBatch` es of at most :data:`_ROWS` rows where the source
    reads columns (a ``batches()`` method, as the file sources have); other sources give
    their updates one by one, as :func:`read_updates` does. The same updates, errors,
    rejects and counters, in the same order."""
    batches = getattr(source, "batches", None)
    if not callable(batches):
        return read_updates(source, on_error, rejects)
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    stats = ReadStats()
    writer = RejectWriter(rejects) if rejects is not None and on_error == "skip" else None
    return _from_records(_sliced(batches()), on_error == "skip", writer, stats), stats


def _sliced(
    items: Iterator[UpdateBatch | Update | MalformedRecord],
) -> Iterator[UpdateBatch | Update | MalformedRecord]:
    """``items`` with every batch cut into slices of at most :data:`_ROWS` rows."""
    for item in items:
        if isinstance(item, UpdateBatch) and len(item) > _ROWS:
            yield from (item.slice(i, i + _ROWS) for i in range(0, len(item), _ROWS))
        else:
            yield item


def _from_records(
    records: Iterator[UpdateBatch | Update | MalformedRecord | None],
    skip: bool,
    writer: RejectWriter | None,
    stats: ReadStats,
) -> Iterator[Any]:
    try:
        for record in records:
            if record is None:  # nothing to read now: the feed times out idle meanwhile
                yield record
                continue
            if isinstance(record, MalformedRecord):
                if not skip:
                    raise record
                stats.rejected += 1
                if writer is not None:
                    writer.write(record)
                continue
            if isinstance(record, UpdateBatch):
                stats.read += len(record)
                stats.last_offset = record.last_offset
            else:
                stats.read += 1
                stats.last_offset = record.offset
            yield record
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()
        if writer is not None:
            writer.close()


def _from_read(source: Source, stats: ReadStats) -> Iterator[Update]:
    updates = iter(source.read())
    try:
        for update in updates:
            if not isinstance(update, Update):
                raise TypeError(f"source {source.name!r} yielded a non-Update: {update!r}")
            if update.offset <= stats.last_offset:
                raise ValueError(
                    f"source {source.name!r}: offset {update.offset} does not increase "
                    f"(previous {stats.last_offset}); stamp updates with with_origin()"
                )
            stats.read += 1
            stats.last_offset = update.offset
            yield update
    finally:
        close = getattr(updates, "close", None)
        if close is not None:
            close()


mark_module_api(
    globals(),
    public=(
        "BitcoinCsvSource",
        "IterableSource",
        "MalformedRecord",
        "open_source",
        "SnapEdgeSource",
        "SortedSource",
        "Source",
    ),
)
