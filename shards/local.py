"""An in-process runtime: several ``ShardCore`` s wired together in one thread.

It moves batches between cores the way ``ShardWorker`` s do over Ray (same batches, same
acknowledgements, same rewinds), so the whole graph semantics -- messaging, logging,
recovery -- can be tested in milliseconds without Ray.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from shards.core import Batch, ShardCore, source_channel
from shards.feed import Frontiers, SourceFeed
from shards.logstore import LogStore, MemoryLogStore
from shards.routing import shard_of
from shards.watermark import LatePolicy
from vertex.model import VertexTypes
from vertex.records import Update, VertexId

__all__ = ["LocalRuntime"]


class LocalRuntime:
    """``num_shards`` cores in this process, with in-memory logs unless ``store_factory``
    gives others (``store_factory(shard) -> LogStore``; ``None`` disables logging).

    >>> rt = LocalRuntime(2)
    >>> feed = rt.ingest([Update.add_edge(1, 2, 10), Update.add_edge(1, 2, 20)])
    >>> rt.vertex(1)["out_edges"][2]["count"], rt.vertex(2)["state"]["in_degree"]
    (2, 1)
    >>> rt.close()
    """

    _instances = 0

    def __init__(
        self,
        num_shards: int = 2,
        types: VertexTypes | None = None,
        store_factory: Callable[[int], LogStore | None] | None = None,
        *,
        shard_checkpoint_interval: int = 100_000,
        batch_size: int = 1000,
        host_factory: Callable[[], Any] | None = None,
    ) -> None:
        LocalRuntime._instances += 1
        prefix = f"local-{id(self)}-{LocalRuntime._instances}"
        self._factory = store_factory or (lambda k: MemoryLogStore(f"{prefix}-{k}"))
        self.types = types or VertexTypes()
        self.num_shards = num_shards
        self.shard_checkpoint_interval = shard_checkpoint_interval
        self.batch_size = batch_size
        self.host_factory = host_factory
        self._stores: list[LogStore | None] = [self._factory(k) for k in range(num_shards)]
        self.cores = [self._new_core(k) for k in range(num_shards)]
        self._frontiers = Frontiers()

    def _new_core(self, shard: int) -> ShardCore:
        core = ShardCore(
            shard,
            self.num_shards,
            self._stores[shard],
            self.types,
            shard_checkpoint_interval=self.shard_checkpoint_interval,
        )
        if self.host_factory is not None:
            core.attach(self.host_factory())
        return core

    def ingest(
        self,
        updates: Iterable[Update],
        source: str = "iterable",
        *,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        on_late: Callable[[Update, float], None] | None = None,
    ) -> SourceFeed | None:
        """Apply ``updates`` (stamped with ``(source, offset)`` if they are not) and run
        until no message is pending; returns the source's feed (its counters), ``None``
        for no update. Event time, batching, positions and the frontier are the
        :class:`~shards.feed.SourceFeed`'s, as for a Ray source actor: an update going
        back in time raises :class:`~shards.watermark.OutOfOrder` (after everything
        before it was applied) unless ``allowed_lateness`` is given, and then ``late``
        says what becomes of the updates later than that."""
        options = {"allowed_lateness": allowed_lateness, "late": late, "on_late": on_late}
        feed: SourceFeed | None = None
        try:
            for i, update in enumerate(updates, start=1):
                if update.offset < 0:
                    update = update.with_origin(source, i)
                if feed is None:
                    feed = self._feed(update.source, **options)
                    self._set_frontier(self._frontiers.open(feed.source))
                self._send(feed, feed.offer(update))
        finally:
            if feed is not None:
                self._send(feed, feed.end())
                self._set_frontier(self._frontiers.close(feed.source))
            self.run_until_quiet()
        return feed

    def _feed(self, source: str, **options: Any) -> SourceFeed:
        """A feed for ``source`` that resumes where the shards' logs say it stopped; its
        floor is the latest time the shards applied from other sources."""
        channel = source_channel(source)
        applied = [core.applied.get(channel, 0) for core in self.cores]
        others = [t for core in self.cores for c, t in core.times.items() if c != channel]
        return SourceFeed(
            source,
            self.num_shards,
            self.batch_size,
            applied,
            floor=max(others, default=-math.inf),
            halves=self.types.stream_edges,
            **options,
        )

    def _send(self, feed: SourceFeed, batches: list[tuple[int, Batch]]) -> None:
        """Push ``batches``; past a barrier, continue once what it waits for is applied
        (here: at once, since every push runs until no message is pending)."""
        while True:
            for shard, batch in batches:
                self._push(feed, shard, batch)
            if feed.barrier is None:
                return
            batches = feed.pass_barrier()

    def _set_frontier(self, change: tuple[float, bool] | None) -> None:
        if change is not None:
            time, lowered = change
            for core in self.cores:
                core.set_frontier(time, reset=lowered)

    def _push(self, feed: SourceFeed, shard: int, batch: Batch) -> None:
        """Hand one batch to ``shard``, then move the frontier past what is applied."""
        feed.ack(shard, self.cores[shard].handle(batch).applied)
        self._set_frontier(self._frontiers.update(feed.source, feed.frontier))
        self.run_until_quiet()

    def run_until_quiet(self, max_rounds: int = 1_000_000) -> int:
        """Deliver messages (and observers' side items) between cores until none is
        pending; returns batches moved."""
        moved = 0
        for _ in range(max_rounds):
            progressed = False
            for sender in self.cores:
                for dest, receiver in enumerate(self.cores):
                    batch = sender.take_batch(dest)
                    if batch is None:
                        continue
                    result = receiver.handle(batch)
                    sender.ack(dest, result.applied)
                    if result.buffered:
                        sender.rewind(dest)
                    progressed = True
                    moved += 1
            if not progressed:
                return moved
        raise RuntimeError("messages still pending after max_rounds")

    def crash(self, shard: int) -> None:
        """Drop ``shard``'s memory and rebuild it from its log, as after a process kill
        (with a fresh observer: what the old one held is lost)."""
        store = self._stores[shard]
        if store is None:
            raise RuntimeError("a shard without a log cannot recover")
        store.close()
        self._stores[shard] = self._factory(shard)
        self.cores[shard] = self._new_core(shard)
        for sender in self.cores:
            sender.rewind(shard)

    def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """The live state and edges of ``vertex_id`` (``VertexNotFound`` if absent)."""
        return self.cores[shard_of(vertex_id, self.num_shards)].vertex(vertex_id)

    def edges(self) -> dict[tuple[VertexId, VertexId], dict[str, Any]]:
        """Every edge ``(src, dst) -> props`` of the graph."""
        return {
            (src, dst): props
            for core in self.cores
            for src, record in core.vertices.items()
            for dst, props in record.out_edges.items()
        }

    def wait_idle(self) -> None:
        """Deliver every pending message (what ``GraphCluster.wait_idle`` waits for)."""
        self.run_until_quiet()

    def wait_until_complete(self, t: float, timeout: float = 120.0) -> None:
        """Every update ingested is applied when :meth:`ingest` returns: nothing to wait for."""

    def read_logs(
        self, function: Callable[..., Any], args: dict[int, tuple[Any, ...]]
    ) -> dict[int, Any]:
        """``function(store, *args[k])`` on shard ``k``'s log for every ``k`` in ``args``."""
        return {k: function(self.cores[k].store, *a) for k, a in args.items()}

    def close(self) -> None:
        """Close every log."""
        for store in self._stores:
            if store is not None:
                store.close()
