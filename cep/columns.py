"""The merged DEBS stream as columns: one Arrow table, read without a Python loop per line.

:func:`read_columns` reads the official files (same formats, merge order and bad-input
rules as :func:`cep.readers.read_stream`) into one table of the schema :data:`SCHEMA`,
one row per event in stream order:

========  ===========  ==========  ============  ============  ==========  ==========
kind      ``a``        ``b``       ``c``         ``d``         ``text``    ``name``
========  ===========  ==========  ============  ============  ==========  ==========
POST      post_id      user_id     -1            -1            post        user
COMMENT   comment_id   user_id     replied (-1)  post (-1)     comment     user
LIKE      user_id      comment_id  -1            -1            ""          ""
FRIEND    user_id_1    user_id_2   -1            -1            ""          ""
========  ===========  ==========  ============  ============  ==========  ==========

plus ``seq`` (1-based position in the stream) and ``ts`` (ms since the epoch, UTC).

How: a compiled scan (numba) splits each file's bytes into lines and fields, checks and
converts timestamps and ids in place; texts become Arrow string columns by one copy. A
line the scan finds bad (or one holding non-ASCII bytes that are not UTF-8) is handed to
:func:`cep.readers.line_outcome`, the one owner of the messages, so a bad line is named
exactly as the row reader names it. Ids must fit in 63 bits (the row reader takes any
size).

Bad input: with ``on_error="raise"``, :func:`read_columns` returns the events the row
reader would have yielded before raising, and the :class:`chronoray.MalformedRecord` to
raise after them (:attr:`Columns.error`): a caller processes the events, then raises. With
``"skip"`` bad lines are counted and written to ``rejects``, file by file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numba
import numpy as np
import pyarrow as pa

from cep.readers import KINDS, DebsFiles, StreamStats, line_outcome, time_goes_back
from chronoray import MalformedRecord
from chronoray.sources import RejectWriter

__all__ = ["COMMENT", "FRIEND", "LIKE", "POST", "SCHEMA", "Columns", "read_columns"]

POST, COMMENT, LIKE, FRIEND = 0, 1, 2, 3
"""Event kinds: the ``kind`` column, in merge order at equal times."""

SCHEMA = pa.schema(
    [
        ("seq", pa.int64()),
        ("ts", pa.int64()),
        ("kind", pa.int8()),
        ("a", pa.int64()),
        ("b", pa.int64()),
        ("c", pa.int64()),
        ("d", pa.int64()),
        ("text", pa.large_string()),
        ("name", pa.large_string()),
    ]
)

_TS, _ID, _TEXT, _REF = 0, 1, 2, 3
# per kind: the field types (ids fill a, b, c, d in order); how many texts (text, name)
_LAYOUT = {
    "posts": ((_TS, _ID, _ID, _TEXT, _TEXT), 2),
    "comments": ((_TS, _ID, _ID, _TEXT, _TEXT, _REF, _REF), 2),
    "likes": ((_TS, _ID, _ID), 0),
    "friendships": ((_TS, _ID, _ID), 0),
}
_GOOD, _BLANK, _BAD, _TOO_LARGE = 0, 1, 2, 3
_DAYS_BEFORE = np.array([0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334], np.int64)


@numba.njit(cache=True, nogil=True)
def _digits(buf: np.ndarray, s: int, e: int) -> int:
    """The value of ``buf[s:e]`` as ASCII digits: -1 if not digits, -2 if over 18."""
    if e <= s:
        return -1
    if e - s > 18:
        for i in range(s, e):
            if buf[i] < 48 or buf[i] > 57:
                return -1
        return -2
    v = 0
    for i in range(s, e):
        c = buf[i]
        if c < 48 or c > 57:
            return -1
        v = v * 10 + (c - 48)
    return v


@numba.njit(cache=True, nogil=True)
def _timestamp(buf: np.ndarray, s: int, e: int, days_before: np.ndarray) -> int:
    """Milliseconds of an official timestamp at ``buf[s:e]``, or -1 if it is not one."""
    if e - s != 28:
        return -1
    for i, ch in ((4, 45), (7, 45), (10, 84), (13, 58), (16, 58), (19, 46)):
        if buf[s + i] != ch:
            return -1
    sign = buf[s + 23]
    if sign != 43 and sign != 45:
        return -1
    year = _digits(buf, s, s + 4)
    month = _digits(buf, s + 5, s + 7)
    day = _digits(buf, s + 8, s + 10)
    hour = _digits(buf, s + 11, s + 13)
    minute = _digits(buf, s + 14, s + 16)
    second = _digits(buf, s + 17, s + 19)
    millis = _digits(buf, s + 20, s + 23)
    off_h = _digits(buf, s + 24, s + 26)
    off_m = _digits(buf, s + 26, s + 28)
    if min(year, month, day, hour, minute, second, millis, off_h, off_m) < 0:
        return -1
    if hour > 23 or minute > 59 or second > 59 or off_h > 23 or off_m > 59:
        return -1
    if year < 1 or month < 1 or month > 12 or day < 1:
        return -1
    leap = (year % 4 == 0 and year % 100 != 0) or year % 400 == 0
    dim = days_before[month + 1] - days_before[month] if month < 12 else 31
    if month == 2 and leap:
        dim = 29
    if day > dim:
        return -1
    y = year - 1
    days = y * 365 + y // 4 - y // 100 + y // 400 + days_before[month] + day - 1
    if leap and month > 2:
        days += 1
    days -= 719162  # 0001-01-01 .. 1970-01-01
    offset = (off_h * 60 + off_m) * 60_000
    local = days * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000 + millis
    return local - offset if sign == 43 else local + offset


@numba.njit(cache=True, nogil=True)
def _scan(buf, spec, days_before, line_start, line_end, lineno, status, which, ts,
          ids, texts):  # fmt: skip
    """Split ``buf`` into lines and fields; fill one row per non-blank line; the rows."""
    n = buf.shape[0]
    nfields = spec.shape[0]
    ref_fields = 0
    for j in range(nfields):
        if spec[j] == _REF:
            ref_fields += 1
    bounds = np.empty(nfields + 1, np.int64)
    row = 0
    pos = 0
    line = 0
    while pos < n:
        line += 1
        s = pos
        e = s
        while e < n and buf[e] != 10:
            e += 1
        pos = e + 1
        while e > s and buf[e - 1] == 13:
            e -= 1
        blank = True
        for i in range(s, e):
            c = buf[i]
            if c != 32 and c != 9 and c != 13 and c != 11 and c != 12:
                blank = False
                break
        if blank:
            continue
        line_start[row] = s
        line_end[row] = e
        lineno[row] = line
        status[row] = _GOOD
        f = 0
        bounds[0] = s
        for i in range(s, e):
            if buf[i] == 124:
                f += 1
                if f >= nfields:
                    break
                bounds[f] = i + 1
        if f != nfields - 1:
            status[row] = _BAD
            row += 1
            continue
        bounds[nfields] = e + 1
        k = 0
        t = 0
        refs = 0
        for j in range(nfields):
            fs, fe = bounds[j], bounds[j + 1] - 1
            kind = spec[j]
            if kind == _TS:
                v = _timestamp(buf, fs, fe, days_before)
                if v == -1 and status[row] == _GOOD:
                    status[row] = _BAD
                ts[row] = v
            elif kind == _TEXT:
                texts[row, t, 0] = fs
                texts[row, t, 1] = fe
                t += 1
            else:
                if kind == _REF and (
                    fe == fs or (fe - fs == 2 and buf[fs] == 45 and buf[fs + 1] == 49)
                ):
                    v = -1
                else:
                    v = _digits(buf, fs, fe)
                    if kind == _REF:
                        refs += 1
                    if v == -1:
                        status[row] = _BAD
                    elif v == -2 and status[row] == _GOOD:
                        status[row] = _TOO_LARGE
                        which[row] = j  # the field, for the message
                if status[row] == _GOOD:
                    ids[row, k] = v
                k += 1
        if ref_fields and refs != 1:
            status[row] = _BAD  # a comment needs exactly one of replied and post
        row += 1
    return row


@numba.njit(cache=True, nogil=True)
def _gather(buf, spans, out):  # fmt: skip
    """Copy the byte ranges ``spans`` (rows x [start, end]) one after another into ``out``."""
    at = 0
    for r in range(spans.shape[0]):
        for i in range(spans[r, 0], spans[r, 1]):
            out[at] = buf[i]
            at += 1


def _strings(buf: np.ndarray, spans: np.ndarray) -> pa.Array:
    lengths = spans[:, 1] - spans[:, 0]
    offsets = np.zeros(len(spans) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    _gather(buf, spans, data)
    return pa.LargeStringArray.from_buffers(len(spans), pa.py_buffer(offsets), pa.py_buffer(data))


@dataclass
class _File:
    """One file read: its good rows as columns, its bad lines in order."""

    kind: int
    lines: np.ndarray  # line number of each good row
    columns: dict[str, pa.Array | np.ndarray]
    bad: list[MalformedRecord]
    good_before_bad: int  # good rows before the first bad line

    def head(self, rows: int) -> _File:
        """The file's first ``rows`` good rows (and its bad lines)."""
        columns = {k: v[:rows] for k, v in self.columns.items()}
        return _File(self.kind, self.lines[:rows], columns, self.bad, rows)


