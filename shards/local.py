"""An in-process runtime: several ``ShardCore`` s wired together in one thread.

It moves batches between cores the way ``ShardWorker`` s do over Ray (same batches, same
acknowledgements, same rewinds), so the whole graph semantics -- messaging, logging,
recovery -- can be tested in milliseconds without Ray.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    >>> rt.ingest([Update.add_edge(1, 2, 10), Update.add_edge(1, 2, 20)])
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
        self.feeds: dict[str, SourceFeed] = {}
        """The last feed of each source ingested (its counters)."""
        self._running: dict[str, tuple[SourceFeed, Iterator[Update]]] = {}
        self._gate: dict[str, float] | None = None

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
        offsets_increase: bool = True,
    ) -> None:
        """Apply ``updates`` (stamped with ``(source, offset)`` if they are not) and run
        until no message is pending (:attr:`feeds` keeps the source's feed: its
        counters). Event time, batching, positions and the frontier are the
        :class:`~shards.feed.SourceFeed`'s, as for a Ray source actor: an update going
        back in time raises :class:`~shards.watermark.OutOfOrder` (after everything
        before it was applied) unless ``allowed_lateness`` is given, and then ``late``
        says what becomes of the updates later than that. ``offsets_increase=False``
        for updates sorted by time (see :class:`~shards.feed.SourceFeed`)."""
        self.ingest_many(
            {source: updates},
            allowed_lateness=allowed_lateness,
            late=late,
            on_late=on_late,
            offsets_increase=offsets_increase,
        )

    def ingest_many(
        self,
        sources: Mapping[str, Iterable[Update]],
        *,
        chunk: int = 1,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        on_late: Callable[[Update, float], None] | None = None,
        offsets_increase: bool = True,
    ) -> None:
        """Feed several sources at once, ``chunk`` updates of each in turn (as several
        source actors would), with the options of :meth:`ingest`. While more than one
        is active the shards merge their updates by event time (see
        :meth:`~shards.core.ShardCore.set_gate`), so every vertex sees them in time
        order whatever the interleaving. Each source's floor is what the shards hold from
        other sources before this call."""
        options = {
            "allowed_lateness": allowed_lateness,
            "late": late,
            "on_late": on_late,
            "offsets_increase": offsets_increase,
        }
        before = [dict(core.times) for core in self.cores]
        running: dict[str, tuple[SourceFeed, Iterator[Update]]] = {}
        try:
            for name, updates in sources.items():
                stream = _stamped(updates, name)
                first = next(stream, None)
                if first is None:
                    continue
                feed = self.feeds[first.source] = self._feed(first.source, before, **options)
                self._set_frontier(self._frontiers.open(feed.source))
                running[feed.source] = (feed, itertools.chain([first], stream))
            self._running = running
            self._update_gate()
            while running:
                for feed, stream in list(running.values()):
                    self._step(feed, stream, chunk)
        finally:
            self._abandon()

    def _step(self, feed: SourceFeed, stream: Iterator[Update], chunk: int) -> None:
        """One turn of ``feed``: pass its barrier if reached, send up to ``chunk`` more
        updates, or -- its source exhausted and nothing left behind a barrier -- retire it."""
        if feed.barrier is not None:
            if not self._reached(feed):
                return  # the other sources go on meanwhile
            self._send(feed, feed.pass_barrier())
            if feed.barrier is not None:
                return
        if feed.ended:
            self._running.pop(feed.source)
            self._set_frontier(self._frontiers.close(feed.source))
            self._update_gate()
            return
        for n, update in enumerate(stream, start=1):
            self._send(feed, feed.offer(update))
            if n == chunk:
                return
        self._send(feed, feed.end())

    def _abandon(self) -> None:
        """After an error: send what every source read, merged no more, and stop."""
        feeds = [f for f, _ in self._running.values()]
        self._running = {}
        self._update_gate()
        for feed in feeds:
            if not feed.ended:
                self._send(feed, feed.end())
            while feed.barrier is not None and self._reached(feed):
                self._send(feed, feed.pass_barrier())
            self._set_frontier(self._frontiers.close(feed.source))
        self.run_until_quiet()

    def _feed(self, source: str, before: list[dict[str, float]], **options: Any) -> SourceFeed:
        """A feed for ``source`` that resumes where the shards' logs say it stopped; its
        floor is the latest time the shards had applied from other sources (``before``)."""
        channel = source_channel(source)
        applied = [core.applied.get(channel, 0) for core in self.cores]
        others = [t for times in before for c, t in times.items() if c != channel]
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
        """Push ``batches``; past a barrier, go on once what it waits for is applied (at
        once with one source, since every push runs until no message is pending)."""
        while True:
            for shard, batch in batches:
                self._push(feed, shard, batch)
            if feed.barrier is None or not self._reached(feed):
                return
            batches = feed.pass_barrier()

    def _reached(self, feed: SourceFeed) -> bool:
        """Whether ``feed``'s barrier is reached: everything it sent, and every message of
        time up to the barrier, applied."""
        barrier = feed.barrier
        assert barrier is not None
        applied = [core.applied.get(feed.channel, 0) for core in self.cores]
        if any(o.last > applied[k] for k in range(self.num_shards) for o in feed.open_batches(k)):
            return False
        return all(core.min_pending_time() > barrier for core in self.cores)

    def _update_gate(self) -> None:
        """Tell the shards the active sources' promises (none while one source feeds)."""
        feeds = [f for f, _ in self._running.values()]
        gate = {f.channel: f.unsent_floor for f in feeds} if len(feeds) > 1 else None
        if gate == self._gate:
            return
        self._gate = gate
        for core in self.cores:
            core.set_gate(gate)
        for feed in feeds:
            for k, core in enumerate(self.cores):
                feed.ack(k, core.applied.get(feed.channel, 0))
            self._set_frontier(self._frontiers.update(feed.source, feed.frontier))
        self.run_until_quiet()

    def _set_frontier(self, change: tuple[float, bool] | None) -> None:
        if change is not None:
            time, lowered = change
            for core in self.cores:
                core.set_frontier(time, reset=lowered)

    def _push(self, feed: SourceFeed, shard: int, batch: Batch) -> None:
        """Hand one batch to ``shard``, then move the gate and the frontier past it."""
        feed.ack(shard, self.cores[shard].handle(batch).applied)
        self._update_gate()
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


def _stamped(updates: Iterable[Update], source: str) -> Iterator[Update]:
    """``updates`` with a ``(source, position)`` id where they have none."""
    for i, update in enumerate(updates, start=1):
        yield update if update.offset >= 0 else update.with_origin(source, i)
