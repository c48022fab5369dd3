"""The built-in temporal class's vertices and edges as columns, while a shard runs
column runs of stream ``add_edge`` halves (:class:`TemporalColumns`).

For a vertex whose class keeps :class:`~vertex.TemporalVertex`'s built-in edge hooks,
what one ``add_edge`` half does is a fixed rule of a few numbers -- counters, first and
last times, the vertex's clock and time, and the edge's count, first and last time
(``ShardCore._direct_owner``/``_direct_target`` run it row by row). Here those numbers
live in numpy columns, vertices and edges found through numba dictionaries, and one
compiled pass (:func:`_apply_rows`) runs a run's rows in order, each reading what the
one before it of its vertex wrote, writing each row's log entry as columns
(:class:`~shards.codec.TemporalEntries`) -- no Python object per row.

The columns are a write-back cache over the shard's :class:`~shards.records.VertexRecord`
s: a vertex enters them whole (its counters and every edge record) the first time a run
reaches it, and :meth:`TemporalColumns.flush` writes what changed back into its record
(new state and edge dicts, as the row path makes them). Guarantees, relied on by
``ShardCore``:

* **Same effects, same entries.** A row applied here changes the vertex and logs the
  entry the row path would (:class:`~shards.codec.TemporalEntries` gives them back
  exactly: keys, key order, value types).
* **Only what fits the rule.** A vertex enters only if its class keeps the built-in
  hooks, its counters are ints, its times and every edge record have the run's time
  type and the rule's shape (``count``, ``first_ts``, ``last_ts``, nothing else); a run
  enters only with int64 ids, int64 or float64 times and no properties. A vertex new to
  the shard enters empty, when the class new vertices get keeps the built-in hooks and
  ``on_create`` and it belongs to the shard, and the pass creates it at its first row
  (the entry the row path's creation logs; its record is handed out in creation order).
  The pass stops at the first row of a vertex that is not in the columns; the shard runs
  that row its usual way, then goes on.
* **Records are stale until flushed.** While the columns exist, a cached vertex's record
  may be behind; the shard flushes before anything reads records and drops the columns
  before anything else writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from shards.codec import (
    TEMPORAL_CREATED,
    TEMPORAL_FIRST,
    TEMPORAL_LAST,
    TEMPORAL_NEW,
    EdgeRun,
    TemporalEntries,
)
from shards.records import VertexRecord
from shards.routing import shards_of
from vertex.annotations import mark_module_api
from vertex.held_back import held_back
from vertex.model import DirectHooks, TemporalVertex
from vertex.records import VertexId

__all__ = ["TemporalColumns", "fits", "is_temporal"]

_EDGE_KEYS = ("count", "first_ts", "last_ts")
_TEMPORAL = DirectHooks(TemporalVertex)
_INT64 = (-(2**63), 2**63 - 1)

# rows of the 2-D column arrays
_CLOCK, _OUT, _IN, _SENT, _RECEIVED, _FLAGS = range(6)  # vertex ints
_TIME, _FIRST, _LAST = range(3)  # vertex times
_KEY, _OTHER, _COUNT = range(3)  # edge ints (key: vertex row * 2 + half)
_E_FIRST, _E_LAST = range(2)  # edge times
_HAS, _DIRTY, _PENDING = 1, 2, 4  # vertex flags (pending: created by its first row)
_O_CLOCK, _O_DEGREE, _O_COUNTER, _O_FLAGS, _O_COUNT, _O_ROW = range(6)  # output ints
_O_TIME, _O_TOUCH, _O_FIRST, _O_LAST = range(4)  # output times


def is_temporal(hooks: DirectHooks) -> bool:
    """Whether a class's direct hooks are :class:`~vertex.TemporalVertex`'s, all three."""
    return (
        hooks.edge_event is _TEMPORAL.edge_event
        and hooks.edge_added is _TEMPORAL.edge_added
        and hooks.edge_updated is _TEMPORAL.edge_updated
    )


def fits(run: EdgeRun) -> bool:
    """Whether ``run`` can go through the columns: int64 ids, int64 or float64 times, no
    properties."""
    return (
        run.props is None
        and run.time.dtype in (np.int64, np.float64)
        and run.vertex.dtype == np.int64
        and run.other.dtype == np.int64
    )


class TemporalColumns:
    """The columns of the vertices a shard's column runs reached (see the module doc),
    for one time type (``dtype``: int64 or float64)."""

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype = np.dtype(dtype)
        self.scalar: type[Any] = int if self.dtype == np.int64 else float
        self.vindex, self.pindex = _jit(_new_indexes)()
        self.records: list[VertexRecord] = []
        self.excluded: set[VertexId] = set()
        self.meta = np.zeros(2, np.int64)  # edges held, new outgoing edges of the last pass
        self.vi = np.zeros((6, 1024), np.int64)
        self.vt = np.zeros((3, 1024), self.dtype)
        self.pi = np.zeros((3, 4096), np.int64)
        self.pt = np.zeros((2, 4096), self.dtype)
        self.pdirty = np.zeros(4096, np.bool_)

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, vid: VertexId) -> bool:
        return bool(_jit(_holds)(self.vindex, vid))

    # -- entering ---------------------------------------------------------------------

    def enter(
        self,
        run: EdgeRun,
        vertices: Mapping[VertexId, VertexRecord],
        temporal_type: Callable[[str], bool],
        creates: str | None,
        shard: tuple[int, int],
    ) -> None:
        """Take in every vertex of ``run`` that has a record and fits (see the module
        doc) and is not in yet; with ``creates`` (a type name), every new vertex of
        ``run`` that belongs to ``shard`` (``(shard id, shards)``) enters as one the pass
        creates, of that type, at its first row."""
        ids = np.unique(run.vertex)
        missing = ids[_missing(ids, self.vindex)]
        new: list[VertexId] = []
        for vid in missing.tolist():
            record = vertices.get(vid)
            if record is None:
                new.append(vid)
            elif vid not in self.excluded:
                self.take(vid, record, temporal_type)
        if new and creates is not None:
            ids = np.array(new, np.int64)
            self._pending(ids[shards_of(ids, shard[1]) == shard[0]].tolist(), creates)

    def _pending(self, ids: list[VertexId], type_name: str) -> None:
        """Enter new vertices the pass creates (their records, empty, are handed out by
        :meth:`created` once it did)."""
        if not ids:
            return
        row, k = len(self.records), len(ids)
        if row + k > self.vi.shape[1]:
            self.vi, self.vt = _grown(self.vi, row + k), _grown(self.vt, row + k)
        self.vi[:, row : row + k] = 0
        self.vi[_FLAGS, row : row + k] = _PENDING
        self.vt[:, row : row + k] = _lowest(self.dtype)
        self.records.extend(VertexRecord(type_name, {}, {}, {}) for _ in ids)
        _jit(_index_vertices)(self.vindex, np.array(ids, np.int64), row)

    def created(
        self, run: EdgeRun, out: tuple[np.ndarray, np.ndarray], start: int, stop: int
    ) -> list[tuple[VertexId, VertexRecord]]:
        """The vertices rows ``start .. stop-1`` created and their records, in order."""
        rows = start + np.flatnonzero(out[0][_O_FLAGS, start:stop] & TEMPORAL_CREATED)
        if not len(rows):
            return []
        records = self.records
        vids = run.vertex[rows].tolist()
        return [(v, records[g]) for v, g in zip(vids, out[0][_O_ROW, rows].tolist(), strict=True)]

    def take(
        self, vid: VertexId, record: VertexRecord, temporal_type: Callable[[str], bool]
    ) -> bool:
        """Take in one vertex whole (its counters and edge records), if it fits; a vertex
        that does not is remembered and never tried again."""
        edges = self._edges_of(record) if temporal_type(record.type_name) else None
        values = self._values_of(record) if edges is not None else None
        if values is None or edges is None:
            self.excluded.add(vid)
            return False
        row = len(self.records)
        if row >= self.vi.shape[1]:
            self.vi, self.vt = _grown(self.vi, row + 1), _grown(self.vt, row + 1)
        self.vi[:, row], self.vt[:, row] = values[0], values[1]
        self.records.append(record)
        _jit(_index_vertices)(self.vindex, np.array([vid], np.int64), row)
        if edges[0]:
            self._take_edges(row, *edges)
        return True

    def _values_of(self, record: VertexRecord) -> tuple[list[int], list[Any]] | None:
        """A record's vertex columns, or ``None`` if its values do not fit."""
        scalar, state = self.scalar, record.state
        counters = [state.get(k) for k in ("out_degree", "in_degree", "sent", "received")]
        if type(record.time) is not scalar or any(type(c) is not int for c in counters):
            return None
        first, last = state.get("first_ts"), state.get("last_ts")
        if "first_ts" not in state and "last_ts" not in state:
            has, first, last = 0, 0, 0
        elif type(first) is scalar and type(last) is scalar:
            has = _HAS
        else:
            return None
        return [record.clock, *counters, has], [record.time, first, last]  # type: ignore[list-item]

    def _edges_of(self, record: VertexRecord) -> tuple[list[int], list[int], list[Any]] | None:
        """A record's edges as ``(keys' half, other ends, [counts, firsts, lasts])``, or
        ``None`` if one does not fit."""
        scalar = self.scalar
        low, high = _INT64
        halves: list[int] = []
        others: list[int] = []
        values: list[tuple[Any, ...]] = []
        for half, edges in ((0, record.out_edges), (1, record.in_edges)):
            for other, edge in edges.items():
                if type(other) is not int or not low <= other <= high:
                    return None
                if tuple(edge) != _EDGE_KEYS:
                    return None
                value = tuple(edge.values())
                if type(value[0]) is not int or type(value[1]) is not scalar:
                    return None
                if type(value[2]) is not scalar:
                    return None
                halves.append(half)
                others.append(other)
                values.append(value)
        return halves, others, values

    def _take_edges(
        self, row: int, halves: list[int], others: list[int], values: list[Any]
    ) -> None:
        start, k = int(self.meta[0]), len(halves)
        self._room(k)
        stop = start + k
        keys = row * 2 + np.array(halves, np.int64)
        self.pi[_KEY, start:stop] = keys
        self.pi[_OTHER, start:stop] = others
        counts, firsts, lasts = zip(*values, strict=True)
        self.pi[_COUNT, start:stop] = counts
        self.pt[_E_FIRST, start:stop] = firsts
        self.pt[_E_LAST, start:stop] = lasts
        _insert(self.pindex, keys, self.pi[_OTHER, start:stop], start)
        self.meta[0] = stop

    def _room(self, extra: int) -> None:
        """Room for ``extra`` more edges."""
        need = int(self.meta[0]) + extra
        if need > self.pi.shape[1]:
            self.pi, self.pt = _grown(self.pi, need), _grown(self.pt, need)
            self.pdirty = _grown(self.pdirty[None, :], need)[0]

    # -- running ----------------------------------------------------------------------

    def outputs(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Arrays for the entries of a run of ``n`` rows."""
        return np.zeros((6, n), np.int64), np.zeros((4, n), self.dtype)

    def apply(
        self, run: EdgeRun, start: int, out: tuple[np.ndarray, np.ndarray]
    ) -> tuple[int, int]:
        """Run rows ``start ..`` of ``run`` until the first whose vertex is not in the
        columns; returns that row (``len(run)``: all ran) and the new outgoing edges."""
        self._room(len(run) - start)
        stop = _compiled()(
            start,
            run.half,
            run.vertex,
            run.other,
            run.time,
            self.vindex,
            self.pindex,
            self.meta,
            self.vi,
            self.vt,
            self.pi,
            self.pt,
            self.pdirty,
            out[0],
            out[1],
        )
        return int(stop), int(self.meta[1])

    @staticmethod
    def entries(
        run: EdgeRun, out: tuple[np.ndarray, np.ndarray], start: int, stop: int
    ) -> TemporalEntries:
        """The log entries of rows ``start .. stop-1`` (views of the output arrays)."""
        ints, times = out[0][:, start:stop], out[1][:, start:stop]
        return TemporalEntries(
            run.vertex[start:stop],
            run.other[start:stop],
            run.half[start:stop],
            ints[_O_CLOCK],
            times[_O_TIME],
            ints[_O_DEGREE],
            ints[_O_COUNTER],
            ints[_O_FLAGS].astype(np.int8),
            times[_O_TOUCH],
            ints[_O_COUNT],
            times[_O_FIRST],
            times[_O_LAST],
        )

    def record_rows(self, out: tuple[np.ndarray, np.ndarray], start: int, stop: int) -> np.ndarray:
        """For rows ``start .. stop-1`` of a pass, the position of each row's vertex in
        :attr:`records`."""
        return out[0][_O_ROW, start:stop]

    # -- writing back -----------------------------------------------------------------

    def flush(self) -> None:
        """Write every changed vertex and edge back into its record (a new state dict:
        keys it had keep their place, ``first_ts`` then ``last_ts`` are added as the rule
        adds them; a new dict per changed edge)."""
        n = len(self.records)
        rows = np.flatnonzero(self.vi[_FLAGS, :n] & _DIRTY)
        if len(rows):
            self._flush_vertices(rows)
        edges = np.flatnonzero(self.pdirty[: int(self.meta[0])])
        if len(edges):
            self._flush_edges(edges)

    def _flush_vertices(self, rows: np.ndarray) -> None:
        records = self.records
        ints = self.vi[:, rows].tolist()
        times = self.vt[:, rows].tolist()
        for j, row in enumerate(rows.tolist()):
            record = records[row]
            record.clock, record.time = ints[_CLOCK][j], times[_TIME][j]
            state = {
                **record.state,
                "out_degree": ints[_OUT][j],
                "in_degree": ints[_IN][j],
                "sent": ints[_SENT][j],
                "received": ints[_RECEIVED][j],
            }
            if ints[_FLAGS][j] & _HAS:
                state["first_ts"], state["last_ts"] = times[_FIRST][j], times[_LAST][j]
            record.state = state
        self.vi[_FLAGS, rows] &= ~_DIRTY

    def _flush_edges(self, edges: np.ndarray) -> None:
        records = self.records
        keys, others, counts = self.pi[:, edges].tolist()
        firsts, lasts = self.pt[:, edges].tolist()
        for key, other, count, first, last in zip(keys, others, counts, firsts, lasts, strict=True):
            record = records[key >> 1]
            side = record.in_edges if key & 1 else record.out_edges
            side[other] = {"count": count, "first_ts": first, "last_ts": last}
        self.pdirty[edges] = False


def _lowest(dtype: np.dtype[Any]) -> Any:
    """A time below every time of ``dtype`` (a new vertex's)."""
    return -np.inf if dtype == np.float64 else np.iinfo(np.int64).min


def _grown(array: np.ndarray, need: int) -> np.ndarray:
    """``array`` (2-D) with at least ``need`` columns: twice as many, zeros after."""
    size = max(need, 2 * array.shape[1])
    out = np.zeros((array.shape[0], size), array.dtype)
    out[:, : array.shape[1]] = array
    return out


# -- compiled parts (numba, imported on first use) ---------------------------------------


def _apply_rows(  # type: ignore[no-untyped-def]
    start, half, vid, other, ts, vindex, pindex, meta, vi, vt, pi, pt, pdirty, oi, ot
):
    """Apply rows ``start ..`` in order until one whose vertex is not in ``vindex``
    (returned; ``len(ts)`` if none), updating the columns in place and writing each
    row's entry into ``oi``/``ot``; ``meta[1]`` = the new outgoing edges."""
    n = len(ts)
    edges = meta[0]
    new_edges = 0
    i = start
    while i < n:
        v = vid[i]
        if v not in vindex:
            break
        g = vindex[v]
        t = ts[i]
        h = half[i]
        key = (g * 2 + h, other[i])
        flags = 0
        created = 0
        if vi[5, g] & 4:
            created = 8
            vi[5, g] &= ~4
        if key in pindex:
            p = pindex[key]
        else:
            p = edges
            edges += 1
            pindex[key] = p
            pi[0, p], pi[1, p], pi[2, p] = key[0], key[1], 1
            pt[0, p], pt[1, p] = t, t
            flags = 1
        if not flags:
            pi[2, p] += 1
            if t < pt[0, p]:
                pt[0, p] = t
            if t > pt[1, p]:
                pt[1, p] = t
        pdirty[p] = True
        if h == 0:
            if flags:
                vi[1, g] += 1
                new_edges += 1
            vi[3, g] += 1
            oi[1, i], oi[2, i] = vi[1, g], vi[3, g]
            touch = t
        else:
            if flags:
                vi[2, g] += 1
            vi[4, g] += 1
            oi[1, i], oi[2, i] = vi[2, g], vi[4, g]
            touch = pt[1, p]
        has = vi[5, g] & 1
        if not has or touch < vt[1, g]:
            vt[1, g] = touch
            flags |= 2
        if not has or touch > vt[2, g]:
            vt[2, g] = touch
            flags |= 4
        vi[5, g] |= 3  # has first/last, dirty
        if not vt[0, g] > t:
            vt[0, g] = t
        vi[0, g] += 1
        oi[0, i], oi[3, i], oi[4, i], oi[5, i] = vi[0, g], flags | created, pi[2, p], g
        ot[0, i], ot[1, i], ot[2, i], ot[3, i] = vt[0, g], touch, pt[0, p], pt[1, p]
        i += 1
    meta[0] = edges
    meta[1] = new_edges
    return i


def _new_indexes():  # type: ignore[no-untyped-def]
    """Empty vertex and edge indexes (made in compiled code: no compiling per process)."""
    vindex = Dict.empty(key_type=_I64, value_type=_I64)
    pindex = Dict.empty(key_type=_PAIR, value_type=_I64)
    return vindex, pindex


def _holds(vindex, vid):  # type: ignore[no-untyped-def]
    return vid in vindex


def _index_vertices(vindex, ids, start):  # type: ignore[no-untyped-def]
    for j in range(len(ids)):
        vindex[ids[j]] = start + j


def _missing_in(ids, vindex):  # type: ignore[no-untyped-def]
    out = np.zeros(len(ids), np.bool_)
    for i in range(len(ids)):
        out[i] = ids[i] not in vindex
    return out


def _insert_keys(pindex, keys, others, start):  # type: ignore[no-untyped-def]
    for j in range(len(keys)):
        pindex[(keys[j], others[j])] = start + j


_COMPILED: dict[str, Callable[..., Any]] = {}
# numba and the types the compiled code names: imported on first use (half a second)
numba: Any = None
Dict: Any = None
_I64: Any = None
_PAIR: Any = None


def _jit(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` compiled by numba (its machine code cached on disk)."""
    compiled = _COMPILED.get(function.__name__)
    if compiled is None:
        global numba, Dict, _I64, _PAIR
        numba, Dict = _import_numba()
        _I64 = numba.types.int64
        _PAIR = numba.types.UniTuple(_I64, 2)
        compiled = _COMPILED[function.__name__] = numba.njit(cache=True, nogil=True)(function)
    return compiled


def _import_numba() -> tuple[Any, Any]:
    """numba and its typed ``Dict``, with numba's CPU target set up. numba's
    ``numba.np.arraymath``, loaded with that target, imports ``scipy.linalg`` only to learn
    whether BLAS is there (0.3 s of CPU in each shard process, a third of numba's start):
    scipy is held back while it loads, so numba takes BLAS as absent for the one use of
    that check (``np.vdot`` and ``np.correlate`` take its plain loop). The compiled code
    here calls no BLAS; a function that does (``np.dot``, ``np.linalg``) still imports
    scipy when numba compiles it."""
    with held_back("scipy"):
        import numba as module
        import numba.np.arraymath  # noqa: F401 -- its BLAS check, under the hold
        from numba.typed import Dict as typed_dict
    return module, typed_dict


def _compiled() -> Callable[..., Any]:
    return _jit(_apply_rows)


def _missing(ids: np.ndarray, vindex: Any) -> np.ndarray:
    return _jit(_missing_in)(ids, vindex)  # type: ignore[no-any-return]


def _insert(pindex: Any, keys: np.ndarray, others: np.ndarray, start: int) -> None:
    _jit(_insert_keys)(pindex, keys, np.ascontiguousarray(others), start)


# the flags _apply_rows sets
assert (TEMPORAL_NEW, TEMPORAL_FIRST, TEMPORAL_LAST, TEMPORAL_CREATED) == (1, 2, 4, 8)

mark_module_api(globals())
