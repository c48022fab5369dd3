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
* Event time is the feed's (:mod:`shards.watermark`): a file that must be in order (no
  allowed lateness, not sorted) is checked first and refused at its first line going
  back (:class:`~shards.watermark.OutOfOrder`), before anything of it is applied; late
  updates a lateness does not cover are written to the rejects file (``late="reject"``)
  with their line and lateness, or applied at the watermark (``late="apply"``). While
  several sources feed the graph the pump reports its *promise* (no update it sends from
  now on is earlier) with its frontier, and waits at its end until the shards merged
  and applied all it sent.
* While a shard is unavailable (its node is gone), the source waits and says so in its
  status (:meth:`SourceActor.progress`), instead of hanging without a word.
* The graph's controller may die and come back meanwhile: a call to it that fails is
  made again once it is back, and the pump reports its progress to the new instance when
  asked (:class:`~shards.coordinator.ReportProgress`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import ray
from ray import ObjectRef

from chronoray.handles import ControllerHandle, ShardHandle
from chronoray.sources import (
    MalformedRecord,
    OutOfOrder,
    ReadStats,
    RejectWriter,
    SortedSource,
    Source,
    check_order,
    late_record,
    read_columns,
)
from shards.coordinator import (
    DEFAULT_IDLE_TIMEOUT,
    AdvanceWatermark,
    ReportProgress,
    Resend,
    source_channel,
)
from shards.core import Batch, Outcome
from shards.feed import SourceFeed
from shards.progress import Progress, Reporter, progress_reporter
from shards.watermark import LatePolicy, show_time
from shards.worker import ACTOR_ERRORS
from vertex.annotations import mark_module_api
from vertex.columns import UpdateBatch
from vertex.records import Update

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "FeedPump",
    "FinishedJob",
    "IngestJob",
    "IngestReport",
    "SourceActor",
    "SourceFinal",
    "SourceJob",
    "count_lines",
    "feed_options",
    "feed_source",
    "ingest_reporter",
    "report_of",
]

_POLL = 0.2
_WAIT = 2.0  # seconds a pump waits on a shard for merged updates before it looks again
OnError = Literal["raise", "skip"]


