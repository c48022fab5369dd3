"""``ShardWorker``: the Ray actor around one ``ShardCore``.

The actor only moves batches: ``push`` (from sources) and ``deliver`` (from shards) hand a
batch to the core, which logs it before the call returns -- so a returned call is an
acknowledgement. One background task per destination shard sends the core's outbox, at
most one call in flight per destination (which keeps FIFO order per channel) and all
messages queued meanwhile coalesced into the next call. A failed delivery is retried
until the peer is back; the peer drops what it had already applied.

Backpressure: ``push`` waits while the shard's outboxes hold more than ``max_pending``
messages, so sources slow down to what the shards can exchange. Deliveries between
shards are never held back (that could deadlock two full shards); like the broker topics
of the original design, outboxes absorb a burst.

If the core cannot write its log the process exits, Ray restarts the actor
(``max_restarts``), and the new instance rebuilds the shard from its log.

An observer (``host_factory(core)``, e.g. the live-computation host of ``ephemeral``) can
be attached to the core; :meth:`ShardWorker.live` calls its methods, and its side items
travel with the shard's batches. A restarted actor gets a fresh observer: whatever it
held in memory is gone.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any, NoReturn

import ray
from ray.exceptions import ActorUnavailableError, RayActorError

from shards.coordinator import Gate
from shards.core import Batch, ShardCore, ShardFailed
from shards.logstore import LogError, LogStore, RocksLogStore, open_log_store
from shards.protocol import Outcome, Quiet, ShardSettings, ShardStats
from vertex.annotations import mark_module_api
from vertex.model import VertexTypes
from vertex.records import VertexId

__all__ = ["ShardWorker", "ACTOR_ERRORS", "answer", "shard_actor_name", "with_read_only_log"]

ACTOR_ERRORS = (RayActorError, ActorUnavailableError)
"""Exceptions that mean "the actor died or is restarting": resend after it is back."""

_RETRY_DELAY = 0.05
_REOPEN_DELAY = 1.0


def _restart(failure: ShardFailed) -> NoReturn:
    """End this process, saying why (Ray shows a worker's stderr): its memory may be ahead
    of its log, so Ray restarts the actor and the new process recovers from the log."""
    print(f"{failure}; restarting from the log", file=sys.stderr, flush=True)
    os._exit(70)


def _open_log(factory: str, path: str, sync: bool, restarted: bool, shard: int) -> LogStore:
    """The shard's log. A restarted shard never starts over from an empty log (its log
    must still be there), and one that cannot open its log (disk full, directory gone or
    read-only) says why and ends after a pause, so Ray tries again until the fault is
    gone; a first start fails at once (e.g. another graph holds the log)."""
    try:
        return open_log_store(factory, path, sync=sync, create=not restarted)
    except LogError as exc:
        if not restarted:
            raise
        print(f"shard {shard}: {exc}; retrying in {_REOPEN_DELAY} s", file=sys.stderr, flush=True)
        time.sleep(_REOPEN_DELAY)
        os._exit(71)


def with_read_only_log(
    path: str, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``function(store, *args, **kwargs)`` against a read-only handle of the log at
    ``path`` (the shard may be writing it meanwhile), closed after."""
    store = RocksLogStore(path, read_only=True)
    try:
        return function(store, *args, **kwargs)
    finally:
        store.close()


def answer(ref: Any) -> Any:
    """The result of one actor call: ``ray.get`` of one object ref, typed ``Any`` for the
    caller to name (Ray's stubs take a ref of unknown type for a list of them)."""
    return ray.get(ref)


def _settings(keeper_name: tuple[str, str], shard: int, incarnation: str) -> ShardSettings:
    """What restarted shard ``shard`` is told by the graph's controller, asked again while
    the controller restarts too (``ValueError`` once it is gone: the graph stopped)."""
    while True:
        keeper = ray.get_actor(keeper_name[0], namespace=keeper_name[1])
        try:
            settings: ShardSettings = answer(keeper.shard_restarted.remote(shard, incarnation))
        except ACTOR_ERRORS:
            time.sleep(_RETRY_DELAY)
            continue
        return settings