def _read_file(path: Path, kind: str) -> _File:
    spec, text_fields = _LAYOUT[kind]
    where = os.fspath(path)
    buf = np.fromfile(path, np.uint8)
    lines = int(np.count_nonzero(buf == 10)) + 1
    starts, ends, lineno = (np.empty(lines, np.int64) for _ in range(3))
    status = np.empty(lines, np.int8)
    which = np.zeros(lines, np.int64)
    ts = np.empty(lines, np.int64)
    ids = np.full((lines, 4), -1, np.int64)
    texts = np.zeros((lines, 2, 2), np.int64)
    rows = _scan(buf, np.array(spec, np.int8), _DAYS_BEFORE,
                 starts, ends, lineno, status, which, ts, ids, texts)  # fmt: skip
    starts, ends, lineno, status = starts[:rows], ends[:rows], lineno[:rows], status[:rows]
    ts, ids, texts = ts[:rows], ids[:rows], texts[:rows]
    raw = buf.tobytes() if rows else b""
    # non-ASCII bytes: check those lines are UTF-8 (the scan looked at ASCII only)
    high = np.flatnonzero(buf >= 128)
    if len(high):
        for r in np.unique(np.searchsorted(ends, high)):
            if r < rows and status[r] == _GOOD:
                try:
                    raw[starts[r] : ends[r]].decode("utf-8")
                except UnicodeDecodeError:
                    status[r] = _BAD
    good = status == _GOOD
    # time order: a line earlier than the latest good line before it is bad
    latest = np.maximum.accumulate(np.where(good, ts, np.iinfo(np.int64).min))
    back = np.zeros(rows, bool)
    back[1:] = good[1:] & (ts[1:] < latest[:-1])
    good &= ~back
    bad: list[MalformedRecord] = []
    for r in np.flatnonzero(~good):
        line = raw[starts[r] : ends[r]]
        if back[r]:
            bad.append(time_goes_back(where, int(lineno[r]), line))
        elif status[r] == _TOO_LARGE:
            layout = _LAYOUT_NAMES[kind][int(which[r])]
            text = line.decode("utf-8")
            value = text.split("|")[int(which[r])]
            reason = f"{layout} is too large for a 63-bit integer: {value!r}"
            bad.append(MalformedRecord(where, int(lineno[r]), text, reason))
        else:
            outcome = line_outcome(where, int(lineno[r]), line, kind)
            if not isinstance(outcome, MalformedRecord):  # the two readers disagree: a bug
                raise AssertionError(f"{where}:{lineno[r]}: the scan refused a good line")
            bad.append(outcome)
    first_bad = int(np.argmin(good)) if not good.all() else rows
    keep = np.flatnonzero(good)
    columns: dict[str, pa.Array | np.ndarray] = {"ts": ts[keep]}
    for col, name in enumerate("abcd"):
        columns[name] = ids[keep, col]
    for t, name in enumerate(("text", "name")):
        columns[name] = (
            _strings(buf, texts[keep, t]) if t < text_fields else _empty_strings(len(keep))
        )
    before = int(np.count_nonzero(good[:first_bad]))
    return _File(KINDS.index(kind), lineno[keep], columns, bad, before)