@dataclass(slots=True)
class IngestReport:
    """What one ingestion of a source did. ``updates`` counts every update read
    (``skipped``: those a shard had applied before, e.g. after a resume -- already in the
    graph; ``rejected``: malformed records skipped; :attr:`new`: the rest, applied now).
    ``resumed_after``: the highest offset of the source a shard had applied before this
    ingestion started (``0``: a new source; for a file, a line number). Event time:
    ``out_of_order`` updates came with a time below one read before them, by at most
    ``max_lateness`` seconds; ``late_rejected`` were later than the allowed lateness and
    set aside, ``late_applied`` applied at the watermark."""

    source: str
    updates: int = 0
    rejected: int = 0
    skipped: int = 0
    batches: int = 0
    resent_batches: int = 0
    seconds: float = 0.0
    out_of_order: int = 0
    max_lateness: float = 0.0
    late_rejected: int = 0
    late_applied: int = 0
    resumed_after: int = 0
    refused: int = 0
    """Updates read and refused, not applied: the one going back in time that stopped a
    source which must be in order (``0`` or ``1``)."""

    @property
    def new(self) -> int:
        """Updates this ingestion applied: read, minus those already in the graph, the
        late ones set aside and the one refused."""
        return self.updates - self.skipped - self.late_rejected - self.refused

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
    may call :meth:`complete_through` and :meth:`progress`).

    While it runs, a watchdog thread long-polls the graph's controller for what this
    source should do -- resend to a restarted shard, catch its watermark up with the
    other sources' after :attr:`idle_timeout` seconds without reading -- and does it."""

    def __init__(
        self,
        feed: SourceFeed,
        shards: list[ShardHandle],
        controller: ControllerHandle,
        max_inflight: int,
        on_batch: Callable[[int], None] | None = None,
        incarnations: list[str] | None = None,
    ) -> None:
        self.feed = feed
        self.shards = shards
        self.controller = controller
        self.max_inflight = max_inflight
        self.on_batch = on_batch
        self.waiting: str | None = None
        self.lock = threading.RLock()
        self._inflight: list[deque[tuple[Batch, ObjectRef[Outcome]]]] = [deque() for _ in shards]
        self._incarnations = incarnations or [""] * len(shards)
        self._told = (feed.frontier, feed.promise().time)
        self._in_callback = False
        self._sent = 0  # batches sent (first sends, not resends)
        self.idle_timeout = DEFAULT_IDLE_TIMEOUT
        self._last_read = time.monotonic()
        self._reading = False
        self._closed = False
        self._watchdog: threading.Thread | None = None

    @classmethod
    def resume(
        cls,
        name: str,
        shards: list[ShardHandle],
        controller: ControllerHandle,
        batch_size: int,
        max_inflight: int,
        *,
        idle_timeout: float = 0.0,
        **options: Any,
    ) -> FeedPump:
        """A pump for source ``name`` that skips what every shard already applied;
        ``options`` go to its :class:`SourceFeed` (lateness, late policy, floor, halves);
        ``idle_timeout``: seconds without reading after which the source times out
        (``0``: :data:`DEFAULT_IDLE_TIMEOUT`)."""
        channel = source_channel(name)
        waiting: list[str | None] = [None]
        positions = _retrying(
            lambda: ray.get([s.wait_applied(channel, 0, 0.0) for s in shards]),
            lambda text: waiting.__setitem__(0, text),
            "the shards",
        )
        feed = SourceFeed(name, len(shards), batch_size, [p.applied for p in positions], **options)
        pump = cls(feed, shards, controller, max_inflight, None, [p.incarnation for p in positions])
        pump.idle_timeout = idle_timeout or DEFAULT_IDLE_TIMEOUT
        return pump

    def _status(self, text: str | None) -> None:
        self.waiting = text

    def run(
        self,
        updates: Iterable[Update | UpdateBatch | None],
        tick: Callable[[int], None],
        *,
        end: bool = False,
    ) -> None:
        """Feed every update (or batch of them, as columns), then send what is buffered
        and wait until the shards applied all of it; ``end``: these are the source's last
        updates -- what the reordering still holds is released too, and the source
        promises nothing more (without it, ``run`` can be called again with the next
        updates). ``None`` among
        the updates: nothing to read now (the source is idle meanwhile)."""
        self._watching()
        self._reading = True
        next_tick = self.feed.read + 1000
        try:
            for update in updates:
                if update is None:
                    self._send_due()
                    time.sleep(_POLL / 4)
                    continue
                with self.lock:
                    self._last_read = time.monotonic()
                    self._offer(update)
                    self._send_due()
                    self._last_read = time.monotonic()  # sending (waiting for room) is not idling
                if self.feed.read >= next_tick:
                    tick(self.feed.read)
                    next_tick = self.feed.read - self.feed.read % 1000 + 1000
        finally:  # also at a bad record: what came before it is applied in full
            self._reading = False
            with self.lock:
                self._send_all(self.feed.end() if end else self.feed.flush())
            self._applied_all()
            if end:
                self.close()
            tick(self.feed.read)

    def offer(self, updates: Iterable[Update | UpdateBatch]) -> None:
        """Feed ``updates`` (or batches of them, as columns) and send the batches the feed
        sealed, without waiting for the shards to log them (:meth:`wait_logged` waits).
        What stays buffered is sent at once if every shard has room for another call, else
        once one answered (in :meth:`wait_logged`): while the shards are busy, small offers
        reach them together, in larger batches."""
        with self.lock:
            self._watching()
            for update in updates:
                self._offer(update)
            self._send_if_room()

    def _offer(self, update: Update | UpdateBatch) -> None:
        if isinstance(update, UpdateBatch):
            self.feed.offer_batch(update, self._send_all)
        else:
            self._send_all(self.feed.offer(update))

    def _send_if_room(self) -> None:
        """Send what the feed buffered if no shard is at ``max_inflight`` open calls (so
        sending it waits for none)."""
        if all(len(inflight) < self.max_inflight for inflight in self._inflight):
            self._send_all(self.feed.flush())

    def wait_logged(self, position: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until the shards logged every update offered
        through source position ``position`` (:attr:`SourceFeed.acked_offset`), taking
        their answers meanwhile and sending what :meth:`offer` left buffered once they
        have room; whether they did. A restarted shard gets its open batches again; a
        shard holding updates to merge them with other sources' is long-polled. The lock
        is not held while a shard is waited for: another thread may offer meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                for shard in range(len(self.shards)):
                    self._settle(shard, len(self._inflight[shard]))  # the answered ones
                self._send_if_room()
                self._tell_progress()
                if self.feed.acked_offset >= position:
                    return True
                calls = [inflight[0][1] for inflight in self._inflight if inflight]
                held = [
                    (shard, opened[-1].last)
                    for shard in range(len(self.shards))
                    if not self._inflight[shard] and (opened := self.feed.open_batches(shard))
                ]
            wait = min(deadline - time.monotonic(), _WAIT)
            if wait <= 0:
                return False
            if calls:
                ray.wait(calls, num_returns=1, timeout=wait)
            elif not held:  # held by the feed itself (a lateness): it goes on as it reads
                time.sleep(min(wait, _POLL / 4))
            for shard, last in held if not calls else []:
                self._wait_applied(shard, last, wait)

    def close(self) -> None:
        """Stop the watchdog (the source is done)."""
        self._closed = True

    def _watching(self) -> None:
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, daemon=True)
            self._watchdog.start()

    def _watch(self) -> None:
        """Carry out the controller's instructions for this source until it is closed, and
        tell it when the source, reading, has read nothing for :attr:`idle_timeout`
        seconds (as in stream processors, it then stops holding the graph's watermark
        back; what it reads later below that is late)."""
        name = self.feed.source
        wait = min(self.idle_timeout / 4, _POLL)
        while not self._closed and ray.is_initialized():  # (a call after shutdown: auto-init)
            try:
                todo = self.controller.instructions(name, wait)
                idle = time.monotonic() - self._last_read
                if self._reading and idle >= self.idle_timeout:
                    todo += self.controller.source_idle(name)
            except Exception as exc:
                if self._closed or not ray.is_initialized():
                    return  # the graph (or Ray) shut down after the source ended
                if not isinstance(exc, ACTOR_ERRORS):
                    raise
                self._status("waiting for the graph's controller")
                time.sleep(0.1)
                continue
            self._status(None)
            with self.lock:
                for instruction in todo:
                    self._carry_out(instruction, idle)
            self._send_due()  # a source blocked in its read: what it buffered goes on

    def _send_due(self) -> None:
        """Send the batches whose updates waited the feed's ``linger`` (see
        :meth:`SourceFeed.due`), unless the source is past reading or at a barrier."""
        with self.lock:
            if self._reading and not self.feed.ended and self.feed.barrier is None:
                self._send_all(self.feed.due(time.monotonic()))

    def _carry_out(self, instruction: Any, idle: float) -> None:
        match instruction:
            case Resend(shard=shard, incarnation=incarnation):
                if incarnation != self._incarnations[shard]:
                    self._resend(shard)
            case AdvanceWatermark(watermark=mark) if self._reading and not self.feed.ended:
                if time.monotonic() - self._last_read < self.idle_timeout:
                    return  # it read again since it was found idle: the mark is stale
                if mark > self.feed.watermark:
                    self._send_all(self.feed.advance(mark))
                    self._tell_progress()
                    self.waiting = f"idle for {idle:.0f} s: watermark moved up to {mark}"
            case ReportProgress():
                self._tell_progress(force=True)

    def _send_all(self, batches: list[tuple[int, Batch]]) -> None:
        """Send ``batches``; at a barrier, wait for it, then send what it held back."""
        while True:
            for shard, batch in batches:
                self._send(shard, batch)
            barrier = self.feed.barrier
            if barrier is None:
                return
            self._applied_all()
            self._quiet_through(barrier)
            batches = self.feed.pass_barrier()

    def _send(self, shard: int, batch: Batch) -> None:
        self._inflight[shard].append((batch, self.shards[shard].push(batch)))
        self._sent += 1  # (the feed may have sealed more already: columns seal many at once)
        if self.on_batch is not None and not self._in_callback:
            self._in_callback = True  # a callback that takes a snapshot must not re-enter
            try:
                self.on_batch(self._sent)
            finally:
                self._in_callback = False
        self._settle(shard, self.max_inflight)
        self._tell_progress()

    def _tell_progress(self, *, force: bool = False) -> None:
        """Tell the controller the feed's frontier and promise when either went up (or,
        ``force``, in any case: a restarted controller asks)."""
        frontier, promise = self.feed.frontier, self.feed.promise()
        told_frontier, told_promise = self._told
        if force or frontier > told_frontier or promise.time > told_promise:
            self._told = (max(frontier, told_frontier), max(promise.time, told_promise))
            name, reach = self.feed.source, self.feed.max_ts
            self.controller.source_progress(name, frontier, promise, reach)

    def _settle(self, shard: int, keep: int) -> None:
        """Wait until at most ``keep`` calls to ``shard`` are open, and take every
        answered one."""
        inflight = self._inflight[shard]
        while len(inflight) > keep or (inflight and _answered(inflight[0][1])):
            try:
                outcome = ray.get(inflight[0][1])
            except ACTOR_ERRORS:
                self._resend(shard)
                continue
            inflight.popleft()
            self._take(shard, outcome)

    def _take(self, shard: int, outcome: Outcome) -> None:
        """Take a shard's answer; one from a new incarnation of it (it restarted and lost
        what it had queued) makes this source resend what it has not logged."""
        self.feed.ack(shard, outcome.applied)
        if outcome.incarnation != self._incarnations[shard]:
            self._resend(shard)

    def _resend(self, shard: int) -> None:
        """Resend every open batch of ``shard``, in order, once it is back."""
        self._inflight[shard].clear()
        actor = self.shards[shard]
        for batch in self.feed.unacked(shard):
            outcome = _retrying(partial(_push, actor, batch), self._status, f"shard {shard}")
            self._incarnations[shard] = outcome.incarnation
            self.feed.ack(shard, outcome.applied)
        if not self.feed.open_batches(shard):  # nothing to resend: just take its id
            outcome = _retrying(
                lambda: ray.get(actor.wait_applied(self.feed.channel, 0, 0.0)),
                self._status,
                f"shard {shard}",
            )
            self._incarnations[shard] = outcome.incarnation

    def _applied_all(self) -> None:
        """Return once every batch sent was applied: the shards may hold updates to merge
        them with other sources' by event time (a long poll on each shard), and a shard
        that restarted meanwhile gets its open batches again. The lock is not held while
        a shard is waited for (unless the caller holds it): a time cut asks this pump
        meanwhile."""
        with self.lock:
            for shard in range(len(self.shards)):
                self._settle(shard, 0)
            self._tell_progress()
        for shard in range(len(self.shards)):
            while opened := self.feed.open_batches(shard):
                if self._wait_applied(shard, opened[-1].last, _WAIT):
                    with self.lock:
                        self._tell_progress()
                        if self.feed.open_batches(shard):
                            self._status(f"shard {shard} merging this source with the others")
            self._status(None)
        with self.lock:
            self._tell_progress()

    def _wait_applied(self, shard: int, last: int, wait: float) -> bool:
        """Long-poll ``shard`` until it applied this source through position ``last`` (at
        most ``wait`` seconds) and take its answer (``True``); a shard that restarted gets
        its open batches again instead (``False``). The lock is not held while the shard
        is waited for."""
        try:
            outcome = ray.get(self.shards[shard].wait_applied(self.feed.channel, last, wait))
        except ACTOR_ERRORS:
            with self.lock:
                self._resend(shard)
            return False
        with self.lock:
            self._take(shard, outcome)
        return True

    def _quiet_through(self, t: float) -> None:
        """Return once no shard holds a message of time ``<= t`` (what a vertex removal
        sent, before the source goes on), each shard waited for in turn (a long poll)."""
        for actor in self.shards:
            quiet = partial(_pending_after, actor, t)
            while not _retrying(quiet, self._status, "the shards"):
                self._tell_progress()

    def complete_through(self, t: float) -> tuple[str | None, list[tuple[int, int]]]:
        """For a time cut at ``t``: a reason it cannot be complete yet (the source has not
        read past ``t``: its watermark is not above it), and the open batches holding
        updates of time ``<= t`` as ``(shard, last position)`` (the caller checks them
        against the shards' applied positions; ``(-1, 0)`` stands for updates held here,
        behind a vertex removal). Sends what is buffered up to ``t`` first, so a cut need
        not wait for a batch to fill."""
        with self.lock:
            feed = self.feed
            if feed.watermark <= t:
                return _not_read_past(feed, t), []
            for shard, batch in feed.flush(through=t):
                self._send(shard, batch)
            open_through = [
                (shard, o.last)
                for shard in range(len(self.shards))
                for o in feed.open_batches(shard)
                if o.min_ts <= t
            ]
            if not feed.applied_through(t, [0] * len(self.shards)) and not open_through:
                open_through.append((-1, 0))
            return None, open_through

    def progress(self) -> dict[str, Any]:
        """Counters of the feed (event time ones included) and what it waits for."""
        feed = self.feed
        return {
            "source": feed.source,
            "read": feed.read,
            "acked": feed.acked_updates,
            "acked_offset": feed.acked_offset,
            "skipped": feed.skipped,
            "max_ts": feed.max_ts,
            "watermark": feed.watermark,
            **feed.counters(),
            "waiting": self.waiting,
        }