def shard_actor_name(graph_id: str, shard: int) -> str:
    """The Ray actor name of ``shard`` in graph ``graph_id``."""
    return f"chronoray-{graph_id}-shard-{shard}"


class ShardWorker:
    """One shard as an async Ray actor (``ray.remote(ShardWorker)``).

    ``namespace`` is the Ray namespace its peers are named in (``None``: the job's).
    ``frontier_keeper`` names (``(name, namespace)``) the graph's controller: a restarted
    shard tells it (``shard_restarted(shard, incarnation)``), gets the sources' current
    frontier and gate (see :meth:`~shards.core.ShardCore.set_gate`) and sets them before
    it sends or merges anything; the sources resend what it had not logged. (A name, not a
    handle: Ray warns about actor handles among the constructor arguments of a
    restartable actor.) Frontiers and gates come numbered: an older one arriving after a
    newer is ignored.
    """

    def __init__(
        self,
        graph_id: str,
        shard_id: int,
        num_shards: int,
        log_path: str,
        types: VertexTypes,
        *,
        shard_checkpoint_interval: int = 100_000,
        sync: bool = False,
        max_pending: int = 200_000,
        max_batch: int = 20_000,
        host_factory: Callable[[], Any] | None = None,
        namespace: str | None = None,
        frontier_keeper: tuple[str, str] | None = None,
        log_store: str = "",
    ) -> None:
        self.graph_id = graph_id
        self.namespace = namespace
        self.shard_id = shard_id
        self.num_shards = num_shards
        self.max_pending = max_pending
        self.max_batch = max_batch
        self.log_path = log_path
        with warnings.catch_warnings():  # Ray's property warns about its own internals
            warnings.simplefilter("ignore")
            self.restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
        store = _open_log(log_store, log_path, sync, self.restarted, shard_id)
        self.core = ShardCore(
            shard_id, num_shards, store, types, shard_checkpoint_interval=shard_checkpoint_interval
        )
        self.host = None
        if host_factory is not None:
            self.host = host_factory()
            self.core.attach(self.host)
        self._peers: list[Any] = [None] * num_shards
        self._wake: list[asyncio.Event] = []
        self._notified: asyncio.Event | None = None
        self._drained: asyncio.Event | None = None
        self._progressed: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._told = {"frontier": -1, "gate": -1}  # the number of the last value taken
        if self.restarted and frontier_keeper is not None:
            # a new core releases every message; hold back what the sources have not reached
            settings = _settings(frontier_keeper, shard_id, self.core.incarnation)
            self._told = {"frontier": settings.frontier_seq, "gate": settings.gate_seq}
            self.core.set_frontier(settings.frontier, reset=True)
            self.core.set_gate(settings.gate)

    # -- calls ------------------------------------------------------------------------

    async def push(self, batch: Batch) -> Outcome:
        """Take a batch of stream updates (applied, or queued to be merged with other
        sources'); returns what became of it."""
        self._start()
        assert self._drained is not None
        while self._backlogged():
            self._drained.clear()
            await self._drained.wait()
        return self._handle(batch)

    async def set_frontier(self, time: float, reset: bool = False, seq: int = 0) -> None:
        """Release held messages up to event time ``time`` (see ``ShardCore.set_frontier``);
        ``seq`` numbers it (an older one than the last taken is ignored)."""
        self._start()
        if not self._newer("frontier", seq):
            return
        self.core.set_frontier(time, reset=reset)
        for event in self._wake:
            event.set()

    async def set_gate(self, gate: Gate | None, seq: int = 0) -> None:
        """The promises of the sources feeding the graph (see ``ShardCore.set_gate``);
        ``seq`` numbers it (an older one than the last taken is ignored)."""
        self._start()
        if not self._newer("gate", seq):
            return
        try:
            self.core.set_gate(gate)
        except ShardFailed as exc:
            _restart(exc)
        self._progress()

    async def wait_applied(self, channel: str, position: int, timeout: float) -> Outcome:
        """The positions on ``channel`` once it applied ``position`` (or after ``timeout``
        seconds): a source waiting for updates queued to be merged (a long poll)."""
        applied = self.core.applied
        await self._until(lambda: applied.get(channel, 0) >= position, timeout)
        return self.core.position(channel)

    async def wait_quiet(self, timeout: float) -> Quiet:
        """Once nothing is pending here -- no message nor side item waiting to be sent or
        acknowledged -- (or after ``timeout`` seconds): whether it is so, the worker clock
        and the side items processed (a long poll: ``GraphCluster.wait_idle``)."""
        core = self.core
        quiet = await self._until(
            lambda: core.pending_total() == 0 and core.side_pending_total() == 0, timeout
        )
        observer = core.observer
        processed = 0 if observer is None else observer.side_processed()
        return Quiet(quiet, core.worker_clock, processed)

    async def wait_pending_after(self, t: float, timeout: float) -> bool:
        """Whether no message of time ``<= t`` is pending here, once so (or after
        ``timeout`` seconds): a time cut at ``t`` waits for it (a long poll)."""
        core = self.core
        return await self._until(lambda: core.min_pending_time() > t, timeout)

    async def _until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``condition()`` holds, looking again whenever something ran here;
        ``False`` if it still does not after ``timeout`` seconds."""
        self._start()
        assert self._progressed is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not condition():
            left = deadline - loop.time()
            if left <= 0:
                return False
            self._progressed.clear()
            try:
                await asyncio.wait_for(self._progressed.wait(), left)
            except TimeoutError:
                return condition()
        return True

    async def deliver(self, batch: Batch) -> Outcome:
        """Apply a batch of messages from a shard; returns what became of it."""
        self._start()
        return self._handle(batch)

    async def ping(self) -> int:
        """The worker clock; used to wait until a (restarted) actor answers."""
        self._start()
        return self.core.worker_clock

    async def pid(self) -> int:
        """The actor's process id (fault-injection tests kill it)."""
        return os.getpid()

    async def read_log(
        self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """``function(store, *args, **kwargs)`` against a read-only handle of this shard's
        log, in a thread of this process, while the shard goes on (what a task on the
        shard's node does, without a worker process to start). A caller wanting several
        return values sets ``num_returns``."""
        return await asyncio.to_thread(with_read_only_log, self.log_path, function, args, kwargs)

    async def node(self) -> str:
        """The id of the Ray node this shard runs on (tasks reading its log go there)."""
        return ray.get_runtime_context().get_node_id()

    async def stats(self, pending_time: bool = False) -> ShardStats:
        """The core's counters plus whether this process is a restarted instance; with
        ``pending_time`` also the earliest time of an unacknowledged message (a scan of
        the outboxes, so only when a time cut asks for it)."""
        self._start()
        stats = self.core.stats()
        stats.restarted = self.restarted
        if pending_time:
            stats.min_pending_time = self.core.min_pending_time()
        return stats

    async def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """A copy of one vertex (raises ``VertexNotFound``)."""
        self._start()
        return self.core.vertex(vertex_id)

    async def vertex_ids(self) -> list[VertexId]:
        """Ids of the vertices of this shard."""
        return list(self.core.vertices)

    async def edges(self) -> list[tuple[VertexId, VertexId, dict[str, Any]]]:
        """Every outgoing edge of this shard's vertices as ``(src, dst, props)``."""
        return [
            (src, dst, props)
            for src, record in self.core.vertices.items()
            for dst, props in record.out_edges.items()
        ]

    async def degrees(self) -> list[tuple[VertexId, int, int]]:
        """``(vertex, out_degree, in_degree)`` for every vertex of this shard."""
        return [(v, len(r.out_edges), len(r.in_edges)) for v, r in self.core.vertices.items()]

    async def recent_errors(self) -> list[tuple[int, VertexId, str]]:
        """The last failed behavior executions as ``(worker clock, vertex, error)``."""
        return list(self.core.recent_errors)

    async def live(self, method: str, *args: Any) -> Any:
        """Call ``method`` of the attached observer (host) with ``args``; what it sends
        is delivered by the send loops."""
        self._start()
        if self.host is None:
            raise RuntimeError(f"shard {self.shard_id} has no live host attached")
        result = getattr(self.host, method)(*args)
        self._progress()
        return result

    async def live_poll(self, method: str, wait: float, *args: Any) -> Any:
        """Like :meth:`live`, but if the call returns nothing (an empty list), wait up to
        ``wait`` seconds for the host to signal news and call it again (a long poll)."""
        self._start()
        assert self._notified is not None
        result = await self.live(method, *args)
        if result or wait <= 0:
            return result
        self._notified.clear()  # no await since the call: nothing was missed
        try:
            await asyncio.wait_for(self._notified.wait(), wait)
        except TimeoutError:
            return result
        return await self.live(method, *args)

    async def close(self) -> None:
        """Stop sending and close the log (the actor should be killed afterwards)."""
        for task in self._tasks:
            task.cancel()
        assert self.core.store is not None
        self.core.store.close()

    # -- internals --------------------------------------------------------------------

    def _start(self) -> None:
        if self._tasks:
            return
        self._wake = [asyncio.Event() for _ in range(self.num_shards)]
        self._drained = asyncio.Event()
        self._progressed = asyncio.Event()
        self._notified = asyncio.Event()
        if self.host is not None:
            self.host.wake = self._notified.set
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._send_loop(d)) for d in range(self.num_shards)]
        for event in self._wake:
            event.set()  # a recovered outbox may hold messages already

    def _newer(self, what: str, seq: int) -> bool:
        if seq < self._told[what]:
            return False
        self._told[what] = seq
        return True

    def _handle(self, batch: Batch) -> Outcome:
        try:
            outcome = self.core.handle(batch)
        except ShardFailed as exc:
            _restart(exc)
        self._progress()
        return outcome

    def _progress(self) -> None:
        """Something ran: wake the senders and whoever waits for a position."""
        self._wake_senders()
        if self._progressed is not None:
            self._progressed.set()

    def _wake_senders(self) -> None:
        core = self.core
        for dest, event in enumerate(self._wake):
            if core.pending(dest) or core.side_pending(dest):
                event.set()

    async def _send_loop(self, dest: int) -> None:
        core = self.core
        wake = self._wake[dest]
        while True:
            batch = core.take_batch(dest, self.max_batch)
            if batch is None:
                wake.clear()
                await wake.wait()
                continue
            if dest == self.shard_id:
                outcome = self._handle(batch)
                await asyncio.sleep(0)  # let calls in between long local cascades
            else:
                try:
                    outcome = await self._peer(dest).deliver.remote(batch)
                except ACTOR_ERRORS:
                    core.rewind(dest)
                    await asyncio.sleep(_RETRY_DELAY)
                    continue
            core.ack(dest, outcome.applied)
            if outcome.buffered:
                core.rewind(dest)
            if self._progressed is not None:
                self._progressed.set()  # pending went down: wake who waits for quiet
            if self._drained is not None and not self._backlogged():
                self._drained.set()

    def _backlogged(self) -> bool:
        """Too many sendable messages wait: hold source batches back. Messages held by the
        frontier do not count, since only the source's progress releases them."""
        core = self.core
        return (
            core.pending_total() > self.max_pending and core.releasable_pending() > self.max_pending
        )

    def _peer(self, dest: int) -> Any:
        if self._peers[dest] is None:
            name = shard_actor_name(self.graph_id, dest)
            self._peers[dest] = ray.get_actor(name, namespace=self.namespace)
        return self._peers[dest]


mark_module_api(globals())
