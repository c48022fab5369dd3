"""What a shard tells the layers above it: vertex changes, and an unlogged side channel.

``ShardCore`` runs vertex behaviors and logs them; it knows nothing about live
computations, notification streams or indexes. Those live in an *observer* attached to
the core (:class:`ShardObserver`): the core calls it after every successful behavior
execution with a :class:`VertexChange` -- or, where the observer takes them, once per
column run with a :class:`ChangeBatch` of what the run changed -- and carries the
observer's own messages between shards as the unlogged ``side`` part of the ordinary
shard-to-shard batches. The observer sees the shard through :class:`ShardView` and
vertices through :class:`VertexView`, both read-only; it never gets the core itself.

Guarantees the core gives an observer:

* ``vertex_changed`` is called once per successful execution, right after its effects were
  applied in memory, in the shard's execution order -- so per vertex in clock order, the
  order of its log entries. Failed executions and messages that found no vertex are not
  reported.
* Where the observer ``takes_batches``, the rows a column run of stream edge halves
  applies through the built-in temporal columns (:mod:`shards.temporal`) reach it instead
  as one ``changes(batch)`` call per stretch of such rows, right after the stretch was
  applied and the vertices' records written back: the :class:`ChangeBatch` holds every
  row (execution) of the stretch in execution order. Executions of that run that take the
  general path (a vertex the columns cannot hold) still come one by one through
  ``vertex_changed``, in their place between the stretches.
* Side items are never logged and never touch anything that is: log entries, channel
  sequence numbers, vector clocks, checkpoints. A side-only batch carries no vector clock.
  Side items sent to a shard arrive in the order they were taken, unless a delivery fails
  (the receiver crashed): then they are lost, like the receiver's observer state.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from shards.logstore import LogStore
from shards.records import VertexRecord
from vertex.annotations import mark_module_api
from vertex.model import VertexTypes
from vertex.records import VertexId

if TYPE_CHECKING:
    from shards.codec import TemporalEntries

__all__ = ["ChangeBatch", "ShardObserver", "ShardView", "VertexChange", "VertexView"]


class VertexView:
    """Read-only view of a live, event-sourced vertex (it follows the vertex's changes)."""

    __slots__ = ("vertex_id", "_record")

    def __init__(self, vertex_id: VertexId, record: VertexRecord) -> None:
        self.vertex_id = vertex_id
        self._record = record

    @property
    def type_name(self) -> str:
        """The vertex class's ``type_name``."""
        return self._record.type_name

    @property
    def state(self) -> Mapping[str, Any]:
        """The vertex's event-sourced state (read-only)."""
        return MappingProxyType(self._record.state)

    @property
    def out_edges(self) -> Mapping[VertexId, Mapping[str, Any]]:
        """Outgoing edges, target -> properties (read-only)."""
        return MappingProxyType(self._record.out_edges)

    @property
    def in_edges(self) -> Mapping[VertexId, Mapping[str, Any]]:
        """Incoming edge records, source -> properties (read-only, eventually consistent)."""
        return MappingProxyType(self._record.in_edges)

    @property
    def out_degree(self) -> int:
        """Number of outgoing edges."""
        return len(self._record.out_edges)

    @property
    def in_degree(self) -> int:
        """Number of incoming edge records."""
        return len(self._record.in_edges)


class VertexChange:
    """One successful behavior execution of a vertex, as seen after it (read-only).

    ``old_state`` is the state before (``None`` when the execution created the vertex),
    ``state`` the state after (``None`` when it deleted the vertex). ``vertex`` is a
    :class:`VertexView` of the vertex *now* (a later execution of the same vertex in the
    same batch may have changed it), built once per change; ``added_out``/``removed_out``
    and ``added_in``/``removed_in`` are the edges this execution created or removed.
    """

    __slots__ = (
        "vertex",
        "clock",
        "time",
        "wc",
        "old_state",
        "state",
        "added_out",
        "removed_out",
        "added_in",
        "removed_in",
    )

    def __init__(
        self,
        vertex: VertexView,
        clock: int,
        time: float,
        wc: int,
        old_state: dict[str, Any] | None,
        state: dict[str, Any] | None,
        added_out: tuple[VertexId, ...] = (),
        removed_out: tuple[VertexId, ...] = (),
        added_in: tuple[VertexId, ...] = (),
        removed_in: tuple[VertexId, ...] = (),
    ) -> None:
        self.vertex = vertex
        self.clock = clock
        self.time = time
        self.wc = wc
        self.old_state = old_state
        self.state = state
        self.added_out = added_out
        self.removed_out = removed_out
        self.added_in = added_in
        self.removed_in = removed_in

    @property
    def vertex_id(self) -> VertexId:
        """The vertex that executed."""
        return self.vertex.vertex_id

    @property
    def type_name(self) -> str:
        """Its class's ``type_name``."""
        return self.vertex.type_name

    @property
    def created(self) -> bool:
        """This execution created the vertex."""
        return self.old_state is None

    @property
    def deleted(self) -> bool:
        """This execution deleted the vertex."""
        return self.state is None

    @property
    def out_edges(self) -> Mapping[VertexId, Mapping[str, Any]]:
        """The vertex's outgoing edges now (read-only)."""
        return self.vertex.out_edges

    @property
    def in_edges(self) -> Mapping[VertexId, Mapping[str, Any]]:
        """The vertex's incoming edge records now (read-only, eventually consistent)."""
        return self.vertex.in_edges

    @property
    def topology_changed(self) -> bool:
        """Whether this execution added or removed an edge (either direction)."""
        return bool(self.added_out or self.removed_out or self.added_in or self.removed_in)

    def __repr__(self) -> str:
        return f"VertexChange({self.vertex_id!r}, clock={self.clock}, wc={self.wc})"


class ChangeBatch:
    """What one stretch of a column run of stream edge halves changed, as columns.

    Row ``k`` is one execution (one ``add_edge`` half at one vertex of a class with the
    built-in temporal hooks), in the shard's execution order; every column is a read-only
    numpy array of the batch's length:

    * ``vertex``, ``other``: the vertex that executed and the edge's other end (int64);
    * ``half``: 0 -- the owner's half, the out-edge ``vertex -> other``; 1 -- the target's
      half, the in-edge record ``other -> vertex``;
    * ``new_edge``: that edge did not exist before (its degree grew by one);
    * ``created``: the row created the vertex (its first execution);
    * ``degree``: the vertex's out-degree (half 0) or in-degree (half 1) after the row;
    * ``clock``, ``time``: the vertex's clock and time after the row; ``event_time``: the
      update's own time; ``wc``: the shard's worker clock of the row (its log position).

    Per vertex the batch touched, in the order of first touch: ``touched`` (ids),
    ``touched_index`` (each row's position in ``touched``), ``views`` (read-only views of
    the vertices as they are after the batch) and ``old_states`` (each vertex's state
    before the batch, ``None`` if the batch created it: taken from the records when the
    batch is made, so the shard makes it before it writes the stretch back into them).
    Edges and vertices are never removed by such rows.
    """

    __slots__ = (
        "vertex",
        "other",
        "half",
        "new_edge",
        "created",
        "degree",
        "clock",
        "time",
        "event_time",
        "wc",
        "touched",
        "touched_index",
        "views",
        "old_states",
        "_entries",
    )

    def __init__(
        self,
        columns: Mapping[str, np.ndarray],
        records: Sequence[VertexRecord],
        record_rows: np.ndarray,
        entries: TemporalEntries | None = None,
    ) -> None:
        """``columns`` as above; row ``k``'s vertex record is
        ``records[record_rows[k]]``; ``entries``: the rows' logged form (their state
        changes, for :meth:`row_states`)."""
        self.vertex = _read_only(columns["vertex"])
        self.other = _read_only(columns["other"])
        self.half = _read_only(columns["half"])
        self.new_edge = _read_only(columns["new_edge"])
        self.created = _read_only(columns["created"])
        self.degree = _read_only(columns["degree"])
        self.clock = _read_only(columns["clock"])
        self.time = _read_only(columns["time"])
        self.event_time = _read_only(columns["event_time"])
        self.wc = _read_only(columns["wc"])
        ids, first, inverse = np.unique(self.vertex, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        self.touched = _read_only(ids[order])
        self.touched_index = _read_only(rank[inverse.reshape(-1)])
        first = first[order]
        self.views: list[VertexView] = []
        self.old_states: list[Mapping[str, Any] | None] = []
        at, made = record_rows[first].tolist(), self.created[first].tolist()
        for vid, row, created in zip(self.touched.tolist(), at, made, strict=True):
            record = records[row]
            self.views.append(VertexView(vid, record))
            self.old_states.append(None if created else record.state)
        self._entries = entries  # the rows' logged form: their state changes

    def __len__(self) -> int:
        return len(self.vertex)

    def last_rows(self) -> np.ndarray:
        """The row of each touched vertex's last execution in the batch (``touched`` order)."""
        last = np.empty(len(self.touched), np.int64)
        last[self.touched_index] = np.arange(len(self.vertex))  # later rows overwrite
        return last

    def row_states(
        self, rows: np.ndarray
    ) -> Iterator[tuple[int, dict[str, Any] | None, dict[str, Any]]]:
        """For each of ``rows`` (increasing row numbers): the row, and its vertex's state
        before it (``None``: the row created it) and after it -- new dicts, as the row
        path's notifications hold them: each vertex's old state with the state changes of
        its rows in the batch applied in order."""
        if self._entries is None:
            raise ValueError("this change batch has no state changes to apply")
        index = self.touched_index
        vertices = np.zeros(len(self.touched), np.bool_)
        vertices[index[rows]] = True
        needed = np.flatnonzero(vertices[index])  # every row of those vertices
        wanted = np.zeros(len(self), np.bool_)
        wanted[rows] = True
        changes = self._entries.take(needed).columns(in_edges=False)[3]
        current: list[Any] = list(self.old_states)
        made = self.created[needed].tolist()
        for row, k, created, delta in zip(
            needed.tolist(), index[needed].tolist(), made, changes, strict=True
        ):
            before = None if created else current[k]
            after = delta if before is None else {**before, **delta}
            current[k] = after
            if wanted[row]:
                yield row, before, after

    def net_changes(self) -> list[VertexChange]:
        """One :class:`VertexChange` per touched vertex (``touched`` order): the batch's
        net effect on it. Its clock, time and ``wc`` are those of its last row,
        ``old_state`` its state before the batch (``None``: created in it), ``state`` and
        ``vertex`` what it is after; ``added_out``/``added_in`` the edges new in the
        batch, in row order."""
        n = len(self.touched)
        added: list[tuple[list[VertexId], list[VertexId]]] = [([], []) for _ in range(n)]
        rows = np.flatnonzero(self.new_edge)
        index, half, other = (
            self.touched_index[rows].tolist(),
            self.half[rows].tolist(),
            self.other[rows].tolist(),
        )
        for k, h, o in zip(index, half, other, strict=True):
            added[k][h].append(o)
        last = self.last_rows()
        clocks, times = self.clock[last].tolist(), self.time[last].tolist()
        wcs = self.wc[last].tolist()
        changes = []
        for k, view in enumerate(self.views):
            out, ins = added[k]
            changes.append(
                VertexChange(
                    view,
                    clocks[k],
                    times[k],
                    wcs[k],
                    self.old_states[k],  # type: ignore[arg-type]
                    view._record.state,
                    tuple(out),
                    (),
                    tuple(ins),
                    (),
                )
            )
        return changes

    def __repr__(self) -> str:
        return f"ChangeBatch({len(self)} rows, {len(self.touched)} vertices)"


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class ShardView(Protocol):
    """What an observer may read of the shard it is attached to."""

    shard_id: int
    num_shards: int
    types: VertexTypes
    store: LogStore | None

    @property
    def worker_clock(self) -> int:
        """Behavior executions on the shard so far."""

    def vertex_view(self, vertex_id: VertexId) -> VertexView | None:
        """A read-only view of a live vertex (``None``: not on this shard)."""

    def vertex_views(self) -> Iterator[VertexView]:
        """Views of every live vertex of the shard."""


class ShardObserver(Protocol):
    """What ``ShardCore`` calls on the observer attached to it (see the module doc)."""

    watching: bool
    """Whether ``vertex_changed`` should be called at all (checked per execution)."""

    takes_batches: bool
    """Whether, while ``watching``, the rows of column runs may come as ``changes``
    batches instead of one ``vertex_changed`` each (see the module doc)."""

    def attach(self, shard: ShardView) -> None:
        """Called once when the observer is attached to a shard (after its recovery)."""

    def vertex_changed(self, change: VertexChange) -> None:
        """A behavior execution succeeded (see :class:`VertexChange`). Must not raise."""

    def changes(self, batch: ChangeBatch) -> None:
        """A stretch of a column run was applied (see :class:`ChangeBatch`); called only
        while ``watching`` and ``takes_batches``. Must not raise."""

    def side_pending(self, dest: int) -> int:
        """How many side items wait to be sent to shard ``dest``."""

    def take_side(self, dest: int) -> list[Any]:
        """Remove and return the side items for shard ``dest``."""

    def receive_side(self, items: list[Any]) -> None:
        """Side items that arrived from some shard (itself included)."""

    def side_processed(self) -> int:
        """How many side items this observer has received so far (a progress counter)."""


mark_module_api(globals())