def _push(actor: ShardHandle, batch: Batch) -> Outcome:
    return ray.get(actor.push(batch))


def _pending_after(actor: ShardHandle, t: float) -> bool:
    return ray.get(actor.wait_pending_after(t, _WAIT))


def _answered(ref: ObjectRef[Outcome]) -> bool:
    ready, _ = ray.wait([ref], timeout=0)
    return bool(ready)


def _not_read_past(feed: SourceFeed, t: float) -> str:
    lateness = feed.reorder.allowed_lateness
    mark = ""
    if lateness:
        mark = f" (its watermark, {show_time(lateness)} s behind, is {show_time(feed.watermark)})"
    return (
        f"time {show_time(t)} is not complete: source {feed.source} holds it back, having "
        f"read up to {show_time(feed.max_ts)}{mark}; take it later or after ingestion"
    )


def feed_source(
    pump: FeedPump,
    source: Source,
    on_error: OnError,
    rejects: str | None,
    tick: Callable[[int], None],
) -> tuple[IngestReport, MalformedRecord | OutOfOrder | None]:
    """Run ``source`` through ``pump``; returns the report and the bad record that
    stopped it, if one did (malformed, or going back in time where it must not). A file
    that must be in order is checked before anything is sent; late updates go to the
    rejects file (if given)."""
    started = time.perf_counter()
    feed = pump.feed
    writer = RejectWriter(rejects) if rejects is not None else None
    if writer is not None:
        where = str(getattr(source, "where", source.name))
        feed.reorder.on_late = lambda u, w: writer.write(late_record(u, w, where))
    updates, read_stats = read_columns(source, on_error=on_error, rejects=rejects)
    error: MalformedRecord | OutOfOrder | None = None
    reading = False
    try:
        if feed.reorder.allowed_lateness is None:
            check_order(source, feed.reorder.floor, feed.applied_before)
        reading = True
        pump.run(updates, tick, end=True)
    except (MalformedRecord, OutOfOrder) as exc:
        error = exc
    finally:
        if writer is not None:
            writer.close()
    report = report_of(pump.feed, source, read_stats, time.perf_counter() - started)
    if reading and isinstance(error, OutOfOrder):  # the feed read it, then refused it
        report.refused = 1
    return report, error


