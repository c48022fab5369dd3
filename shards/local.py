"""An in-process runtime: several ``ShardCore`` s wired together in one thread.

It moves batches between cores the way ``ShardWorker`` s do over Ray (same batches, same
acknowledgements, same rewinds), so the whole graph semantics -- messaging, logging,
recovery -- can be tested in milliseconds without Ray.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from shards.core import Batch, ShardCore
from shards.logstore import LogStore, MemoryLogStore
from shards.routing import shard_of
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
        checkpoint_interval: int = 64,
        shard_checkpoint_interval: int = 100_000,
        batch_size: int = 1000,
        host_factory: Callable[[], Any] | None = None,
    ) -> None:
        LocalRuntime._instances += 1
        prefix = f"local-{id(self)}-{LocalRuntime._instances}"
        self._factory = store_factory or (lambda k: MemoryLogStore(f"{prefix}-{k}"))
        self.types = types or VertexTypes()
        self.num_shards = num_shards
        self.checkpoint_interval = checkpoint_interval
        self.shard_checkpoint_interval = shard_checkpoint_interval
        self.batch_size = batch_size
        self.host_factory = host_factory
        self._stores: list[LogStore | None] = [self._factory(k) for k in range(num_shards)]
        self.cores = [self._new_core(k) for k in range(num_shards)]
        self._sent: dict[tuple[str, int], int] = {}

    def _new_core(self, shard: int) -> ShardCore:
        core = ShardCore(
            shard,
            self.num_shards,
            self._stores[shard],
            self.types,
            checkpoint_interval=self.checkpoint_interval,
            shard_checkpoint_interval=self.shard_checkpoint_interval,
        )
        if self.host_factory is not None:
            core.attach(self.host_factory())
        return core

    def ingest(self, updates: Iterable[Update], source: str = "iterable") -> None:
        """Apply ``updates`` (stamped with ``(source, offset)`` if they are not) and run
        until no message is pending."""
        buffers: list[list[Update]] = [[] for _ in range(self.num_shards)]
        latest = -math.inf
        self._set_frontier(-math.inf, reset=True)
        for i, update in enumerate(updates, start=1):
            if update.offset < 0:
                update = update.with_origin(source, i)
            latest = max(latest, update.ts)
            shard = shard_of(update.vertex, self.num_shards)
            buffers[shard].append(update)
            if len(buffers[shard]) >= self.batch_size:
                batch, buffers[shard] = buffers[shard], []
                unsent = [u.ts for b in buffers for u in b]
                self._set_frontier(min(unsent, default=latest))
                self.push(shard, batch)
        for shard, buffered in enumerate(buffers):
            if buffered:
                self.push(shard, buffered)
        self._set_frontier(math.inf)
        self.run_until_quiet()

    def _set_frontier(self, time: float, *, reset: bool = False) -> None:
        for core in self.cores:
            core.set_frontier(time, reset=reset)

    def push(self, shard: int, updates: list[Update]) -> None:
        """Hand one batch of one source's updates to ``shard`` (like a source does)."""
        key = (updates[0].source, shard)
        batch = Batch.of_updates(updates, prev=self._sent.get(key, 0))
        self._sent[key] = updates[-1].offset
        self.cores[shard].handle(batch)
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

    def close(self) -> None:
        """Close every log."""
        for store in self._stores:
            if store is not None:
                store.close()
