"""Per-shard event-sourcing log store: four append-only logs plus a small meta map.

A shard keeps four logs -- :attr:`LogName.COMMANDS`, :attr:`LogName.EVENTS`,
:attr:`LogName.CLOCKS` and :attr:`LogName.CHECKPOINTS` -- each a map from a sequence
number (``seq``, an integer in ``[1, 2**64)``) to an opaque ``bytes`` value, and a
``meta`` map from ``str`` keys to ``bytes``. Two implementations share one contract
(:class:`LogStore`, checked by the conformance suite ``tests/shards/log_spec.py``):
:class:`MemoryLogStore` for fast in-process tests and :class:`RocksLogStore` over a real
RocksDB database.

Guarantees:

* **Atomic batches.** :meth:`LogStore.append` writes one :class:`LogBatch` -- entries of
  any of the three logs and meta keys -- entirely or not at all. Every seq is checked
  before anything is written; a bad one raises :class:`SequenceError` and nothing of the
  batch becomes visible.
* **Strictly increasing, never reset.** Per log, the seqs of a batch must be ``>= 1``,
  strictly increasing and greater than :meth:`LogStore.last_seq`. ``last_seq`` never
  goes back, and survives close and reopen, so an old seq is refused forever.
* **Ordered scans.** :meth:`LogStore.scan` yields ``(seq, value)`` in ascending seq order
  (descending with ``reverse=True``), ``start`` inclusive and ``end`` exclusive. A scan's
  upper bound is fixed when :meth:`~LogStore.scan` is called: entries appended while it
  is being consumed are not yielded. Do not consume a scan after closing its store (it
  may raise :class:`LogError`).
* **One writer.** A store is held by one open writer: opening it again -- from another
  process, or from another handle in this process -- raises :class:`LogLockedError`
  until the holder calls :meth:`LogStore.close` (idempotent; it releases the lock).
* **Durability** (:class:`RocksLogStore`). Every batch goes to RocksDB's write-ahead log:
  with ``sync=False`` (no fsync) an acknowledged batch survives a crash of the process,
  with ``sync=True`` it also survives a crash of the machine.
* **Plain on-disk format** (:class:`RocksLogStore`). A RocksDB database opened by
  ``rocksdict`` in raw mode, with column families ``commands``, ``events``, ``clocks``
  (keys: the seq as 8-byte big-endian unsigned, see :func:`encode_seq`, so key order is
  seq order) and ``meta`` (keys: utf-8 strings). Any process with ``rocksdict`` can read
  it, even while the writer is open, with ``AccessType.read_only()`` or as a secondary.
  (The family ``checkpoints`` is keyed like the other logs.)
* **Values are opaque.** A store keeps the bytes it is given; the shard's format
  (:mod:`shards.codec`) frames every value with a CRC-32 and raises
  :class:`LogCorrupted`, defined here with the other log errors, for a value that fails
  it or does not decode.

Neither class is meant for concurrent appends from several threads, though appends and
close are serialized by a lock.
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import os
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

from rocksdict import (
    AccessType,
    ColumnFamily,
    Options,
    Rdict,
    RdictIter,
    WriteBatch,
    WriteOptions,
)

from vertex.annotations import mark_module_api

__all__ = [
    "LogName",
    "LogError",
    "LogLockedError",
    "LogCorrupted",
    "SequenceError",
    "LogBatch",
    "LogStore",
    "MemoryLogStore",
    "RocksLogStore",
    "encode_seq",
    "decode_seq",
    "MAX_SEQ",
    "open_log_store",
]

MAX_SEQ = 2**64 - 1
"""The largest sequence number a log can hold (keys are 8-byte unsigned integers)."""

_META_CF = "meta"
_CHUNK_MIN = 256
_CHUNK_MAX = 8192
_CHUNK_BYTES = 8 * 1024 * 1024  # a scan chunk also stops here: values are whole blocks
_MAX_WAL_BYTES = 16 * 1024 * 1024


class LogName(enum.StrEnum):
    """The logs of a shard; the value is the RocksDB column family name."""

    COMMANDS = "commands"
    EVENTS = "events"
    CLOCKS = "clocks"
    CHECKPOINTS = "checkpoints"


class LogError(Exception):
    """Base class of log store errors (also: store closed, read-only, cannot open)."""


class LogLockedError(LogError):
    """The store is already open by another writer (another process or handle)."""


class SequenceError(LogError):
    """A batch holds a sequence number that is not strictly increasing (nothing written)."""


class LogCorrupted(LogError):
    """A stored log value fails its checksum or does not decode (see :mod:`shards.codec`,
    which raises it): the value is never used. The message names what is known of where
    it is -- the shard, the log's path, the column family, the key -- and the reason;
    each is also an attribute (``None`` if unknown). Readers that know more of the place
    complete it with :meth:`at`. Pickles with its fields (it crosses process bounds)."""

    def __init__(
        self,
        reason: str,
        family: str | None = None,
        key: int | str | None = None,
        path: str | None = None,
        shard: int | None = None,
    ) -> None:
        self.reason = reason
        self.family = family
        self.key = key
        self.path = path
        self.shard = shard
        super().__init__(self._message())

    def _message(self) -> str:
        place = []
        if self.shard is not None:
            place.append(f"shard {self.shard}")
        if self.path is not None:
            place.append(f"log {self.path}")
        if self.family is not None:
            place.append(f"column family {self.family!r}")
        if self.key is not None:
            place.append(f"key {self.key!r}")
        where = ", ".join(place) or "log value"
        return f"corrupted log value ({where}): {self.reason}"

    def at(
        self,
        path: str | None = None,
        key: int | str | None = None,
        *,
        shard: int | None = None,
        family: str | None = None,
    ) -> LogCorrupted:
        """This error with the place completed: fields it already names are kept."""
        return LogCorrupted(
            self.reason,
            self.family if self.family is not None else family,
            self.key if self.key is not None else key,
            self.path if self.path is not None else path,
            self.shard if self.shard is not None else shard,
        )

    def __reduce__(self) -> tuple[type[LogCorrupted], tuple[object, ...]]:
        return (type(self), (self.reason, self.family, self.key, self.path, self.shard))


def encode_seq(seq: int) -> bytes:
    """The on-disk key of ``seq``: 8-byte big-endian unsigned, so byte order = seq order."""
    if not 0 <= seq <= MAX_SEQ:
        raise ValueError(f"sequence number {seq} outside [0, {MAX_SEQ}]")
    return seq.to_bytes(8, "big")


def decode_seq(key: bytes) -> int:
    """Inverse of :func:`encode_seq`."""
    if len(key) != 8:
        raise ValueError(f"a log key has 8 bytes, got {len(key)}")
    return int.from_bytes(key, "big")


@dataclass
class LogBatch:
    """One atomic write: entries of any of the logs, and meta keys to set."""

    entries: dict[LogName, list[tuple[int, bytes]]] = field(default_factory=dict)
    meta: dict[str, bytes] = field(default_factory=dict)

    def add(self, log: LogName, seq: int, value: bytes) -> None:
        """Append entry ``seq -> value`` to ``log`` (checked at :meth:`LogStore.append`)."""
        self.entries.setdefault(LogName(log), []).append((seq, value))

    def put_meta(self, key: str, value: bytes) -> None:
        """Set meta ``key`` to ``value`` (the last value of a key in a batch wins)."""
        self.meta[key] = value

    def __len__(self) -> int:
        """Number of log entries (meta keys not counted)."""
        return sum(len(v) for v in self.entries.values())


@runtime_checkable
class LogStore(Protocol):
    """The contract of a shard's log store (see the module docstring)."""

    def append(self, batch: LogBatch) -> None:
        """Write ``batch`` atomically; :class:`SequenceError` (nothing written) on a bad seq."""
        ...

    def scan(
        self,
        log: LogName,
        start: int | None = None,
        end: int | None = None,
        *,
        reverse: bool = False,
    ) -> Iterator[tuple[int, bytes]]:
        """``(seq, value)`` with ``start <= seq < end`` in seq order (descending if reverse)."""
        ...

    def last_seq(self, log: LogName) -> int:
        """The largest seq ever appended to ``log``; 0 when empty."""
        ...

    def floor(self, log: LogName, seq: int) -> tuple[int, bytes] | None:
        """The entry with the largest seq ``<= seq``, or ``None``."""
        ...

    def get_meta(self, key: str) -> bytes | None:
        """The value of meta ``key``, or ``None``."""
        ...

    def close(self) -> None:
        """Release the store and its lock; idempotent."""
        ...

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        ...