def report_of(
    feed: SourceFeed, source: Source, read_stats: ReadStats, seconds: float
) -> IngestReport:
    """The report of ``source`` fed through ``feed`` (either runtime)."""
    counters = feed.counters()
    if isinstance(source, SortedSource):  # the disorder is the file's, sorted away before
        counters.update(out_of_order=source.out_of_order, max_lateness=source.max_lateness)
    return IngestReport(
        source=feed.source,
        updates=feed.read,
        rejected=read_stats.rejected,
        skipped=feed.skipped,
        batches=feed.batches,
        resent_batches=feed.resent,
        seconds=seconds,
        resumed_after=feed.applied_before,
        **counters,  # type: ignore[arg-type]
    )


class SourceActor:
    """A source feeding the graph from inside the cluster (``ray.remote(SourceActor)``,
    threaded). It starts reading at once in a thread of its own, reports to the graph's
    controller when it ends, and is restarted by Ray (and resumes) if its process dies.

    ``graph`` is ``(graph id, namespace, controller name, shard count)``: the actors are
    found by name (Ray warns about actor handles among the constructor arguments of a
    restartable actor). A file source is read again from its path after a restart; an
    iterable source travels as an argument, kept by the driver that started it.
    ``options`` are the feed's event-time options (:func:`feed_options`); the floor comes
    from the controller, the same for a restarted actor.
    """

    def __init__(
        self,
        source: Source,
        graph: tuple[str, str, str, int],
        batch_size: int,
        max_inflight: int,
        on_error: OnError,
        rejects: str | None,
        options: dict[str, Any] | None = None,
    ) -> None:
        graph_id, namespace, controller_name, num_shards = graph
        shards = [ShardHandle.named(graph_id, k, namespace) for k in range(num_shards)]
        # it must come back (unless stopped for good): this source cannot end without it
        controller = ControllerHandle.named(controller_name, namespace, patience=math.inf)
        floor = controller.source_floor(source.name)
        self.pump: FeedPump = FeedPump.resume(
            source.name,
            shards,
            controller,
            batch_size,
            max_inflight,
            floor=floor,
            **(options or {}),
        )
        self.controller = controller
        self.source: Source = source
        self.on_error: OnError = on_error
        self.rejects: str | None = rejects
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        report, error = feed_source(self.pump, self.source, self.on_error, self.rejects, _no_tick)
        self.controller.close_source(self.source.name, SourceFinal(report, error))

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


