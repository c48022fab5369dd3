"""An in-process runtime: several ``ShardCore`` s wired together in one thread.

It moves batches between cores the way ``ShardWorker`` s do over Ray (same batches, same
acknowledgements, same rewinds) and coordinates its sources with the same
:class:`~shards.coordinator.SourceCoordinator` as the Ray controller, so the whole graph
semantics -- messaging, logging, event time, recovery -- can be tested in milliseconds
without Ray. :meth:`LocalRuntime.crash`, :meth:`LocalRuntime.crash_source` and
:meth:`LocalRuntime.crash_coordinator` lose a shard's, a source's or the coordinator's
memory as a process kill would.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from shards.coordinator import (
    DEFAULT_IDLE_TIMEOUT,
    AdvanceWatermark,
    FloorRead,
    Instruction,
    ReadFloor,
    Recovered,
    Refuse,
    ReportProgress,
    Resend,
    SetFrontier,
    SetGate,
    ShardRestarted,
    SourceCoordinator,
    SourceEnded,
    SourceIdle,
    SourceOpened,
    SourceProgressed,
    source_channel,
)
from shards.core import Batch, ShardCore
from shards.feed import SourceFeed
from shards.logstore import LogStore, MemoryLogStore
from shards.routing import shard_of
from shards.watermark import LatePolicy
from vertex.annotations import mark_module_api
from vertex.columns import UpdateBatch
from vertex.model import VertexTypes
from vertex.records import Update, VertexId

__all__ = ["LocalRuntime", "SourceStuck"]

_END: Any = object()


class SourceStuck(RuntimeError):
    """No source can go on (a bug: the coordinator's promises should always let one)."""


@dataclass(slots=True)
class _Running:
    """A source being fed: its feed, what is left to read, and how to read it again."""

    feed: SourceFeed
    stream: Iterator[Update | UpdateBatch | None]
    updates: Iterable[Update | UpdateBatch | None]
    options: dict[str, Any]
    last_read: float
    idle_timeout: float


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
        linger: float | None = None,
        host_factory: Callable[[], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        LocalRuntime._instances += 1
        prefix = f"local-{id(self)}-{LocalRuntime._instances}"
        self._factory = store_factory or (lambda k: MemoryLogStore(f"{prefix}-{k}"))
        self.types = types or VertexTypes()
        self.num_shards = num_shards
        self.shard_checkpoint_interval = shard_checkpoint_interval
        self.batch_size = batch_size
        self.linger = linger
        self.host_factory = host_factory
        self.clock = clock
        self._stores: list[LogStore | None] = [self._factory(k) for k in range(num_shards)]
        self.cores = [self._new_core(k) for k in range(num_shards)]
        self.coordinator = SourceCoordinator(num_shards)
        self._floors: dict[str, float] = {}  # what survives the coordinator (on Ray: a file)
        self.feeds: dict[str, SourceFeed] = {}
        """The last feed of each source ingested (its counters)."""
        self._running: dict[str, _Running] = {}
        self._crashed: set[str] = set()
        self._settling = False
        self._dirty = False
        self._prepare: Callable[[SourceFeed], None] | None = None

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

    # -- ingestion --------------------------------------------------------------------

    def ingest(
        self,
        updates: Iterable[Update | UpdateBatch | None],
        source: str = "iterable",
        *,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        on_late: Callable[[Update, float], None] | None = None,
        offsets_increase: bool = True,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        """Apply ``updates`` (stamped with ``(source, offset)`` if they are not) and run
        until no message is pending (:attr:`feeds` keeps the source's feed: its
        counters). Event time, batching, positions and the frontier are the
        :class:`~shards.feed.SourceFeed`'s, as for a Ray source actor: an update going
        back in time raises :class:`~shards.watermark.OutOfOrder` (after everything
        before it was applied) unless ``allowed_lateness`` is given, and then ``late``
        says what becomes of the updates later than that. ``offsets_increase=False``
        for updates sorted by time (see :class:`~shards.feed.SourceFeed`).

        ``updates`` may yield ``None``: nothing to read now (a stream waiting for more).
        A source that read nothing for ``idle_timeout`` seconds (of :attr:`clock`) stops
        holding the others back: its watermark catches up with theirs."""
        self.ingest_many(
            {source: updates},
            allowed_lateness=allowed_lateness,
            late=late,
            on_late=on_late,
            offsets_increase=offsets_increase,
            idle_timeout=idle_timeout,
        )

    def ingest_many(
        self,
        sources: Mapping[str, Iterable[Update | UpdateBatch | None]],
        *,
        chunk: int = 1,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        on_late: Callable[[Update, float], None] | None = None,
        offsets_increase: bool = True,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        prepare: Callable[[SourceFeed], None] | None = None,
    ) -> None:
        """Feed several sources at once, ``chunk`` updates of each in turn (as several
        source actors would), with the options of :meth:`ingest`. While more than one
        is active the shards merge their updates by event time (see
        :meth:`~shards.core.ShardCore.set_gate`), so every vertex sees them in time
        order whatever the interleaving. Each source's floor is the latest time the
        shards applied from other sources when it opened; a source retires once
        everything it sent is applied. ``prepare(feed)`` is called with each source's
        feed before it sends anything (again after :meth:`crash_source`)."""
        options = {
            "allowed_lateness": allowed_lateness,
            "late": late,
            "on_late": on_late,
            "offsets_increase": offsets_increase,
        }
        self._prepare = prepare
        try:
            for name, updates in sources.items():
                stream = _stamped(updates, name)
                first = next(stream, _END)
                if first is _END:
                    continue
                source = name if first is None else first.source
                self._open(source)
                run = self._start(source, updates, options, idle_timeout)
                run.stream = itertools.chain([first], stream)
            while self._running:
                moved = [self._step(run, chunk) for run in list(self._running.values())]
                if not any(moved):
                    held = self.coordinator.held_back_by()
                    raise SourceStuck(f"no source can go on (held back by {held})")
        finally:
            self._abandon()

    def progress(self) -> dict[str, dict[str, Any]]:
        """Per source feeding now: updates read, its watermark and largest time read,
        its event-time counters (what ``GraphCluster.status`` shows)."""
        return {
            name: {
                "source": name,
                "read": run.feed.read,
                "watermark": run.feed.watermark,
                "max_ts": run.feed.max_ts,
                **run.feed.counters(),
            }
            for name, run in list(self._running.items())
        }

    def crash_source(self, source: str) -> None:
        """Lose what source ``source`` holds in memory, as its process's kill would: at
        its next turn it starts reading again from the start, skipping what the shards
        applied (its updates must be readable again: not a one-shot iterator)."""
        run = self._running.get(source)
        if run is None:
            raise KeyError(f"source {source!r} is not feeding")
        if isinstance(run.updates, Iterator):
            raise ValueError(f"source {source!r} is a one-shot iterator: it cannot be re-read")
        self._crashed.add(source)

    def crash_coordinator(self) -> None:
        """Lose the coordinator's memory, as a kill of the Ray controller's process would:
        a new one takes back the open sources and their floors -- what the controller
        keeps on disk -- and every source feeding reports its progress to it again."""
        self.coordinator = SourceCoordinator(self.num_shards)
        self._do(self.coordinator.handle(Recovered(self._floors)))
        if self._running:
            self._settle()

    def _open(self, source: str) -> None:
        self._do(self.coordinator.handle(SourceOpened(source)))
        self._settle()

    def _start(
        self,
        source: str,
        updates: Iterable[Update | UpdateBatch | None],
        options: dict[str, Any],
        idle_timeout: float,
    ) -> _Running:
        """A feed for ``source`` that resumes where the shards' logs say it stopped, with
        the floor the coordinator read when it opened."""
        feed = self.feeds[source] = SourceFeed(
            source,
            self.num_shards,
            self.batch_size,
            [core.applied.get(source_channel(source), 0) for core in self.cores],
            floor=self.coordinator.source_floor(source),
            halves=self.types.stream_edges,
            linger=self.linger,
            **options,
        )
        run = _Running(
            feed, _stamped(updates, source), updates, options, self.clock(), idle_timeout
        )
        self._running[source] = run
        if self._prepare is not None:
            self._prepare(feed)
        return run

    def _step(self, run: _Running, chunk: int) -> bool:
        """One turn of a source: restart it if it crashed, pass its barrier if reached,
        send up to ``chunk`` more updates (a ``None`` read ends the turn: nothing to read
        now), or -- its source exhausted -- retire it once all it sent is applied.
        Returns whether it could (not: it waits for the others)."""
        feed = run.feed
        if feed.source in self._crashed:
            self._crashed.discard(feed.source)
            self._start(feed.source, run.updates, run.options, run.idle_timeout)
            return True
        if feed.barrier is not None:
            if not self._reached(feed):
                return False  # the other sources go on meanwhile
            self._send(feed, feed.pass_barrier())
            if feed.barrier is not None:
                return True
        if feed.ended:
            if not feed.idle:
                return False
            self._retire(feed)
            return True
        for n, update in enumerate(run.stream, start=1):
            if update is None:
                self._idle(run)
                return True  # waiting for the outside world: not stuck
            run.last_read = self.clock()
            if isinstance(update, UpdateBatch):
                feed.offer_batch(update, partial(self._send, feed))
                self._send_due(feed)
                return True  # a batch is a turn
            self._send(feed, feed.offer(update))
            self._send_due(feed)
            if n == chunk:
                return True
        self._send(feed, feed.end())
        return True

    def _send_due(self, feed: SourceFeed) -> None:
        """Send the batches whose updates waited the feed's linger (:meth:`SourceFeed.due`),
        unless the feed is at a barrier."""
        if feed.barrier is None:
            self._send(feed, feed.due(self.clock()))

    def _idle(self, run: _Running) -> None:
        self._send_due(run.feed)
        if self.clock() - run.last_read >= run.idle_timeout:
            self._do(self.coordinator.handle(SourceIdle(run.feed.source)))
            self._settle()

    def _retire(self, feed: SourceFeed) -> None:
        self._running.pop(feed.source, None)
        self._do(self.coordinator.handle(SourceEnded(feed.source)))
        self._settle()

    def _abandon(self) -> None:
        """After an error (or at the end): send what every source read and retire it.
        Should that fail too (a shard whose log write failed), the sources still end, so
        the same names can feed again once the shard is rebuilt (resending what its log
        lacks)."""
        try:
            for run in list(self._running.values()):
                feed = run.feed
                if not feed.ended:
                    self._send(feed, feed.end())
                while feed.barrier is not None and self._reached(feed):
                    self._send(feed, feed.pass_barrier())
            for run in list(self._running.values()):
                self._retire(run.feed)
            self.run_until_quiet()
        finally:
            for source in list(self._running):
                del self._running[source]
                self._do(self.coordinator.handle(SourceEnded(source)))

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

    def _push(self, feed: SourceFeed, shard: int, batch: Batch) -> None:
        """Hand one batch to ``shard``, then settle what follows from it."""
        feed.ack(shard, self.cores[shard].handle(batch).applied)
        self._settle()

    def _settle(self) -> None:
        """Deliver messages, take every source's acknowledgements, tell the coordinator
        how far each source is and carry out what it says -- until nothing changes."""
        if self._settling:
            self._dirty = True
            return
        self._settling = True
        try:
            self._dirty = True
            while self._dirty:
                self._dirty = False
                self.run_until_quiet()
                for run in list(self._running.values()):
                    feed = run.feed
                    for k, core in enumerate(self.cores):
                        feed.ack(k, core.applied.get(feed.channel, 0))
                    told = SourceProgressed(feed.source, feed.frontier, feed.promise(), feed.max_ts)
                    self._do(self.coordinator.handle(told))
        finally:
            self._settling = False

    def _do(self, instructions: list[Instruction]) -> None:
        """Carry out the coordinator's instructions, in order (what they let run is
        settled by the caller: :meth:`_settle`)."""
        for instruction in instructions:
            self._carry_out(instruction)
        self._floors = self.coordinator.floors

    def _carry_out(self, instruction: Instruction) -> None:
        match instruction:
            case SetFrontier(time=t, reset=reset, shards=shards):
                for k in shards or range(self.num_shards):
                    self.cores[k].set_frontier(t, reset=reset)
                self._dirty = True
            case SetGate(gate=gate, shards=shards):
                for k in shards or range(self.num_shards):
                    self.cores[k].set_gate(gate)
                self._dirty = True
            case ReadFloor(source=source):
                times = tuple(dict(core.times) for core in self.cores)
                self._do(self.coordinator.handle(FloorRead(source, times)))
            case AdvanceWatermark(source=source, watermark=mark):
                run = self._running.get(source)
                if run is not None and not run.feed.ended:
                    self._send(run.feed, run.feed.advance(mark))
            case ReportProgress(source=source):
                run = self._running.get(source)
                if run is not None:
                    feed = run.feed
                    told = SourceProgressed(source, feed.frontier, feed.promise(), feed.max_ts)
                    self._do(self.coordinator.handle(told))
            case Resend(source=source, shard=shard):
                run = self._running.get(source)
                if run is not None:
                    for batch in run.feed.unacked(shard):
                        self._push(run.feed, shard, batch)
            case Refuse(reason=reason):
                raise ValueError(reason)

    # -- messages between cores -------------------------------------------------------

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
        (with a fresh observer: what the old one held is lost). The coordinator gives it
        the frontier and the gate again, and every source feeding resends what it has not
        logged."""
        store = self._stores[shard]
        if store is None:
            raise RuntimeError("a shard without a log cannot recover")
        store.close()
        self._stores[shard] = self._factory(shard)
        core = self.cores[shard] = self._new_core(shard)
        for sender in self.cores:
            sender.rewind(shard)
        self._do(self.coordinator.handle(ShardRestarted(shard, core.incarnation)))
        if self._running:
            self._settle()

    # -- queries ----------------------------------------------------------------------

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


def _stamped(
    updates: Iterable[Update | UpdateBatch | None], source: str
) -> Iterator[Update | UpdateBatch | None]:
    """``updates`` with a ``(source, position)`` id where they have none (``None``,
    nothing to read now, passes through and takes no position)."""
    position = 0
    for update in updates:
        if update is None or isinstance(update, UpdateBatch) or update.offset >= 0:
            yield update
        else:
            position += 1
            yield update.with_origin(source, position)


mark_module_api(globals())