# -- validation shared by both stores -------------------------------------------------------

_Checked = tuple[list[tuple[LogName, list[tuple[int, bytes]]]], list[tuple[str, bytes]]]


def _as_bytes(value: object, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, got {type(value).__name__}")


def _check_batch(batch: LogBatch, last: dict[LogName, int]) -> _Checked:
    """Validate every entry of ``batch`` against ``last``; raises before anything is written."""
    logs: list[tuple[LogName, list[tuple[int, bytes]]]] = []
    for raw_name, entries in batch.entries.items():
        try:
            name = LogName(raw_name)
        except ValueError:
            raise LogError(f"unknown log {raw_name!r}") from None
        if not entries:
            continue
        if _well_formed(entries, last[name]):
            logs.append((name, entries))
            continue
        prev = last[name]
        checked: list[tuple[int, bytes]] = []
        for seq, value in entries:
            if not isinstance(seq, int) or isinstance(seq, bool):
                raise SequenceError(f"{name.value}: sequence number {seq!r} is not an int")
            if seq < 1 or seq > MAX_SEQ:
                raise SequenceError(f"{name.value}: sequence number {seq} outside [1, {MAX_SEQ}]")
            if seq <= prev:
                raise SequenceError(
                    f"{name.value}: sequence number {seq} must be greater than {prev}"
                )
            checked.append((seq, _as_bytes(value, f"{name.value} entry {seq}")))
            prev = seq
        logs.append((name, checked))
    meta: list[tuple[str, bytes]] = []
    for key, value in batch.meta.items():
        if not isinstance(key, str):
            raise TypeError(f"meta key must be str, got {type(key).__name__}")
        meta.append((key, _as_bytes(value, f"meta {key!r}")))
    return logs, meta


def _well_formed(entries: list[tuple[int, bytes]], prev: int) -> bool:
    """Fast path of the hot write path: int seqs in order and in range, bytes values."""
    for seq, value in entries:
        if type(seq) is not int or seq <= prev or type(value) is not bytes:
            return False
        prev = seq
    return prev <= MAX_SEQ


def _bounds(start: int | None, end: int | None, last: int) -> tuple[int, int]:
    """Inclusive ``(lo, hi)`` seq range of a scan; empty when ``lo > hi``."""
    lo = 1 if start is None else max(start, 1)
    hi = last if end is None else min(end - 1, last)
    return lo, hi


# -- in memory --------------------------------------------------------------------------------


class _MemoryLog:
    __slots__ = ("seqs", "values")

    def __init__(self) -> None:
        self.seqs: list[int] = []  # strictly increasing: appended in order
        self.values: list[bytes] = []


class _MemoryData:
    __slots__ = ("logs", "meta", "last")

    def __init__(self) -> None:
        self.logs: dict[LogName, _MemoryLog] = {name: _MemoryLog() for name in LogName}
        self.meta: dict[str, bytes] = {}
        self.last: dict[LogName, int] = dict.fromkeys(LogName, 0)


_MEMORY_DATA: dict[str, _MemoryData] = {}
_MEMORY_OPEN: set[str] = set()
_MEMORY_LOCK = threading.Lock()


class MemoryLogStore:
    """An in-process :class:`LogStore` whose data lives in a module-level registry.

    ``MemoryLogStore(name)`` opens the data named ``name`` (created empty the first time);
    after :meth:`close`, ``MemoryLogStore(name)`` reopens the same data. Opening a name
    that is currently open raises :class:`LogLockedError`; :meth:`destroy` drops the data.
    """

    def __init__(self, name: str) -> None:
        with _MEMORY_LOCK:
            if name in _MEMORY_OPEN:
                raise LogLockedError(f"memory log store {name!r} is already open")
            _MEMORY_OPEN.add(name)
            self._data = _MEMORY_DATA.setdefault(name, _MemoryData())
        self.name = name
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def destroy(cls, name: str) -> None:
        """Drop the data named ``name``; :class:`LogLockedError` if it is open."""
        with _MEMORY_LOCK:
            if name in _MEMORY_OPEN:
                raise LogLockedError(f"memory log store {name!r} is open; close it first")
            _MEMORY_DATA.pop(name, None)

    def _check_open(self) -> None:
        if self._closed:
            raise LogError(f"memory log store {self.name!r} is closed")

    def append(self, batch: LogBatch) -> None:
        with self._lock:
            self._check_open()
            data = self._data
            logs, meta = _check_batch(batch, data.last)
            for name, entries in logs:
                log = data.logs[name]
                for seq, value in entries:
                    log.seqs.append(seq)
                    log.values.append(value)
                data.last[name] = entries[-1][0]
            for key, value in meta:
                data.meta[key] = value

    def scan(
        self,
        log: LogName,
        start: int | None = None,
        end: int | None = None,
        *,
        reverse: bool = False,
    ) -> Iterator[tuple[int, bytes]]:
        self._check_open()
        mlog = self._data.logs[LogName(log)]
        n = len(mlog.seqs)  # fixes the upper bound: later appends are not seen
        lo, hi = _bounds(start, end, mlog.seqs[n - 1] if n else 0)
        if lo > hi:
            return iter(())
        i = bisect_left(mlog.seqs, lo, 0, n)
        j = bisect_right(mlog.seqs, hi, 0, n)
        indices = range(j - 1, i - 1, -1) if reverse else range(i, j)
        return self._yield(mlog, indices)

    def _yield(self, mlog: _MemoryLog, indices: range) -> Iterator[tuple[int, bytes]]:
        for k in indices:
            self._check_open()
            yield mlog.seqs[k], mlog.values[k]

    def last_seq(self, log: LogName) -> int:
        self._check_open()
        return self._data.last[LogName(log)]

    def floor(self, log: LogName, seq: int) -> tuple[int, bytes] | None:
        self._check_open()
        mlog = self._data.logs[LogName(log)]
        k = bisect_right(mlog.seqs, seq)
        if k == 0:
            return None
        return mlog.seqs[k - 1], mlog.values[k - 1]

    def get_meta(self, key: str) -> bytes | None:
        self._check_open()
        return self._data.meta.get(key)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with _MEMORY_LOCK:
                _MEMORY_OPEN.discard(self.name)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> MemoryLogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"{type(self).__name__}({self.name!r}, {state})"


# -- RocksDB ----------------------------------------------------------------------------------


def _is_lock_error(message: str) -> bool:
    # RocksDB's LOCK file error, as rocksdict reports it (a plain ``Exception``):
    #   other process: "IO error: While lock file: <path>/LOCK: Resource temporarily unavailable"
    #   this process:  "IO error: lock hold by current process, acquire time ...: <path>/LOCK: ..."
    return "LOCK:" in message or "lock hold by current process" in message


def _dir_identity(path: str) -> tuple[int, int] | None:
    """``(device, inode)`` of the directory at ``path``; ``None`` if there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


class RocksLogStore:
    """A :class:`LogStore` over a RocksDB database at ``path`` (see the module docstring).

    ``sync=True`` fsyncs the write-ahead log on every append. ``read_only=True`` opens a
    read-only view as of the moment of opening (allowed while a writer holds the store;
    :meth:`append` raises :class:`LogError`). :meth:`open_secondary` opens a secondary
    instance that follows the writer through :meth:`catch_up`. ``create=False`` refuses
    to start a new store where none is (:class:`LogError`).

    A writer whose directory is removed or moved away while it is open refuses every
    later append (:class:`LogError` naming the path): RocksDB would go on writing to
    files nobody can find again.
    """

    _LOGS: ClassVar[tuple[str, ...]] = tuple(name.value for name in LogName)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sync: bool = False,
        read_only: bool = False,
        create: bool = True,
    ) -> None:
        mode = "read_only" if read_only else "write" if create else "existing"
        self._open(path, sync=sync, mode=mode)

    @classmethod
    def open_secondary(
        cls, path: str | os.PathLike[str], secondary_dir: str | os.PathLike[str]
    ) -> RocksLogStore:
        """A read-only secondary instance; :meth:`catch_up` makes it see the writer's appends.

        ``secondary_dir`` holds the secondary's own info log and must not be shared.
        """
        store = cls.__new__(cls)
        store._open(path, sync=False, mode="secondary", secondary_dir=secondary_dir)
        return store

    def _open(
        self,
        path: str | os.PathLike[str],
        *,
        sync: bool,
        mode: str,
        secondary_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self._mode = mode
        self._closed = True
        self._lock = threading.Lock()
        options = Options(raw_mode=True)
        if mode == "existing" and not os.path.isdir(self.path):
            raise LogError(f"no log store at {self.path} (it was there before: removed?)")
        if mode in ("write", "existing"):
            mode = self._mode = "write"
            options.create_if_missing(True)
            options.create_missing_column_families(True)
            os.makedirs(self.path, exist_ok=True)
            access = AccessType.read_write()
        elif mode == "read_only":
            if not os.path.isdir(self.path):
                raise LogError(f"no log store at {self.path}")
            access = AccessType.read_only(error_if_log_file_exist=False)
        else:
            if not os.path.isdir(self.path):
                raise LogError(f"no log store at {self.path}")
            assert secondary_dir is not None
            secondary = os.fspath(secondary_dir)
            os.makedirs(secondary, exist_ok=True)
            access = AccessType.secondary(secondary)
        options.set_keep_log_file_num(4)  # RocksDB's info LOG files, not the WAL
        # Flush memtables to (compressed) SST files once the WAL holds this much: a
        # read-only or secondary handle -- every snapshot and retrospective query opens
        # one -- replays the WAL when it opens (~20 ms instead of ~0.2 s per 150 MB).
        options.set_max_total_wal_size(_MAX_WAL_BYTES)
        families = {name: Options(raw_mode=True) for name in (*self._LOGS, _META_CF)}
        try:
            db = Rdict(self.path, options, column_families=families, access_type=access)
        except Exception as exc:  # rocksdict raises a plain Exception
            message = str(exc)
            if mode == "write" and _is_lock_error(message):
                raise LogLockedError(
                    f"log store at {self.path} is already open by another writer "
                    f"(another process, or another handle in this process): {message}"
                ) from exc
            raise LogError(f"cannot open log store at {self.path}: {message}") from exc
        self._db: Rdict | None = db
        self._cfs: dict[str, Rdict] = {}
        self._handles: dict[str, ColumnFamily] = {}
        try:
            for name in (*self._LOGS, _META_CF):
                self._cfs[name] = db.get_column_family(name)
                self._handles[name] = db.get_column_family_handle(name)
        except Exception as exc:
            self._release()
            raise LogError(f"cannot open log store at {self.path}: {exc}") from exc
        write_options = WriteOptions()
        write_options.sync = sync
        self._write_options = write_options
        self._sync = sync
        self._dir = _dir_identity(self.path)
        self._closed = False
        self._last: dict[LogName, int] = {name: self._read_last(name) for name in LogName}

    # -- helpers --

    def _check_open(self) -> None:
        if self._closed:
            raise LogError(f"log store at {self.path} is closed")

    def _cf(self, log: LogName) -> Rdict:
        self._check_open()
        return self._cfs[log.value]

    def _read_last(self, log: LogName) -> int:
        it: RdictIter = self._cf(log).iter()
        it.seek_to_last()
        if it.valid():
            return decode_seq(it.key())
        it.status()
        return 0

    def _release(self) -> None:
        # The database stays open (and locked) while any column family object, handle or
        # iterator refers to it, so every one of them is closed or dropped here.
        for cf in self._cfs.values():
            with contextlib.suppress(Exception):  # already closed through another object
                cf.close()
        self._cfs = {}
        self._handles = {}
        if self._db is not None:
            with contextlib.suppress(Exception):
                self._db.close()
        self._db = None

    # -- LogStore --

    def append(self, batch: LogBatch) -> None:
        with self._lock:
            self._check_open()
            if self._mode != "write":
                raise LogError(f"log store at {self.path} is open read-only")
            logs, meta = _check_batch(batch, self._last)
            if not logs and not meta:
                return
            wb = WriteBatch(raw_mode=True)
            for name, entries in logs:
                handle = self._handles[name.value]
                for seq, value in entries:
                    wb.put(seq.to_bytes(8, "big"), value, handle)
            meta_handle = self._handles[_META_CF]
            for key, value in meta:
                wb.put(key.encode("utf-8"), value, meta_handle)
            assert self._db is not None
            if _dir_identity(self.path) != self._dir:
                raise LogError(
                    f"log directory {self.path} is gone (removed or moved away while the "
                    "store was open): nothing written"
                )
            try:
                self._db.write(wb, self._write_options)
            except Exception as exc:
                raise LogError(f"write to log store at {self.path} failed: {exc}") from exc
            for name, entries in logs:
                self._last[name] = entries[-1][0]

    def scan(
        self,
        log: LogName,
        start: int | None = None,
        end: int | None = None,
        *,
        reverse: bool = False,
    ) -> Iterator[tuple[int, bytes]]:
        name = LogName(log)
        self._check_open()
        lo, hi = _bounds(start, end, self._last[name])
        if lo > hi:
            return iter(())
        return self._scan(name, lo, hi, reverse)

    def _scan(self, log: LogName, lo: int, hi: int, reverse: bool) -> Iterator[tuple[int, bytes]]:
        # Reads in chunks and drops the RocksDB iterator between chunks, so an abandoned
        # scan never keeps the database (and its lock) alive after close().
        size = _CHUNK_MIN
        pos = hi if reverse else lo
        while lo <= pos <= hi:
            chunk, done = self._read_chunk(log, pos, lo, hi, size, reverse)
            yield from chunk
            if done or not chunk:
                return
            pos = chunk[-1][0] + (-1 if reverse else 1)
            size = min(size * 2, _CHUNK_MAX)

    def _read_chunk(
        self, log: LogName, pos: int, lo: int, hi: int, size: int, reverse: bool
    ) -> tuple[list[tuple[int, bytes]], bool]:
        """Up to ``size`` entries (or ``_CHUNK_BYTES``) from ``pos``; and whether the
        range is exhausted."""
        it: RdictIter = self._cf(log).iter()
        out: list[tuple[int, bytes]] = []
        read = 0
        if reverse:
            it.seek_for_prev(encode_seq(pos))
        else:
            it.seek(encode_seq(pos))
        while True:
            if not it.valid():
                done = True
                break
            seq = decode_seq(it.key())
            if not lo <= seq <= hi:
                done = True
                break
            if len(out) >= size or read >= _CHUNK_BYTES:
                done = False
                break
            value = it.value()
            out.append((seq, value))
            read += len(value)
            if reverse:
                it.prev()
            else:
                it.next()
        it.status()
        del it
        return out, done

    def last_seq(self, log: LogName) -> int:
        self._check_open()
        return self._last[LogName(log)]

    def floor(self, log: LogName, seq: int) -> tuple[int, bytes] | None:
        name = LogName(log)
        if seq < 1:
            self._check_open()
            return None
        it: RdictIter = self._cf(name).iter()
        it.seek_for_prev(encode_seq(min(seq, MAX_SEQ)))
        if it.valid():
            return decode_seq(it.key()), it.value()
        it.status()
        return None

    def get_meta(self, key: str) -> bytes | None:
        self._check_open()
        value = self._cfs[_META_CF].get(key.encode("utf-8"))
        return None if value is None else bytes(value)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- extras --

    @property
    def read_only(self) -> bool:
        """Whether this handle refuses appends (read-only or secondary)."""
        return self._mode != "write"

    def catch_up(self) -> None:
        """Make a secondary see the writer's latest appends.

        A no-op on the writer (always current); :class:`LogError` on a read-only handle,
        whose view is fixed when it is opened (reopen it instead).
        """
        with self._lock:
            self._check_open()
            if self._mode == "write":
                return
            if self._mode != "secondary":
                raise LogError(f"log store at {self.path}: only a secondary can catch up")
            assert self._db is not None
            try:
                self._db.try_catch_up_with_primary()
            except Exception as exc:
                raise LogError(f"catch up with {self.path} failed: {exc}") from exc
            for name in LogName:
                self._last[name] = max(self._last[name], self._read_last(name))

    def __enter__(self) -> RocksLogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self._mode
        return f"{type(self).__name__}({self.path!r}, {state})"


def open_log_store(
    factory: str, path: str | os.PathLike[str], *, sync: bool = False, create: bool = True
) -> LogStore:
    """The writer store of a shard's log at ``path``: a :class:`RocksLogStore` when
    ``factory`` is empty, else what the function ``factory`` names (``"module:function"``,
    called as ``function(path, sync=sync, create=create)``) returns -- e.g.
    ``"shards.faults:open_faulty"``, the fault-injecting store of the tests."""
    if not factory:
        return RocksLogStore(path, sync=sync, create=create)
    module, _, name = factory.partition(":")
    try:
        opener = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise LogError(f"log store factory {factory!r} not found: {exc}") from None
    store: LogStore = opener(os.fspath(path), sync=sync, create=create)
    return store


mark_module_api(globals())