def feed_options(
    source: Source,
    *,
    halves: bool,
    allowed_lateness: float | None = None,
    late: LatePolicy = "reject",
    idle_timeout: float = 0.0,
) -> dict[str, Any]:
    """The event-time options of a pump for ``source`` (the floor comes from the
    controller): whether stream edges go to both endpoints, the lateness and late policy,
    how errors name it, whether its offsets increase, its idle timeout."""
    return {
        "halves": halves,
        "allowed_lateness": allowed_lateness,
        "late": late,
        "where": str(getattr(source, "where", source.name)),
        "offsets_increase": getattr(source, "offsets_increase", True),
        "idle_timeout": idle_timeout,
    }


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
    """A source being fed, as :meth:`GraphCluster.ingest` returns it with ``wait=False``:
    follow it with :meth:`wait`, look at it with :meth:`progress`."""

    name: str

    def done(self) -> bool:
        """Whether the source ended (successfully or not)."""
        raise NotImplementedError

    def progress(self) -> dict[str, Any]:
        """The source's counters and what it waits for (``{"done": True}`` once ended)."""
        raise NotImplementedError

    def wait(self, progress: Progress = False, timeout: float | None = None) -> IngestReport:
        """Block until the source ended; its report, or the error that stopped it (a
        :class:`MalformedRecord`, an :class:`OutOfOrder`) raised here. ``progress``: a bar
        (``True``) or a callable getting the count of updates read."""
        raise NotImplementedError


