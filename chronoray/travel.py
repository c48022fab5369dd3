"""Time travel behind ``GraphCluster``: snapshots, past vertex states and histories.

:class:`TimeTravel` owns the rules -- which cut an argument means, that a time cut waits
until every update up to its time is logged, what is refused -- and asks its runtime
(:class:`ShardLogs`) only for what differs between runtimes: waiting for a time to be
complete, building a snapshot from the shards' logs (Ray tasks on the logs' nodes, or in
this process), running a function against one shard's log, and the worker clocks now.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

from shards.core import VertexNotFound
from shards.routing import shard_of
from snapshot.reconstruct import consistent_bound
from snapshot.retro import vertex_history, vertex_state_at
from snapshot.snapshot import Snapshot, SnapshotMeta
from vertex.annotations import mark_module_api

__all__ = ["ShardLogs", "TimeTravel"]


class ShardLogs(Protocol):
    """What a runtime offers time travel."""

    @property
    def num_shards(self) -> int:
        """Number of shards."""
        ...

    def wait_until_complete(self, t: float, timeout: float) -> None:
        """Return once every update of time ``<= t`` and what it caused is logged."""
        ...

    def build_snapshot(
        self,
        meta: SnapshotMeta,
        *,
        clock: tuple[int, ...] | None = None,
        at: float | None = None,
        since: float | None = None,
    ) -> Snapshot:
        """Every shard's part of the cut, rebuilt from its log."""
        ...

    def read_log(self, shard: int, function: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """``function(store, *args, **kw)`` against a read-only view of ``shard``'s log."""
        ...

    def clocks(self) -> tuple[int, ...]:
        """Every shard's worker clock now."""
        ...


class TimeTravel:
    """Snapshots and past states of a graph whose logs ``logs`` reads."""

    def __init__(self, logs: ShardLogs) -> None:
        self.logs = logs

    def snapshot(
        self,
        at: float | None = None,
        *,
        clock: list[int] | tuple[int, ...] | None = None,
        window: tuple[float, float] | None = None,
        timeout: float = 120.0,
    ) -> Snapshot:
        """See :meth:`GraphCluster.snapshot <chronoray.graph.GraphCluster.snapshot>`."""
        if sum(x is not None for x in (at, clock, window)) > 1:
            raise ValueError("give at most one of at=, clock=, window=")
        logs = self.logs
        if clock is not None:
            cut = tuple(int(c) for c in clock)
            if len(cut) != logs.num_shards:
                raise ValueError(f"clock needs {logs.num_shards} components, got {len(cut)}")
            return logs.build_snapshot(SnapshotMeta("clock", clock=list(cut)), clock=cut)
        if window is not None:
            t0, t1 = window
            if t0 > t1:
                raise ValueError(f"window start {t0} is after its end {t1}")
            logs.wait_until_complete(t1, timeout)
            meta = SnapshotMeta("window", at=t1, window=(t0, t1))
            return logs.build_snapshot(meta, at=t1, since=t0)
        if at is not None:
            logs.wait_until_complete(at, timeout)
            return logs.build_snapshot(SnapshotMeta("time", at=at), at=at)
        now = logs.clocks()
        return logs.build_snapshot(SnapshotMeta("now", clock=list(now)), clock=now)

    def vertex_state(
        self,
        vertex_id: Any,
        at: float | None = None,
        *,
        clock: list[int] | tuple[int, ...] | None = None,
    ) -> dict[str, Any] | None:
        """The state of ``vertex_id`` at time ``at`` or at the consistent cut within
        ``clock`` from its shard's log (``None``: neither given, ask the live graph);
        :class:`VertexNotFound` if it did not exist then."""
        shard = shard_of(vertex_id, self.logs.num_shards)
        if clock is not None:
            bound = self.logs.read_log(shard, consistent_bound, shard, tuple(clock))
            found = self.logs.read_log(shard, vertex_state_at, vertex_id, bound=bound)
        elif at is not None:
            self.logs.wait_until_complete(at, 120.0)
            found = self.logs.read_log(shard, vertex_state_at, vertex_id, at=at)
        else:
            return None
        if found is None:
            raise VertexNotFound(vertex_id)
        state: dict[str, Any] = found
        return state

    def history(
        self, vertex_id: Any, t0: float | None = None, t1: float | None = None
    ) -> list[dict[str, Any]]:
        """See :meth:`GraphCluster.history <chronoray.graph.GraphCluster.history>`."""
        shard = shard_of(vertex_id, self.logs.num_shards)
        lo = -math.inf if t0 is None else t0
        hi = math.inf if t1 is None else t1
        if t1 is not None:
            self.logs.wait_until_complete(t1, 120.0)
        states: list[dict[str, Any]] = self.logs.read_log(shard, vertex_history, vertex_id, lo, hi)
        if not states:
            raise VertexNotFound(vertex_id)
        return states


mark_module_api(globals())
