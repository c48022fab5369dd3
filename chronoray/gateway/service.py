"""The ``chronoray.v1.Gateway`` service: every RPC of the network API, on one graph.

Each handler reads and checks its request completely before it touches the graph: a
wrong field is refused with INVALID_ARGUMENT naming it, and nothing is changed. What the
graph answers maps onto gRPC status codes in one place (:func:`status_of`): an unknown
vertex is NOT_FOUND, a time cut not complete yet FAILED_PRECONDITION, a source that is
feeding already ABORTED, shards or a graph that are gone (or a gateway shutting down)
UNAVAILABLE.

Ingestion is a source like any other: a stream's records go through the graph's own
:class:`~shards.feed.SourceFeed` (:meth:`GraphCluster.feeding`), pipelined. The stream's
reader (a thread of its own) takes each client batch, checks it whole -- fields, resends
(:class:`_SourcePast`), time order against all the stream offered before -- and offers it
to the shards without waiting (``FeedPump.offer``); the handler sends the acknowledgements
in batch order, each once ``FeedPump.wait_logged`` says the shards logged every record of
its batch, after the graph's controller kept its offset. The reader takes a batch only
while fewer than ``ingest_window`` are unacknowledged, so what the server holds per stream
is at most that many batches plus what HTTP/2 flow control lets the client send ahead
(``stream_window_bytes``): a producer faster than the graph waits in gRPC's flow control,
and the server's memory stays bounded. A batch the reader refuses ends the stream after
the batches taken before it are logged and acknowledged; nothing of it, nor after it, is
offered. However a stream ends, its source closes only once all it offered is logged,
and that offset is kept as acknowledged (a reopened stream resumes after it).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import ray

from chronoray.analysis import ANALYSES, ENGINES
from chronoray.errors import GraphNotFound, ShardsUnavailable, SnapshotNotReady, SourceBusy
from chronoray.gateway.arrow_wire import ArrowUpdates, arrow_updates_of
from chronoray.gateway.guard import RateLimiter, client_address
from chronoray.gateway.predicates import PREDICATES
from chronoray.gateway.settings import GatewaySettings
from chronoray.gateway.wire import (
    InvalidField,
    position_of,
    to_edges,
    to_notification,
    to_position,
    to_time,
    to_value,
    to_values,
    to_vertex,
    updates_of,
    values_of,
    vertex_id_of,
)
from chronoray.graph import GraphCluster
from chronoray.ingest import FeedPump
from chronoray.v1 import gateway_pb2 as pb
from chronoray.v1 import gateway_pb2_grpc as pbg
from ephemeral.notify import Lagged, StreamPosition
from shards.core import VertexNotFound, source_channel
from shards.watermark import show_time
from shards.worker import ACTOR_ERRORS
from vertex.columns import UpdateBatch
from vertex.records import Update, VertexId

__all__ = ["GatewayService", "ShuttingDown", "status_of"]

log = logging.getLogger(__name__)

_MAX_SOURCE_NAME = 200
_MAX_BUFFER = 1_000_000
_MAX_TOP = 10_000
_MAX_BUCKETS = 1_000
_POLL = 0.5


class ShuttingDown(RuntimeError):
    """The gateway stops: the client should reconnect and resume."""


_CODES: list[tuple[type[BaseException] | tuple[type[BaseException], ...], grpc.StatusCode]] = [
    (InvalidField, grpc.StatusCode.INVALID_ARGUMENT),
    (VertexNotFound, grpc.StatusCode.NOT_FOUND),
    (SnapshotNotReady, grpc.StatusCode.FAILED_PRECONDITION),
    (SourceBusy, grpc.StatusCode.ABORTED),
    ((ShuttingDown, ShardsUnavailable, GraphNotFound, *ACTOR_ERRORS), grpc.StatusCode.UNAVAILABLE),
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),  # the graph's own argument checks
]


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status code and message a call ending with ``exc`` gets (INTERNAL for what is
    not an answer about the request)."""
    if isinstance(exc, ray.exceptions.RayTaskError) and exc.cause is not None:
        exc = exc.cause  # the error raised in the actor, without Ray's traceback text
    for kinds, code in _CODES:
        if isinstance(exc, kinds):
            text = str(exc) if not isinstance(exc, ACTOR_ERRORS) else "a shard is unavailable"
            return code, text
    return grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}"