class FinishedJob(IngestJob):
    """A source that was fed to the end already (the in-process runtime feeds in the
    calling thread)."""

    def __init__(self, report: IngestReport) -> None:
        self.name = report.source
        self.report = report

    def done(self) -> bool:
        return True

    def progress(self) -> dict[str, Any]:
        return {"source": self.name, "done": True}

    def wait(self, progress: Progress = False, timeout: float | None = None) -> IngestReport:
        return self.report


class SourceJob(IngestJob):
    """A source fed by a source actor on the cluster; its end is long-polled from the
    graph's controller."""

    def __init__(
        self, name: str, actor: Any, controller: ControllerHandle, total: int | None
    ) -> None:
        self.name = name
        self.actor = actor
        self.controller = controller
        self.total = total

    def done(self) -> bool:
        return self.controller.final(self.name, 0.0) is not None

    def progress(self) -> dict[str, Any]:
        if self.done():
            return {"source": self.name, "done": True}
        try:
            return dict(ray.get(self.actor.progress.remote()), done=False)
        except ACTOR_ERRORS:
            return {"source": self.name, "done": False, "waiting": "source actor restarting"}

    def wait(self, progress: Progress = False, timeout: float | None = None) -> IngestReport:
        deadline = None if timeout is None else time.monotonic() + timeout
        with ingest_reporter(progress, self.name, self.total) as bar:
            while True:
                final = self.controller.final(self.name, _POLL)
                if final is not None:
                    break
                state = self.progress()
                bar(state)
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"source {self.name} still running: {state}")
            report = final.report or IngestReport(self.name)
            bar({"read": report.updates})
        if final.error is not None:
            raise final.error
        return report


@dataclass(slots=True)
class SourceFinal:
    """How a source ended: its report (``None``: abandoned before it had one) and the
    error that stopped it, if one did."""

    report: IngestReport | None = None
    error: Exception | None = None


mark_module_api(globals(), public=("IngestJob", "IngestReport"))
