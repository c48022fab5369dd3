"""What a shard tells the layers above it: vertex changes, and an unlogged side channel.

``ShardCore`` runs vertex behaviors and logs them; it knows nothing about live
computations, notification streams or indexes. Those live in an *observer* attached to
the core (:class:`ShardObserver`): the core calls it after every successful behavior
execution with a :class:`VertexChange`, and carries the observer's own messages between
shards as the unlogged ``side`` part of the ordinary shard-to-shard batches. The observer
sees the shard through :class:`ShardView` and vertices through :class:`VertexView`, both
read-only; it never gets the core itself.

Guarantees the core gives an observer:

* ``vertex_changed`` is called once per successful execution, right after its effects were
  applied in memory, in the shard's execution order -- so per vertex in clock order, the
  order of its log entries. Failed executions and messages that found no vertex are not
  reported.
* Side items are never logged and never touch anything that is: log entries, channel
  sequence numbers, vector clocks, checkpoints. A side-only batch carries no vector clock.
  Side items sent to a shard arrive in the order they were taken, unless a delivery fails
  (the receiver crashed): then they are lost, like the receiver's observer state.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from shards.logstore import LogStore
from shards.records import VertexRecord
from vertex.annotations import mark_module_api
from vertex.model import VertexTypes
from vertex.records import VertexId

__all__ = ["ShardObserver", "ShardView", "VertexChange", "VertexView"]


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

    def attach(self, shard: ShardView) -> None:
        """Called once when the observer is attached to a shard (after its recovery)."""

    def vertex_changed(self, change: VertexChange) -> None:
        """A behavior execution succeeded (see :class:`VertexChange`). Must not raise."""

    def side_pending(self, dest: int) -> int:
        """How many side items wait to be sent to shard ``dest``."""

    def take_side(self, dest: int) -> list[Any]:
        """Remove and return the side items for shard ``dest``."""

    def receive_side(self, items: list[Any]) -> None:
        """Side items that arrived from some shard (itself included)."""

    def side_processed(self) -> int:
        """How many side items this observer has received so far (a progress counter)."""


mark_module_api(globals())