class _Counters:
    """The gateway's own counters (see ``GatewayStats`` in the proto), thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.ingest_streams = 0
        self.subscriptions = 0
        self.batches = 0
        self.records = 0
        self.held = 0
        self.held_max = 0
        self.arrow_records = 0

    @contextmanager
    def open(self, kind: str) -> Iterator[None]:
        with self.lock:
            setattr(self, kind, getattr(self, kind) + 1)
        try:
            yield
        finally:
            with self.lock:
                setattr(self, kind, getattr(self, kind) - 1)
                self.lock.notify_all()

    def hold(self, records: int) -> None:
        """``records`` taken by an ingestion stream, until :meth:`release`."""
        with self.lock:
            self.held += records
            self.held_max = max(self.held_max, self.held)

    def release(self, records: int) -> None:
        with self.lock:
            self.held -= records

    def acked(self, records: int, arrow: bool) -> None:
        with self.lock:
            self.batches += 1
            self.records += records
            self.arrow_records += records if arrow else 0

    def wait_closed(self, timeout: float) -> bool:
        """Wait until no stream is open (``False`` if some still are after ``timeout``)."""
        with self.lock:
            return self.lock.wait_for(
                lambda: self.ingest_streams == 0 and self.subscriptions == 0, timeout
            )

    def message(self) -> pb.GatewayStats:
        with self.lock:
            return pb.GatewayStats(
                ingest_streams=self.ingest_streams,
                subscriptions=self.subscriptions,
                batches=self.batches,
                records=self.records,
                held_records=self.held,
                held_records_max=self.held_max,
                arrow_records=self.arrow_records,
            )


class GatewayService(pbg.GatewayServicer):  # type: ignore[misc]
    """The gateway's RPC handlers on ``graph`` (see the module doc)."""

    def __init__(
        self, graph: GraphCluster, settings: GatewaySettings, limiter: RateLimiter | None
    ) -> None:
        self.graph = graph
        self.settings = settings
        self.limiter = limiter
        self.output_dir = Path(settings.output_dir).resolve()
        self.draining = threading.Event()
        """Set when the server stops: streams take no new batch and end after the ones
        they took."""
        self.counters = _Counters()
        self._analysis = threading.Lock()  # one Spark analysis at a time
        self._type_names = sorted(cls.__name__ for cls in graph.types.classes)

    # -- ingestion --------------------------------------------------------------------

    def Ingest(  # noqa: N802 (gRPC's method name)
        self, requests: Iterator[pb.IngestRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.IngestResponse]:
        with _refusals(context), self.counters.open("ingest_streams"):
            opening = next(requests, None)
            if opening is None:
                return
            if opening.WhichOneof("request") != "open":
                raise InvalidField("open", "the first request of a stream opens a source")
            source = _source_name(opening.open.source)
            client = client_address(context)
            with self.graph.feeding(source) as pump:
                past = self._past(source, pump)
                opened = pb.IngestOpened(source=source, resume_after=past.acked)
                yield pb.IngestResponse(opened=opened)
                window = _Window(self.settings.ingest_window)
                reader = threading.Thread(
                    target=self._take_batches,
                    args=(requests, source, past, pump, window, client),
                    name=f"gateway-ingest-{source}",
                    daemon=True,
                )
                reader.start()
                try:
                    while (taken := window.next()) is not None:
                        if taken.fresh:
                            while not pump.wait_logged(taken.last, _POLL):
                                pass
                            # kept before the client is told (a reopen resumes after it)
                            pump.controller.source_acked(source, taken.last)
                        window.acked()
                        self.counters.release(taken.records)
                        self.counters.acked(taken.records, taken.arrow)
                        ack = pb.IngestAck(
                            batch=taken.number,
                            through_offset=taken.last,
                            records=taken.records,
                            skipped=taken.skipped,
                        )
                        yield pb.IngestResponse(ack=ack)
                finally:
                    self.counters.release(window.stop(pump.lock))
                    # all it fed is logged before the source closes (its frontier then
                    # stops holding other sources' updates back), and kept as acknowledged:
                    # a reopened stream resumes after it, even if this one could not tell
                    # its client (a broken connection)
                    while not pump.wait_logged(window.offered, _POLL):
                        pass
                    if window.offered > past.acked:
                        pump.controller.source_acked(source, window.offered)

    def _take_batches(
        self,
        requests: Iterator[pb.IngestRequest],
        source: str,
        past: _SourcePast,
        pump: FeedPump,
        window: _Window,
        client: str,
    ) -> None:
        """The reader of an ingestion stream (a thread of its own): take each batch once
        ``window`` has room, check it and offer it to ``pump`` without waiting for the
        shards; end at the stream's end or at the first failure, which ``window`` keeps
        for the handler (it acknowledges the batches taken before it, then refuses)."""
        last, number = 0, 0
        try:
            while window.room():  # the next request is pulled from gRPC only then
                request = next(requests, None)
                if request is None:
                    return
                number += 1
                if self.draining.is_set():
                    raise ShuttingDown(
                        "the gateway is shutting down: reconnect and send again after "
                        "your last acknowledged batch"
                    )
                updates = self._updates(request, source, last)
                fresh = past.fresh(updates)
                if self.limiter is not None:
                    self.limiter.wait(client)
                last = _last_offset(updates)
                with pump.lock:  # checked against the feed as it is when offered
                    if window.stopped:
                        return
                    _in_order(pump, fresh)
                    skipped = pump.feed.skipped - len(updates) + len(fresh)
                    pump.offer(_feed_items(fresh))
                    self.counters.hold(len(updates))
                    arrow = isinstance(updates, ArrowUpdates)
                    skipped = pump.feed.skipped - skipped
                    window.add(_Taken(number, last, len(updates), skipped, arrow, bool(fresh)))
        except Exception as exc:
            window.fail(exc)
        finally:
            window.end()

    def _past(self, source: str, pump: FeedPump) -> _SourcePast:
        """What ``source`` fed the graph before this stream: the last offset acknowledged
        to its client (kept by the graph's controller), the last offset and the latest
        event time the graph logged of it, over the shards it reached."""
        channel = source_channel(source)
        shards = self.graph.stats().shards
        fed = max((s.applied.get(channel, 0) for s in shards), default=0)
        time = max((s.times.get(channel, -math.inf) for s in shards), default=-math.inf)
        acked = pump.controller.acked(source)
        if acked is None and fed == 0:  # a new source: from now on its acks are kept
            pump.controller.source_acked(source, 0)
            acked = 0
        # fed by something that kept no acks (a file of that name): held to all it fed
        return _SourcePast(fed if acked is None else acked, fed, time)

    def _updates(
        self, request: pb.IngestRequest, source: str, last: int
    ) -> list[Update] | ArrowUpdates:
        """The checked updates of one batch (offsets strictly after ``last``): records,
        or the columns of ``arrow_ipc``."""
        if request.WhichOneof("request") != "batch":
            raise InvalidField("open", "a stream feeds one source: open it once, then send batches")
        records = request.batch.records
        if request.batch.arrow_ipc:
            if records:
                raise InvalidField("batch", "a batch has records or arrow_ipc, not both")
            return arrow_updates_of(
                request.batch.arrow_ipc,
                source,
                "batch.arrow_ipc",
                last,
                self._type_names,
                self.settings.max_batch_records,
                self.settings.max_message_bytes,
            )
        if not records:
            raise InvalidField("batch.records", "an empty batch")
        if len(records) > self.settings.max_batch_records:
            raise InvalidField(
                "batch.records",
                f"{len(records)} records; at most {self.settings.max_batch_records} per batch",
            )
        return updates_of(records, source, "batch.records", last, self._type_names)

    # -- queries ----------------------------------------------------------------------

    def Stats(  # noqa: N802
        self, request: pb.StatsRequest, context: grpc.ServicerContext
    ) -> pb.StatsReply:
        with _refusals(context):
            stats = self.graph.stats()
            shards = [
                pb.ShardStats(
                    shard=s.shard,
                    vertices=s.vertices,
                    edges=s.edges,
                    worker_clock=s.worker_clock,
                    errors=s.errors,
                    restarted=s.restarted,
                    applied=s.applied,
                )
                for s in stats.shards
            ]
            return pb.StatsReply(
                vertices=stats.vertices,
                edges=stats.edges,
                shards=shards,
                graph=self.graph.name or "",
                gateway=self.counters.message(),
            )

    def GetVertex(  # noqa: N802
        self, request: pb.VertexRequest, context: grpc.ServicerContext
    ) -> pb.VertexReply:
        with _refusals(context):
            vertex = vertex_id_of(request.vertex, "vertex")
            return to_vertex(vertex, self._vertex(vertex, request))

    def GetEdges(  # noqa: N802
        self, request: pb.EdgesRequest, context: grpc.ServicerContext
    ) -> pb.EdgesReply:
        with _refusals(context):
            vertex = vertex_id_of(request.vertex, "vertex")
            if request.direction not in (pb.OUT, pb.IN):
                raise InvalidField("direction", "OUT or IN")
            found = self._vertex(vertex, request)
            edges = found["out_edges"] if request.direction == pb.OUT else found["in_edges"]
            return pb.EdgesReply(edges=to_edges(edges))

    def _vertex(self, vertex: VertexId, request: Any) -> dict[str, Any]:
        if not request.HasField("cut"):
            return self.graph.vertex(vertex)
        cut = request.cut
        kind = cut.WhichOneof("cut")
        if kind == "at":
            return self.graph.vertex_state(vertex, at=_finite(cut.at, "cut.at"))
        if kind == "clock":
            return self.graph.vertex_state(vertex, clock=self._clocks(cut.clock, "cut.clock"))
        return self.graph.vertex(vertex)

    def History(  # noqa: N802
        self, request: pb.HistoryRequest, context: grpc.ServicerContext
    ) -> pb.HistoryReply:
        with _refusals(context):
            vertex = vertex_id_of(request.vertex, "vertex")
            t0 = _finite(request.t0, "t0") if request.HasField("t0") else None
            t1 = _finite(request.t1, "t1") if request.HasField("t1") else None
            if t0 is not None and t1 is not None and t0 > t1:
                raise InvalidField("t0", f"{t0} is after t1 {t1}")
            return pb.HistoryReply(
                states=[_history_state(s) for s in self.graph.history(vertex, t0, t1)]
            )

    # -- snapshots and analyses -------------------------------------------------------

    def Snapshot(  # noqa: N802
        self, request: pb.SnapshotRequest, context: grpc.ServicerContext
    ) -> pb.SnapshotReply:
        with _refusals(context):
            cut = self._snapshot_cut(request)
            snap = self.graph.snapshot(**cut)
            vertices, edges = snap.save_parquet(self._output("snapshot"))
            m = snap.meta
            meta = pb.SnapshotMeta(
                kind=m.kind,
                at=m.at,
                cut=m.cut,
                vertices=m.vertices,
                edges=m.edges,
                build_seconds=m.build_seconds,
                replayed=m.replayed,
                window=None if m.window is None else pb.Window(t0=m.window[0], t1=m.window[1]),
            )
            return pb.SnapshotReply(meta=meta, vertices_path=str(vertices), edges_path=str(edges))

    def Analyze(  # noqa: N802
        self, request: pb.AnalyzeRequest, context: grpc.ServicerContext
    ) -> pb.AnalyzeReply:
        with _refusals(context):
            analysis = ANALYSES.get(request.name)
            if analysis is None:
                raise InvalidField(
                    "name", f"unknown analysis {request.name!r}; choose from {', '.join(ANALYSES)}"
                )
            cut = self._snapshot_cut(request)
            times = [_finite(t, f"times[{i}]") for i, t in enumerate(request.times)] or None
            if analysis.series and times is None and "window" not in cut:
                raise InvalidField("times", f"{analysis.name} needs times or a window cut")
            if times is not None and not analysis.series:
                raise InvalidField("times", f"{analysis.name} takes one cut, not times")
            if times is not None and cut:
                raise InvalidField("cut", "give times or a cut, not both")
            if times is not None and times != sorted(times):
                raise InvalidField("times", "cut times must increase")
            buckets = _bounded(request.buckets or 10, "buckets", _MAX_BUCKETS)
            top = _bounded(request.top or 10, "top", _MAX_TOP)
            params = _params(request.params, {**analysis.params, "engine": str})
            _engine(params)
            with self._analysis:
                result = self.graph.analyze(
                    analysis.name, **cut, times=times, buckets=buckets, **params
                )
                paths = result.save(self._output(f"analysis-{analysis.name}"))
                table = result.top(top)
            return pb.AnalyzeReply(
                name=analysis.name,
                description=result.describe(),
                info=to_values(result.info),
                columns=[str(c) for c in table.columns],
                top=[
                    pb.Row(cells=[to_value(v) for v in row])
                    for row in table.itertuples(index=False)
                ],
                paths=[str(p) for p in paths],
                seconds=result.seconds,
            )

    def _snapshot_cut(self, request: Any) -> dict[str, Any]:
        """``GraphCluster.snapshot``'s keyword arguments for a request's ``cut``."""
        if not request.HasField("cut"):
            return {}
        cut = request.cut
        kind = cut.WhichOneof("cut")
        if kind == "at":
            return {"at": _finite(cut.at, "cut.at")}
        if kind == "clock":
            return {"clock": self._clocks(cut.clock, "cut.clock")}
        if kind == "window":
            t0 = _finite(cut.window.t0, "cut.window.t0")
            t1 = _finite(cut.window.t1, "cut.window.t1")
            if t0 > t1:
                raise InvalidField("cut.window", f"t0 {t0} is after t1 {t1}")
            return {"window": (t0, t1)}
        return {}

    def _clocks(self, clock: pb.ClockCut, field: str) -> list[int]:
        if len(clock.clocks) != self.graph.num_shards:
            raise InvalidField(
                f"{field}.clocks",
                f"{len(clock.clocks)} clocks for a graph of {self.graph.num_shards} shards",
            )
        return list(clock.clocks)

    def _output(self, kind: str) -> Path:
        """A new directory for one result, under the configured output directory."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        directory = self.output_dir / f"{kind}-{stamp}-{uuid.uuid4().hex[:8]}"
        directory.mkdir(parents=True)
        return directory

    # -- subscriptions ----------------------------------------------------------------

    def Subscribe(  # noqa: N802
        self, request: pb.SubscribeRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.SubscribeEvent]:
        with _refusals(context), self.counters.open("subscriptions"):
            ids = [vertex_id_of(v, f"ids[{i}]") for i, v in enumerate(request.ids)]
            predicate = None
            if request.predicate:
                predicate = PREDICATES.get(request.predicate)
                if predicate is None:
                    raise InvalidField(
                        "predicate",
                        f"unknown predicate {request.predicate!r} "
                        f"(registered: {', '.join(sorted(PREDICATES))})",
                    )
            since = None
            if request.HasField("since"):
                if math.isnan(request.since) or request.since == math.inf:
                    raise InvalidField("since", f"a time or -inf, got {request.since}")
                since = request.since
            buffer = _bounded(request.buffer or 10_000, "buffer", _MAX_BUFFER)
            resume = self._position(request.resume) if request.HasField("resume") else None
            sub = self.graph.subscribe(
                list(request.types) or None,
                ids or None,
                predicate,
                buffer=buffer,
                since=since,
                resume=resume,
            )
            try:
                yield pb.SubscribeEvent(started=to_position(sub.position))
                while context.is_active() and not self.draining.is_set():
                    for item in sub.poll(timeout=_POLL, max_items=1000):
                        if isinstance(item, Lagged):
                            lagged = pb.Lagged(shard=item.shard, missed=item.missed)
                            yield pb.SubscribeEvent(lagged=lagged)
                        else:
                            yield pb.SubscribeEvent(notification=to_notification(item))
            finally:
                sub.close()
            if self.draining.is_set():
                raise ShuttingDown("the gateway is shutting down: subscribe again with resume")

    def _position(self, message: pb.Position) -> StreamPosition:
        position = position_of(message, "resume")
        clocks = [s.worker_clock for s in self.graph.stats().shards]
        if len(position.after) != len(clocks):
            raise InvalidField(
                "resume", f"a position of {len(position.after)} shards; the graph has {len(clocks)}"
            )
        for k, (start, after) in enumerate(zip(position.start, position.after, strict=True)):
            if max(start, after) > clocks[k]:
                raise InvalidField(
                    f"resume.after[{k}]", f"ahead of shard {k}'s log (worker clock {clocks[k]})"
                )
        return position


# -- helpers --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _SourcePast:
    """A reopened source is held to its own past. ``acked``: the last offset its client
    was told every shard logged (the server acks a batch only once every shard logged its
    part, and keeps the offset with the graph's controller before it tells the client);
    ``fed``: the last offset the graph logged of it on any shard; ``time``: the latest
    event time logged of it.

    A record at or before ``acked`` is a resend, skipped whichever shard it goes to --
    never applied, so a past snapshot cannot change. A record after ``acked`` but at or
    before ``fed`` is one of a batch whose gateway died before every shard logged it:
    each shard skips what it logged of it and applies the rest (nothing of an unfinished
    batch is lost). A later one may not go back before ``time`` (a gateway stream is a
    source in time order)."""

    acked: int
    fed: int
    time: float

    def fresh(self, updates: list[Update] | ArrowUpdates) -> list[Update] | ArrowUpdates:
        """``updates`` after ``acked``; INVALID_ARGUMENT (nothing applied) if one after
        ``fed`` goes back before ``time``."""
        if isinstance(updates, ArrowUpdates):
            return self._fresh_columns(updates)
        fresh = [u for u in updates if u.offset > self.acked]
        for u in fresh:
            if u.offset > self.fed and u.ts < self.time:
                index = updates.index(u)
                raise InvalidField(
                    f"batch.records[{index}].ts",
                    f"time {show_time(u.ts)} of offset {u.offset} is before "
                    f"{show_time(self.time)}, the latest time this source fed before "
                    f"(through offset {self.fed}): a source cannot go back in time",
                )
        return fresh

    def _fresh_columns(self, updates: ArrowUpdates) -> ArrowUpdates:
        """:meth:`fresh` on columns: a slice, one vector comparison."""
        fresh = updates.after(self.acked)
        if not len(fresh):
            return fresh
        offsets, times = fresh.column("offset"), fresh.column("time")
        back = (offsets > self.fed) & (times < self.time)
        if back.any():
            i = int(np.argmax(back))
            raise InvalidField(
                fresh.row(i, "time"),
                f"time {show_time(times[i].item())} of offset {offsets[i]} is before "
                f"{show_time(self.time)}, the latest time this source fed before "
                f"(through offset {self.fed}): a source cannot go back in time",
            )
        return fresh


@dataclass(frozen=True, slots=True)
class _Taken:
    """A client batch the server took: checked and offered to the shards, not
    acknowledged yet. ``fresh``: some of its records were not acknowledged before."""

    number: int
    last: int
    records: int
    skipped: int
    arrow: bool
    fresh: bool


class _Window:
    """The batches one ingestion stream took and has not acknowledged yet, between its
    reader thread, which takes at most ``most`` of them, and its handler, which
    acknowledges them in order once they are logged."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.stopped = False
        """Set by the handler: the reader takes and offers nothing more."""
        self.offered = 0
        """The last offset offered to the shards."""
        self._taken: deque[_Taken] = deque()
        self._ended = False
        self._error: Exception | None = None
        self._changed = threading.Condition()

    def room(self) -> bool:
        """Wait until fewer than ``most`` batches are taken; ``False``: the handler
        stopped."""
        with self._changed:
            self._changed.wait_for(lambda: self.stopped or len(self._taken) < self.most)
            return not self.stopped

    def add(self, taken: _Taken) -> None:
        with self._changed:
            self._taken.append(taken)
            if taken.fresh:
                self.offered = taken.last
            self._changed.notify_all()

    def fail(self, error: Exception) -> None:
        """The reader stopped at ``error``: raised by :meth:`next` after the batches
        taken before it."""
        self._error = error

    def end(self) -> None:
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def next(self) -> _Taken | None:
        """The oldest batch not acknowledged (it stays taken until :meth:`acked`);
        ``None`` once the reader ended and every batch was acknowledged, or the reader's
        failure."""
        with self._changed:
            self._changed.wait_for(lambda: self._taken or self._ended)
            if self._taken:
                return self._taken[0]
            if self._error is not None:
                raise self._error
            return None

    def acked(self) -> None:
        with self._changed:
            self._taken.popleft()
            self._changed.notify_all()

    def stop(self, feeding: threading.RLock) -> int:
        """Stop the reader (taken under the pump's lock ``feeding``, which it holds while
        it offers, so nothing is offered after this returns); the records taken and not
        acknowledged."""
        with feeding, self._changed:
            self.stopped = True
            self._changed.notify_all()
            return sum(t.records for t in self._taken)


@contextmanager
def _refusals(context: grpc.ServicerContext) -> Iterator[None]:
    """End the call with the status :func:`status_of` gives a failure."""
    try:
        yield
    except Exception as exc:
        code, text = status_of(exc)
        if code == grpc.StatusCode.INTERNAL:
            log.exception("gateway call failed")
        context.abort(code, text)


def _in_order(pump: FeedPump, updates: list[Update] | ArrowUpdates) -> None:
    """Refuse the whole batch if one of its records goes back in time (a gateway stream
    is a source in time order), before any of it is applied."""
    if isinstance(updates, ArrowUpdates):
        _in_order_columns(pump, updates)
        return
    refusal = pump.feed.out_of_order(updates)
    if refusal is not None:
        index = next(i for i, u in enumerate(updates) if u.offset == refusal.line)
        raise InvalidField(f"batch.records[{index}].ts", str(refusal))


def _in_order_columns(pump: FeedPump, updates: ArrowUpdates) -> None:
    """:func:`_in_order` on columns. A vector test clears a batch whose times never go
    below the source's watermark nor below a time before them (stricter than the feed's
    rule, which does not weigh rows a resumed source skips); only a batch it does not
    clear is weighed row by row by the feed itself, for the verdict and its words."""
    reorder = pump.feed.reorder
    if not len(updates) or reorder.allowed_lateness is not None:
        return
    times = updates.column("time")
    highest = np.maximum.accumulate(times)
    if times[0] >= reorder.watermark and (times[1:] >= highest[:-1]).all():
        return
    rows = updates.updates()
    refusal = pump.feed.out_of_order(rows)
    if refusal is not None:
        index = next(i for i, u in enumerate(rows) if u.offset == refusal.line)
        raise InvalidField(updates.row(index, "time"), str(refusal))


def _feed_items(updates: list[Update] | ArrowUpdates) -> list[Update] | list[UpdateBatch]:
    """What ``FeedPump.run`` takes for a batch: its updates, or its columns (the feed
    takes them as columns where it can, else row by row); nothing for a batch of resends."""
    if isinstance(updates, ArrowUpdates):
        return [updates.batch] if len(updates) else []
    return updates


def _last_offset(updates: list[Update] | ArrowUpdates) -> int:
    return updates.offset if isinstance(updates, ArrowUpdates) else updates[-1].offset


def _no_tick(read: int) -> None:
    return None


def _source_name(name: str) -> str:
    if not name:
        raise InvalidField("open.source", "a source needs a name")
    if len(name) > _MAX_SOURCE_NAME or not name.isprintable():
        raise InvalidField(
            "open.source", f"at most {_MAX_SOURCE_NAME} printable characters, got {name!r}"
        )
    return name


def _finite(value: float, field: str) -> float:
    if not math.isfinite(value):
        raise InvalidField(field, f"must be a finite time, got {value}")
    return value


def _bounded(value: int, field: str, most: int) -> int:
    if value > most:
        raise InvalidField(field, f"at most {most}, got {value}")
    return value


def _params(given: Any, accepted: Any) -> dict[str, Any]:
    """An analysis' parameters, each checked against the types it declares."""
    params = values_of(given, "params", sent=True)
    for name, value in params.items():
        kind = accepted.get(name)
        if kind is None:
            takes = ", ".join(sorted(accepted)) or "none"
            raise InvalidField(f"params[{name!r}]", f"not a parameter of it (it takes: {takes})")
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            params[name] = float(value)
        elif not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            raise InvalidField(f"params[{name!r}]", f"must be a {kind.__name__}, got {value!r}")
    return params


def _engine(params: dict[str, Any]) -> None:
    """Check the ``engine`` parameter every analysis takes (where it runs; left out:
    ``auto``, by size)."""
    engine = params.get("engine", "auto")
    if engine not in ("auto", *ENGINES):
        choices = ", ".join(("auto", *ENGINES))
        raise InvalidField("params['engine']", f"one of {choices}, got {engine!r}")


def _history_state(state: dict[str, Any]) -> pb.HistoryState:
    if state.get("deleted"):
        return pb.HistoryState(
            wc=state["wc"], clock=state["clock"], time=to_time(state["time"]), deleted=True
        )
    return pb.HistoryState(
        wc=state["wc"] or 0,
        clock=state["clock"],
        time=to_time(state["time"]),
        type=state["type"],
        state=to_values(state["state"]),
        out_edges=len(state["out_edges"]),
        in_edges=len(state["in_edges"]),
    )
