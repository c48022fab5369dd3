"""Ingestion on Ray: a :class:`~shards.feed.SourceFeed` driven by Ray calls.

:class:`FeedPump` sends the feed's batches to the shard actors (at most
``max_inflight`` unacknowledged batches per shard: backpressure), hands their
acknowledgements back to the feed, resends a restarted shard's open batches, and reports
the feed's frontier to the graph's controller. It runs either in a driver (the calling
thread) or, by default, in a :class:`SourceActor` on the cluster -- the I/O actors of
the original design -- so that ingestion does not depend on a driver staying alive.

Guarantees:

* A source actor that dies is restarted by Ray; the new instance asks every shard how
  far it applied this source (its log says) and resumes from there: nothing lost,
  nothing doubled.
* A malformed record stops the source after everything before it was applied (or, with
  ``on_error="skip"``, is counted and written to the rejects file); the error reaches
  the driver that waits for the source.
* While a shard is unavailable (its node is gone), the source waits and says so in its
  status (:meth:`SourceActor.progress`), instead of hanging without a word.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import ray

from chronoray.sources import MalformedRecord, ReadStats, Source, read_updates
from shards.core import Batch
from shards.feed import SourceFeed
from shards.progress import Progress, Reporter, progress_reporter
from shards.worker import ACTOR_ERRORS, shard_actor_name
from vertex.records import Update

__all__ = [
    "FeedPump",
    "IngestJob",
    "IngestReport",
    "SourceActor",
    "count_lines",
    "feed_source",
    "ingest_reporter",
]

_POLL = 0.2
OnError = Literal["raise", "skip"]


@dataclass
class IngestReport:
    """What one ingestion of a source did. ``updates`` counts every update read
    (``skipped``: those a shard had applied before, e.g. after a resume)."""

    source: str
    updates: int = 0
    rejected: int = 0
    skipped: int = 0
    batches: int = 0
    resent_batches: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        """Updates per second."""
        return self.updates / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def count_lines(path: Path) -> int:
    """Lines of a file (the total of a file source's progress bar)."""
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _retrying(call: Callable[[], Any], status: Callable[[str | None], None], what: str) -> Any:
    """Run ``call`` until the actor it calls answers (Ray restarts dead actors; a shard
    whose node is gone waits for it), saying meanwhile what it waits for."""
    waited = 0.0
    while True:
        try:
            result = call()
        except ACTOR_ERRORS:
            if waited >= 1.0:
                status(f"waiting for {what} (unavailable for {waited:.0f} s)")
            time.sleep(0.1)
            waited += 0.1
            continue
        status(None)
        return result


class FeedPump:
    """Drives one :class:`SourceFeed` against the shard actors (one thread; other threads
    may call :meth:`complete_through` and :meth:`progress`)."""

    def __init__(
        self,
        feed: SourceFeed,
        shards: list[Any],
        controller: Any,
        max_inflight: int,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        self.feed = feed
        self.shards = shards
        self.controller = controller
        self.max_inflight = max_inflight
        self.on_batch = on_batch
        self.waiting: str | None = None
        self.lock = threading.RLock()
        self._inflight: list[deque[tuple[Batch, Any]]] = [deque() for _ in shards]
        self._told = feed.frontier
        self._in_callback = False

    @classmethod
    def resume(
        cls, name: str, shards: list[Any], controller: Any, batch_size: int, max_inflight: int
    ) -> FeedPump:
        """A pump for source ``name`` that skips what every shard already applied."""
        pump = cls(SourceFeed(name, len(shards), batch_size), shards, controller, max_inflight)
        channel = pump.feed.channel
        stats = _retrying(
            lambda: ray.get([s.stats.remote() for s in shards]), pump._status, "the shards"
        )
        pump.feed = SourceFeed(
            name, len(shards), batch_size, [s["applied"].get(channel, 0) for s in stats]
        )
        return pump

    def _status(self, text: str | None) -> None:
        self.waiting = text

    def run(self, updates: Iterable[Update], tick: Callable[[int], None]) -> None:
        """Feed every update, then send what is buffered and wait for every ack."""
        try:
            for update in updates:
                with self.lock:
                    for shard, batch in self.feed.offer(update):
                        self._send(shard, batch)
                if self.feed.read % 1000 == 0:
                    tick(self.feed.read)
        finally:  # also at a malformed record: what came before it is applied in full
            with self.lock:
                for shard, batch in self.feed.flush():
                    self._send(shard, batch)
                for shard in range(len(self.shards)):
                    self._settle(shard, 0)
                    if self.feed.open_batches(shard):  # buffered behind a lost batch
                        self._resend(shard)
                self._tell_frontier()
            tick(self.feed.read)

    def _send(self, shard: int, batch: Batch) -> None:
        self._inflight[shard].append((batch, self.shards[shard].push.remote(batch)))
        if self.on_batch is not None and not self._in_callback:
            self._in_callback = True  # a callback that takes a snapshot must not re-enter
            try:
                self.on_batch(self.feed.batches)
            finally:
                self._in_callback = False
        self._settle(shard, self.max_inflight)
        self._tell_frontier()

    def _tell_frontier(self) -> None:
        frontier = self.feed.frontier
        if frontier > self._told:
            self._told = frontier
            self.controller.source_frontier.remote(self.feed.source, frontier)

    def _settle(self, shard: int, keep: int) -> None:
        inflight = self._inflight[shard]
        while len(inflight) > keep:
            _, ref = inflight[0]
            try:
                applied, _ = ray.get(ref)
            except ACTOR_ERRORS:
                self._resend(shard)
                continue
            inflight.popleft()
            self.feed.ack(shard, applied)

    def _resend(self, shard: int) -> None:
        """Resend every open batch of ``shard``, in order, once it is back."""
        self._inflight[shard].clear()
        actor = self.shards[shard]
        for batch in self.feed.unacked(shard):
            applied, _ = _retrying(
                lambda b=batch: ray.get(actor.push.remote(b)), self._status, f"shard {shard}"
            )
            self.feed.ack(shard, applied)

    def complete_through(self, t: float) -> tuple[str | None, list[tuple[int, int]]]:
        """For a time cut at ``t``: a reason it cannot be complete yet, and the open
        batches holding updates of time ``<= t`` as ``(shard, last offset)`` (the caller
        checks them against the shards' applied positions). Sends what is buffered up to
        ``t`` first, so a cut need not wait for a batch to fill."""
        with self.lock:
            feed = self.feed
            if not feed.ordered:
                return (
                    f"source {feed.source} is not in time order; a time snapshot can only "
                    "be taken once its ingestion ended",
                    [],
                )
            if feed.max_ts <= t:
                return (
                    f"time {t} is not complete: source {feed.source} has only read up to "
                    f"{feed.max_ts}; take it later or after ingestion",
                    [],
                )
            for shard, batch in feed.flush(through=t):
                self._send(shard, batch)
            return None, [
                (shard, o.last)
                for shard in range(len(self.shards))
                for o in feed.open_batches(shard)
                if o.min_ts <= t
            ]

    def progress(self) -> dict[str, Any]:
        """Counters of the feed and what it waits for, if anything."""
        feed = self.feed
        return {
            "source": feed.source,
            "read": feed.read,
            "acked": feed.acked_updates,
            "acked_offset": feed.acked_offset,
            "skipped": feed.skipped,
            "max_ts": feed.max_ts,
            "waiting": self.waiting,
        }


def feed_source(
    pump: FeedPump,
    source: Source,
    on_error: OnError,
    rejects: str | None,
    tick: Callable[[int], None],
) -> tuple[IngestReport, MalformedRecord | None]:
    """Run ``source`` through ``pump``; returns the report and the malformed record that
    stopped it, if one did. The controller is told when the source starts and ends."""
    started = time.perf_counter()
    updates: Iterator[Update]
    updates, read_stats = read_updates(source, on_error=on_error, rejects=rejects)
    error: MalformedRecord | None = None
    try:
        pump.run(updates, tick)
    except MalformedRecord as exc:
        error = exc
    report = _report(pump, read_stats, time.perf_counter() - started)
    return report, error


def _report(pump: FeedPump, read_stats: ReadStats, seconds: float) -> IngestReport:
    feed = pump.feed
    return IngestReport(
        source=feed.source,
        updates=feed.read,
        rejected=read_stats.rejected,
        skipped=feed.skipped,
        batches=feed.batches,
        resent_batches=feed.resent,
        seconds=seconds,
    )


class SourceActor:
    """A source feeding the graph from inside the cluster (``ray.remote(SourceActor)``,
    threaded). It starts reading at once in a thread of its own, reports to the graph's
    controller when it ends, and is restarted by Ray (and resumes) if its process dies.

    ``graph`` is ``(graph id, namespace, controller name, shard count)``: the actors are
    found by name (Ray warns about actor handles among the constructor arguments of a
    restartable actor). A file source is read again from its path after a restart; an
    iterable source travels as an argument, kept by the driver that started it.
    """

    def __init__(
        self,
        source: Source,
        graph: tuple[str, str, str, int],
        batch_size: int,
        max_inflight: int,
        on_error: OnError,
        rejects: str | None,
    ) -> None:
        graph_id, namespace, controller_name, num_shards = graph
        shards = [
            ray.get_actor(shard_actor_name(graph_id, k), namespace=namespace)
            for k in range(num_shards)
        ]
        controller = ray.get_actor(controller_name, namespace=namespace)
        self.pump = FeedPump.resume(source.name, shards, controller, batch_size, max_inflight)
        self.controller = controller
        self.source = source
        self.on_error = on_error
        self.rejects = rejects
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        report, error = feed_source(self.pump, self.source, self.on_error, self.rejects, _no_tick)
        self.controller.close_source.remote(
            self.source.name, {"report": report.as_dict(), "error": error}
        )

    def progress(self) -> dict[str, Any]:
        """The feed's counters and what it waits for."""
        return self.pump.progress()

    def complete_through(self, t: float) -> tuple[str | None, list[tuple[int, int]]]:
        """See :meth:`FeedPump.complete_through`."""
        return self.pump.complete_through(t)

    def pid(self) -> int:
        """The actor's process id (fault-injection tests kill it)."""
        import os

        return os.getpid()


def _no_tick(n: int) -> None:
    return None


def ingest_reporter(progress: Progress, name: str, total: int | None) -> Reporter:
    """The progress of one source, reported with its state (``read``, ``waiting``): a
    bar noting what it waits for, or a callable getting the count of updates read."""
    if callable(progress):
        callback = progress
        return progress_reporter(lambda state: callback(state.get("read", 0)), name)
    return progress_reporter(
        progress,
        f"ingest {name}",
        total,
        unit="updates",
        completed=lambda state: state.get("read", 0),
        describe=lambda state: state.get("waiting") or "",
    )


class IngestJob:
    """A source started by :meth:`GraphCluster.ingest` with ``wait=False``: follow it
    with :meth:`wait`, look at it with :meth:`progress`."""

    def __init__(self, name: str, actor: Any, controller: Any, total: int | None) -> None:
        self.name = name
        self.actor = actor
        self.controller = controller
        self.total = total

    def done(self) -> bool:
        """Whether the source ended (successfully or not)."""
        return ray.get(self.controller.report.remote(self.name)) is not None

    def progress(self) -> dict[str, Any]:
        """The source's counters and what it waits for (``{"done": True}`` once ended)."""
        if self.done():
            return {"source": self.name, "done": True}
        try:
            return dict(ray.get(self.actor.progress.remote()), done=False)
        except ACTOR_ERRORS:
            return {"source": self.name, "done": False, "waiting": "source actor restarting"}

    def wait(self, progress: Progress = False, timeout: float | None = None) -> IngestReport:
        """Block until the source ended; its report, or the :class:`MalformedRecord` that
        stopped it raised here. ``progress``: a bar (``True``) or a callable getting the
        count of updates read."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with ingest_reporter(progress, self.name, self.total) as bar:
            while True:
                final = ray.get(self.controller.report.remote(self.name))
                if final is not None:
                    break
                state = self.progress()
                bar(state)
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"source {self.name} still running: {state}")
                time.sleep(_POLL)
            report = IngestReport(**final["report"])
            bar({"read": report.updates})
        if final["error"] is not None:
            raise final["error"]
        return report