_LAYOUT_NAMES = {
    "posts": ("ts", "post_id", "user_id", "post", "user"),
    "comments": (
        "ts",
        "comment_id",
        "user_id",
        "comment",
        "user",
        "comment_replied",
        "post_commented",
    ),  # fmt: skip
    "likes": ("ts", "user_id", "comment_id"),
    "friendships": ("ts", "user_id_1", "user_id_2"),
}


def _empty_strings(n: int) -> pa.Array:
    return pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(np.zeros(n + 1, np.int64)), pa.py_buffer(b"")
    )


@dataclass
class Columns:
    """What :func:`read_columns` read: the events, the counters, and in ``raise`` mode
    the first bad line (to raise once the events before it are processed)."""

    table: pa.Table
    stats: StreamStats
    error: MalformedRecord | None = None


def read_columns(
    files: DebsFiles,
    on_error: Literal["raise", "skip"] = "raise",
    rejects: str | os.PathLike[str] | None = None,
) -> Columns:
    """The events of ``files`` merged by time, as one table of :data:`SCHEMA` (see the
    module doc)."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    present = [(kind, Path(getattr(files, kind))) for kind in KINDS if getattr(files, kind)]
    for kind, path in present:
        if not path.is_file():
            raise FileNotFoundError(f"{kind} file not found: {path}")
    read = [_read_file(path, kind) for kind, path in present]
    stats = StreamStats()
    error = None
    if on_error == "raise":
        # the rows before each file's first bad line
        read = [f.head(f.good_before_bad) for f in read]
    else:
        writer = RejectWriter(rejects) if rejects is not None else None
        for f in read:
            stats.rejected += len(f.bad)
            if writer is not None:
                for record in f.bad:
                    writer.write(record)
        if writer is not None:
            writer.close()
    table, position = _merge(read)
    if on_error == "raise":
        # the row reader merges lazily: it reads a file's next line once the file's
        # current event was yielded (each file's first line at the start, in file order),
        # so it raises right after yielding a bad file's last good event
        raises = [(position[i][-1] + 1 if len(position[i]) else 0, i)
                  for i, f in enumerate(read) if f.bad]  # fmt: skip
        if raises:
            at, i = min(raises)
            table, error = table.slice(0, at), read[i].bad[0]
            kinds = table.column("kind").to_numpy()
            for f in read:
                stats.events[KINDS[f.kind]] += int(np.count_nonzero(kinds == f.kind))
            return Columns(table, stats, error)
    for f in read:
        stats.events[KINDS[f.kind]] += len(f.lines)
    return Columns(table, stats, error)


def _merge(read: list[_File]) -> tuple[pa.Table, list[np.ndarray]]:
    """The files' rows in stream order, and where each file's rows went."""

    def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    ts = cat([f.columns["ts"] for f in read], np.int64)
    kind = cat([np.full(len(f.lines), f.kind, np.int8) for f in read], np.int8)
    order = np.lexsort((cat([f.lines for f in read], np.int64), kind, ts))
    columns = {"seq": np.arange(1, len(order) + 1, dtype=np.int64), "ts": ts[order],
               "kind": kind[order]}  # fmt: skip
    for name in "abcd":
        columns[name] = cat([f.columns[name] for f in read], np.int64)[order]
    for name in ("text", "name"):
        chunks = [f.columns[name] for f in read] or [_empty_strings(0)]
        columns[name] = pa.concat_arrays(chunks).take(pa.array(order))
    where = np.empty(len(order), np.int64)
    where[order] = np.arange(len(order))
    bounds = np.cumsum([0, *(len(f.lines) for f in read)])
    position = [where[bounds[i] : bounds[i + 1]] for i in range(len(read))]
    return pa.table(columns, schema=SCHEMA), position
