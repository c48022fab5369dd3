"""What a shard tells the layers above it: vertex changes, and an unlogged side channel.

``ShardCore`` runs vertex behaviors and logs them; it knows nothing about live
computations, notification streams or indexes. Those live in an *observer* attached to
the core (:class:`ShardObserver`): the core calls it after every successful behavior
execution with a :class:`VertexChange`, and carries the observer's own messages between
shards as the unlogged ``side`` part of the ordinary shard-to-shard batches.

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

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from vertex.records import VertexId

if TYPE_CHECKING:
    from shards.core import ShardCore, VertexRecord

__all__ = ["ShardObserver", "VertexChange"]


class VertexChange:
    """One successful behavior execution of a vertex, as seen after it.

    ``old_state`` is the state before (``None`` when the execution created the vertex),
    ``state`` the state after (``None`` when it deleted the vertex). ``out_edges`` and
    ``in_edges`` are read-only views of the vertex's edges *now* (a later execution of the
    same vertex in the same batch may have changed them); ``added_out``/``removed_out`` and
    ``added_in``/``removed_in`` are the edges this execution created or removed.
    """

    __slots__ = (
        "vertex_id",
        "type_name",
        "clock",
        "time",
        "wc",
        "old_state",
        "state",
        "added_out",
        "removed_out",
        "added_in",
        "removed_in",
        "_record",
    )

    def __init__(
        self,
        vertex_id: VertexId,
        record: VertexRecord,
        wc: int,
        old_state: dict[str, Any] | None,
        state: dict[str, Any] | None,
        added_out: tuple[VertexId, ...] = (),
        removed_out: tuple[VertexId, ...] = (),
        added_in: tuple[VertexId, ...] = (),
        removed_in: tuple[VertexId, ...] = (),
    ) -> None:
        self.vertex_id = vertex_id
        self.type_name = record.type_name
        self.clock = record.clock
        self.time = record.time
        self.wc = wc
        self.old_state = old_state
        self.state = state
        self.added_out = added_out
        self.removed_out = removed_out
        self.added_in = added_in
        self.removed_in = removed_in
        self._record = record

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
        return MappingProxyType(self._record.out_edges)

    @property
    def in_edges(self) -> Mapping[VertexId, Mapping[str, Any]]:
        """The vertex's incoming edge records now (read-only, eventually consistent)."""
        return MappingProxyType(self._record.in_edges)

    @property
    def topology_changed(self) -> bool:
        """Whether this execution added or removed an edge (either direction)."""
        return bool(self.added_out or self.removed_out or self.added_in or self.removed_in)

    def __repr__(self) -> str:
        return f"VertexChange({self.vertex_id!r}, clock={self.clock}, wc={self.wc})"


class ShardObserver(Protocol):
    """What ``ShardCore`` calls on the observer attached to it (see the module doc)."""

    watching: bool
    """Whether ``vertex_changed`` should be called at all (checked per execution)."""

    def attach(self, core: ShardCore) -> None:
        """Called once when the observer is attached to ``core`` (after its recovery)."""

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
