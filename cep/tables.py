"""Column tables for the queries' compiled kernels: an int64 hash map, growable rows, a
string pool.

An instance's state lives in numpy arrays that numba kernels (``cep.debs``) read and write
in place: a kernel never grows them (it allocates only small scratch arrays of its own).
Before each batch the operator reserves room for what the batch can add
(:meth:`IntMap.reserve`, :func:`reserve_rows`, :meth:`StringPool.extend`), so growth
(doubling, a rehash) happens in Python between batches and its cost per event is constant
on average.

:class:`IntMap` maps non-negative int64 keys to int64 values: open addressing with linear
probing, ``EMPTY``/``DELETED`` markers, at most half full. The kernels use the module's
``map_*`` functions on its ``keys``/``vals``/``meta`` arrays.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

__all__ = [
    "EMPTY",
    "IntMap",
    "StringPool",
    "map_delete",
    "map_get",
    "map_put",
    "reserve_rows",
    "write_step",
]

EMPTY = -1
DELETED = -2
_USED, _LIVE = 0, 1  # meta: slots not EMPTY (live + deleted), live keys

_jit = numba.njit(cache=True, nogil=True)


@numba.njit(cache=True, inline="always")
def _home(key: int, mask: int) -> int:
    # Fibonacci hashing: consecutive ids spread over the table
    return int((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(17)) & mask


@_jit
def map_get(keys: np.ndarray, vals: np.ndarray, key: int) -> int:
    """The value of ``key``, or ``EMPTY``."""
    mask = keys.shape[0] - 1
    i = _home(key, mask)
    while True:
        k = keys[i]
        if k == key:
            return vals[i]
        if k == EMPTY:
            return EMPTY
        i = (i + 1) & mask


@_jit
def map_put(keys: np.ndarray, vals: np.ndarray, meta: np.ndarray, key: int, val: int) -> None:
    """Set ``key`` to ``val`` (room must have been reserved)."""
    mask = keys.shape[0] - 1
    i = _home(key, mask)
    free = -1
    while True:
        k = keys[i]
        if k == key:
            vals[i] = val
            return
        if k == EMPTY:
            break
        if k == DELETED and free < 0:
            free = i
        i = (i + 1) & mask
    if free < 0:
        free = i
        meta[_USED] += 1
    keys[free] = key
    vals[free] = val
    meta[_LIVE] += 1


@_jit
def map_delete(keys: np.ndarray, vals: np.ndarray, meta: np.ndarray, key: int) -> None:
    """Forget ``key`` (no effect if absent)."""
    mask = keys.shape[0] - 1
    i = _home(key, mask)
    while True:
        k = keys[i]
        if k == key:
            keys[i] = DELETED
            meta[_LIVE] -= 1
            return
        if k == EMPTY:
            return
        i = (i + 1) & mask


@_jit
def _rehash(old_keys: np.ndarray, old_vals: np.ndarray, keys: np.ndarray, vals: np.ndarray,
            meta: np.ndarray) -> None:  # fmt: skip
    meta[_USED] = 0
    meta[_LIVE] = 0
    for i in range(old_keys.shape[0]):
        if old_keys[i] >= 0:
            map_put(keys, vals, meta, old_keys[i], old_vals[i])


class IntMap:
    """A hash map of non-negative int64 keys to int64 values, in three numpy arrays."""

    __slots__ = ("keys", "vals", "meta")

    def __init__(self, capacity: int = 1024) -> None:
        size = 1 << max(4, (2 * capacity - 1).bit_length())
        self.keys = np.full(size, EMPTY, np.int64)
        self.vals = np.zeros(size, np.int64)
        self.meta = np.zeros(2, np.int64)

    def __len__(self) -> int:
        return int(self.meta[_LIVE])

    def reserve(self, more: int) -> None:
        """Make room for ``more`` new keys (rehashing away deleted slots if needed)."""
        live, used = int(self.meta[_LIVE]), int(self.meta[_USED])
        if 2 * (used + more) <= self.keys.shape[0]:
            return
        size = self.keys.shape[0]
        while 2 * (live + more) > size // 2:  # rehashed: at most a quarter full
            size *= 2
        old_keys, old_vals = self.keys, self.vals
        self.keys = np.full(size, EMPTY, np.int64)
        self.vals = np.zeros(size, np.int64)
        _rehash(old_keys, old_vals, self.keys, self.vals, self.meta)


@_jit
def write_step(out_key: np.ndarray, row: int, t: int, phase: int, seq: int, n: int) -> None:
    """Row ``row`` of a kernel's report table: the step key ``(t, phase, seq)`` and how
    many entries follow (the kernels' one report layout)."""
    out_key[row, 0] = t
    out_key[row, 1] = phase
    out_key[row, 2] = seq
    out_key[row, 3] = n


def reserve_rows(table: np.ndarray, rows: int) -> np.ndarray:
    """``table`` (rows x columns, or a vector) with room for ``rows`` rows: itself, or a
    copy twice as large (new rows of a signed table filled with -1)."""
    if table.shape[0] >= rows:
        return table
    size = max(rows, 2 * table.shape[0])
    grown = np.full((size, *table.shape[1:]), -1 if table.dtype.kind == "i" else 0, table.dtype)
    grown[: table.shape[0]] = table
    return grown


class StringPool:
    """Strings appended in batches (UTF-8 bytes in one buffer); string ``i`` is read back
    with :meth:`get`. Bytes compare in code-point order, so kernels compare texts by
    their bytes (``data[start[i]:start[i + 1]]``)."""

    __slots__ = ("data", "start", "count", "size", "_decoded")

    def __init__(self) -> None:
        self.data = np.zeros(1024, np.uint8)
        self.start = np.zeros(1025, np.int64)
        self.count = 0
        self.size = 0
        self._decoded: dict[int, str] = {}  # strings read back: reports repeat the same few

    def extend(self, strings: pa.Array) -> None:
        """Append ``strings`` (an Arrow string array without nulls)."""
        n = len(strings)
        if n == 0:
            return
        strings = strings.cast(pa.large_string())
        _, offsets, data = strings.buffers()
        offs = np.frombuffer(offsets, np.int64, n + 1, strings.offset * 8)
        first, last = int(offs[0]), int(offs[-1])
        self.data = reserve_rows(self.data, self.size + last - first)
        self.start = reserve_rows(self.start, self.count + n + 1)
        if last > first:
            self.data[self.size : self.size + last - first] = np.frombuffer(
                data, np.uint8, last - first, first
            )
        self.start[self.count + 1 : self.count + n + 1] = offs[1:] - first + self.size
        self.count += n
        self.size += last - first

    def get(self, i: int) -> str:
        """String ``i``."""
        text = self._decoded.get(i)
        if text is None:
            raw = self.data[self.start[i] : self.start[i + 1]].tobytes()
            text = self._decoded[i] = raw.decode()
        return text
