"""A Python client of the gRPC gateway (``chronoray serve``): feed, query, snapshot,
subscribe and analyse a graph from any process that can reach the server -- no Ray needed
there.

>>> import chronoray as cr                                          # doctest: +SKIP
>>> from chronoray.client import GatewayClient                      # doctest: +SKIP
>>> with GatewayClient("127.0.0.1:50051") as client:                # doctest: +SKIP
...     client.ingest(cr.SnapEdgeSource("collegemsg.txt")).acked_through
...     client.stats()["edges"], client.vertex(1)["state"]["out_degree"]
...     for item in client.subscribe(types="TemporalVertex", since=0):
...         print(item.vertex, item.state)
59835
(20296, ...)

Guarantees of :meth:`GatewayClient.ingest`:

* A batch counts as ingested once the server acknowledged it, which it does only after
  the shards logged every record of it.
* Each record carries its ``(source, offset)`` id. When a stream is opened the server says
  after which offset everything of the source is logged; the client sends from the next
  record. A client that was killed, or whose connection or gateway went away, just
  ingests the same source again: nothing is lost, and what the graph already applied is
  skipped (nothing doubled). With ``retry`` seconds, the client reconnects by itself
  while the server is unavailable (a re-readable source: a file, a list).
* A malformed record stops ingestion after every record before it was acknowledged, and
  is raised (:class:`~chronoray.sources.MalformedRecord`).

The token is ``token``, else ``CHRONORAY_GATEWAY_TOKEN``, else the file ``token_file`` or
``CHRONORAY_GATEWAY_TOKEN_FILE``, else ``~/.chronoray/gateway-token`` (what a server on
this machine made). ``tls_ca``: the PEM certificate(s) to trust for a TLS server (``tls=True``
alone: the system's roots). A refused call raises :class:`~chronoray.errors.GatewayError`
with the gRPC status code's name and the server's message; a call refused by the
server's rate limit is made again once the server says it would pass.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa

from chronoray.errors import GatewayError
from chronoray.gateway.arrow_wire import table_of_updates, to_arrow_ipc
from chronoray.gateway.guard import RETRY_AFTER
from chronoray.gateway.settings import client_token
from chronoray.gateway.wire import (
    edges_of,
    notification_of,
    position_of,
    time_of,
    to_position,
    to_record,
    to_value,
    to_vertex_id,
    value_of,
    values_of,
    vertex_of,
)
from chronoray.sources import IterableSource, MalformedRecord, Source, read_columns
from chronoray.v1 import gateway_pb2 as pb
from chronoray.v1 import gateway_pb2_grpc as pbg
from ephemeral.notify import Lagged, Notification, StreamPosition
from vertex.columns import UpdateBatch
from vertex.records import Update, VertexId

__all__ = [
    "AnalysisSummary",
    "GatewayClient",
    "IngestResult",
    "RemoteSubscription",
    "SnapshotFiles",
]

_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED)


def _error(exc: grpc.RpcError) -> GatewayError:
    code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return GatewayError(code.name, details or "")


def _retry_after(exc: grpc.RpcError) -> float | None:
    """Seconds until a call the rate limit refused would pass (``None``: not refused so)."""
    if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    for key, value in exc.trailing_metadata() or ():
        if key == RETRY_AFTER:
            return float(value)
    return None


@dataclass
class IngestResult:
    """What one :meth:`GatewayClient.ingest` did.

    ``resumed_after``: the offset the server said everything was logged through when the
    (last) stream opened; ``acked_through``: the offset of the last acknowledged record;
    ``sent`` records sent (over every connection), ``skipped`` of them found applied
    already by the graph; ``ack_latencies``: seconds from handing each batch to gRPC to
    its acknowledgement."""

    source: str
    sent: int = 0
    batches: int = 0
    skipped: int = 0
    resumed_after: int = 0
    acked_through: int = 0
    reconnects: int = 0
    seconds: float = 0.0
    ack_latencies: list[float] = field(default_factory=list, repr=False)

    @property
    def rate(self) -> float:
        """Records sent per second."""
        return self.sent / self.seconds if self.seconds else 0.0


@dataclass
class SnapshotFiles:
    """A snapshot the server wrote: its metadata and its Parquet files (server paths)."""

    meta: dict[str, Any]
    vertices_path: str
    edges_path: str


@dataclass
class AnalysisSummary:
    """An analysis the server ran: its top rows, small facts and result files."""

    name: str
    description: str
    info: dict[str, Any]
    columns: list[str]
    top: list[tuple[Any, ...]]
    paths: list[str]
    seconds: float


class _Stream:
    """One ingestion stream: the request side runs in gRPC's thread, this side reads
    replies; the first reply (where to resume) gates the records. ``arrow``: batches
    travel as Arrow IPC (``IngestBatch.arrow_ipc``), else as records."""

    def __init__(
        self,
        source: Source,
        batch_size: int,
        window: int | None,
        result: IngestResult,
        arrow: bool = False,
    ) -> None:
        self.source = source
        self.batch_size = batch_size
        self.window = window
        self.result = result
        self.arrow = arrow
        self.opened = threading.Event()
        self.resume_after = 0
        self.cancelled = False
        self.error: MalformedRecord | ValueError | None = None
        self.sent_at: dict[int, float] = {}  # unacknowledged batch number -> when handed over
        self.room = threading.Condition()

    def requests(self) -> Iterator[pb.IngestRequest]:
        yield pb.IngestRequest(open=pb.IngestOpen(source=self.source.name))
        self.opened.wait()
        if self.cancelled:
            return
        batches = self._arrow_batches() if self.arrow else self._record_batches()
        for number, (batch, rows) in enumerate(batches, start=1):
            yield self._batch(number, batch, rows)
            if self.cancelled:
                return

    def _record_batches(self) -> Iterator[tuple[pb.IngestBatch, int]]:
        batch: list[pb.UpdateRecord] = []
        try:
            for update in self.source.read():
                if update.offset <= self.resume_after:
                    continue
                batch.append(to_record(update))
                if len(batch) >= self.batch_size:
                    yield pb.IngestBatch(records=batch), len(batch)
                    batch = []
                if self.cancelled:
                    return
        except MalformedRecord as exc:
            self.error = exc  # everything before it is sent; nothing after it
        if batch:
            yield pb.IngestBatch(records=batch), len(batch)

    def _arrow_batches(self) -> Iterator[tuple[pb.IngestBatch, int]]:
        """Batches of ``batch_size`` rows as Arrow IPC: a file source's column batches
        sliced as they are, single updates (other sources, a file's odd lines) converted
        once, in runs."""
        out = _ArrowBatches(self.batch_size)
        loose: list[Update] = []
        try:
            for item in self._items():
                if isinstance(item, UpdateBatch):
                    if loose:
                        yield from out.add(table_of_updates(loose))
                        loose = []
                    yield from out.add(item.table)
                else:
                    loose.append(item)
                    if len(loose) >= self.batch_size:
                        yield from out.add(table_of_updates(loose))
                        loose = []
                if self.cancelled:
                    return
            if loose:
                yield from out.add(table_of_updates(loose))
        except (MalformedRecord, ValueError) as exc:
            self.error = exc  # everything before it is sent; nothing after it
        yield from out.rest()

    def _items(self) -> Iterator[UpdateBatch | Update]:
        """The source's updates after ``resume_after``, as column batches where it reads
        columns."""
        items, _ = read_columns(self.source)
        resume = self.resume_after
        for item in items:
            if isinstance(item, UpdateBatch):
                if item.last_offset > resume:
                    yield item.after(resume)
            elif item is not None and item.offset > resume:
                yield item

    def _batch(self, number: int, batch: pb.IngestBatch, rows: int) -> pb.IngestRequest:
        """The request of batch ``number``, once the window has room for it."""
        with self.room:
            if self.window is not None:
                self.room.wait_for(lambda: self.cancelled or len(self.sent_at) < self.window)
            self.sent_at[number] = time.perf_counter()
        self.result.sent += rows
        return pb.IngestRequest(batch=batch)

    def replies(self, call: Any, on_ack: Callable[[pb.IngestAck], None] | None) -> None:
        try:
            for reply in call:
                if reply.WhichOneof("response") == "opened":
                    self.resume_after = reply.opened.resume_after
                    self.result.resumed_after = self.resume_after
                    self.opened.set()
                    continue
                ack = reply.ack
                with self.room:
                    handed = self.sent_at.pop(ack.batch, time.perf_counter())
                    self.room.notify_all()
                self.result.ack_latencies.append(time.perf_counter() - handed)
                self.result.batches += 1
                self.result.skipped += ack.skipped
                self.result.acked_through = ack.through_offset
                if on_ack is not None:
                    on_ack(ack)
        finally:
            with self.room:
                self.cancelled = True
                self.room.notify_all()
            self.opened.set()  # a stream refused before it opened: the request side ends


class _ArrowBatches:
    """Cuts record batches into IPC batches of ``size`` rows (one schema each: a piece of
    another schema closes the batch before it)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pending: list[pa.RecordBatch] = []
        self.rows = 0

    def add(self, table: pa.RecordBatch) -> Iterator[tuple[pb.IngestBatch, int]]:
        if self.pending and table.schema != self.pending[0].schema:
            yield self._take()
        start = 0
        while start < table.num_rows:
            take = min(self.size - self.rows, table.num_rows - start)
            self.pending.append(table.slice(start, take))
            self.rows += take
            start += take
            if self.rows >= self.size:
                yield self._take()

    def rest(self) -> Iterator[tuple[pb.IngestBatch, int]]:
        if self.rows:
            yield self._take()

    def _take(self) -> tuple[pb.IngestBatch, int]:
        batch, rows = pb.IngestBatch(arrow_ipc=to_arrow_ipc(self.pending)), self.rows
        self.pending, self.rows = [], 0
        return batch, rows


class RemoteSubscription:
    """A notification stream from the gateway: iterate it for
    :class:`~ephemeral.notify.Notification` s and :class:`~ephemeral.notify.Lagged`
    markers. :attr:`position` is where it stands after what was yielded; subscribe with
    ``resume=position`` to go on from there after the stream broke. Close it when done."""

    def __init__(self, call: Any) -> None:
        self._call = call
        self._replies = iter(call)
        self.position: StreamPosition | None = None
        try:
            first = next(self._replies)
        except grpc.RpcError as exc:
            raise _error(exc) from None
        self.position = position_of(first.started, "started")

    def __iter__(self) -> Iterator[Notification | Lagged]:
        try:
            for event in self._replies:
                if event.WhichOneof("event") == "lagged":
                    yield Lagged(event.lagged.shard, event.lagged.missed)
                    continue
                item = notification_of(event.notification)
                assert self.position is not None
                self.position = self.position.advanced(item)
                yield item
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                raise _error(exc) from None

    def close(self) -> None:
        """End the stream."""
        self._call.cancel()

    def __enter__(self) -> RemoteSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class GatewayClient:
    """A connection to a chronoray gateway at ``address`` (``HOST:PORT``); see the module
    doc for the token and TLS. ``timeout``: seconds a query may take (ingestion and
    subscriptions have none)."""

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        token_file: str | Path | None = None,
        tls_ca: str | Path | None = None,
        tls: bool = False,
        timeout: float = 300.0,
        max_message_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.address = address
        self.timeout = timeout
        options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ]
        if tls or tls_ca is not None:
            roots = Path(tls_ca).read_bytes() if tls_ca is not None else None
            credentials = grpc.ssl_channel_credentials(root_certificates=roots)
            self.channel = grpc.secure_channel(address, credentials, options)
        else:
            self.channel = grpc.insecure_channel(address, options)
        secret = client_token(token, token_file)
        self.metadata = (("authorization", f"Bearer {secret}"),) if secret else ()
        self.stub = pbg.GatewayStub(self.channel)

    def close(self) -> None:
        """Close the connection."""
        self.channel.close()

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unary(self, method: Callable[..., Any], request: Any) -> Any:
        """Call ``method``; a call refused by the server's rate limit is made again when
        the server says it will pass (while :attr:`timeout` allows)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return method(request, metadata=self.metadata, timeout=self.timeout)
            except grpc.RpcError as exc:
                wait = _retry_after(exc)
                if wait is None or time.monotonic() + wait > deadline:
                    raise _error(exc) from None
                time.sleep(wait)

    # -- ingestion --------------------------------------------------------------------

    def ingest(
        self,
        source: Source | Iterable[Update],
        *,
        name: str | None = None,
        batch_size: int = 1000,
        window: int | None = 4,
        retry: float = 0.0,
        on_ack: Callable[[pb.IngestAck], None] | None = None,
        arrow: bool | None = None,
    ) -> IngestResult:
        """Feed ``source`` (a :class:`~chronoray.sources.Source`, or updates with ``name``
        as their source name; unstamped ones are numbered by position) through the
        gateway, ``batch_size`` records per batch, and return once every record is
        acknowledged (logged). ``window``: batches sent ahead of their acknowledgement
        (default 4, the server's default ``ingest_window``: what keeps its pipeline full;
        ``None``: as many as gRPC's flow control lets through -- more queued, longer
        waits for each ack, no more throughput). ``retry``: seconds to keep reconnecting
        while the server is unavailable or the source still busy (the source is read
        again, from where the graph stands). ``on_ack`` gets every acknowledgement as it
        arrives. ``arrow``: send batches as Arrow IPC columns (``True``; updates are
        converted once, here; vertex ids must be ints) or as records (``False``);
        ``None``: columns when the source reads them (the file sources), else records.
        Either way the same guarantees hold and the same updates are applied."""
        if batch_size < 1 or (window is not None and window < 1):
            raise ValueError("batch_size and window must be >= 1")
        if not isinstance(source, Source):
            if name is None:
                raise ValueError("updates need a source name (name=...)")
            if retry and isinstance(source, Iterator):
                raise ValueError("retry= needs a source that can be read again, not an iterator")
            source = IterableSource(source, name)
        if arrow is None:
            arrow = callable(getattr(source, "batches", None))
        result = IngestResult(source.name)
        started = time.perf_counter()
        deadline = started + retry
        while True:
            stream = _Stream(source, batch_size, window, result, arrow)
            call = self.stub.Ingest(stream.requests(), metadata=self.metadata)
            try:
                stream.replies(call, on_ack)
                break
            except grpc.RpcError as exc:
                call.cancel()
                if exc.code() not in _RETRYABLE or time.perf_counter() > deadline:
                    raise _error(exc) from None
                result.reconnects += 1
                time.sleep(0.2)
        result.seconds = time.perf_counter() - started
        if stream.error is not None:
            raise stream.error
        return result

    # -- queries ----------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Vertex and edge totals, per-shard counters (log positions in ``worker_clock``
        and ``applied``) and the gateway's own counters (``gateway``)."""
        reply = self._unary(self.stub.Stats, pb.StatsRequest())
        shards = [
            {
                "shard": s.shard,
                "vertices": s.vertices,
                "edges": s.edges,
                "worker_clock": s.worker_clock,
                "errors": s.errors,
                "restarted": s.restarted,
                "applied": dict(s.applied),
            }
            for s in reply.shards
        ]
        g = reply.gateway
        gateway = {
            "ingest_streams": g.ingest_streams,
            "subscriptions": g.subscriptions,
            "batches": g.batches,
            "records": g.records,
            "held_records": g.held_records,
            "held_records_max": g.held_records_max,
            "arrow_records": g.arrow_records,
        }
        return {
            "graph": reply.graph,
            "vertices": reply.vertices,
            "edges": reply.edges,
            "shards": shards,
            "gateway": gateway,
        }

    def vertex(
        self, vertex: VertexId, at: float | None = None, *, clock: list[int] | None = None
    ) -> dict[str, Any]:
        """Type, clock, time, state and edges of ``vertex`` now, at time ``at`` or at the
        cut within ``clock`` (``GatewayError`` ``NOT_FOUND`` if it did not exist)."""
        request = pb.VertexRequest(vertex=to_vertex_id(vertex), cut=_cut(at, clock))
        return vertex_of(self._unary(self.stub.GetVertex, request))

    def out_edges(
        self, vertex: VertexId, at: float | None = None, *, clock: list[int] | None = None
    ) -> dict[VertexId, dict[str, Any]]:
        """Outgoing edges of ``vertex`` (target -> properties), now or in the past."""
        return self._edges(vertex, pb.OUT, at, clock)

    def in_edges(
        self, vertex: VertexId, at: float | None = None, *, clock: list[int] | None = None
    ) -> dict[VertexId, dict[str, Any]]:
        """Incoming edge records of ``vertex`` (source -> properties)."""
        return self._edges(vertex, pb.IN, at, clock)

    def _edges(
        self, vertex: VertexId, direction: int, at: float | None, clock: list[int] | None
    ) -> dict[VertexId, dict[str, Any]]:
        request = pb.EdgesRequest(
            vertex=to_vertex_id(vertex),
            direction=direction,  # type: ignore[arg-type]
            cut=_cut(at, clock),
        )
        return edges_of(self._unary(self.stub.GetEdges, request).edges)

    def history(
        self, vertex: VertexId, t0: float | None = None, t1: float | None = None
    ) -> list[dict[str, Any]]:
        """Every state ``vertex`` had with time in ``[t0, t1]``, preceded by the one it had
        at ``t0`` (``wc`` 0); edges as counts (``out_edges``, ``in_edges``)."""
        request = pb.HistoryRequest(vertex=to_vertex_id(vertex), t0=t0, t1=t1)
        states = []
        for s in self._unary(self.stub.History, request).states:
            row: dict[str, Any] = {"wc": s.wc, "clock": s.clock, "time": time_of(s.time)}
            if s.deleted:
                row["deleted"] = True
            else:
                row |= {
                    "type": s.type,
                    "state": values_of(s.state),
                    "out_edges": s.out_edges,
                    "in_edges": s.in_edges,
                }
            states.append(row)
        return states

    # -- snapshots and analyses -------------------------------------------------------

    def snapshot(
        self,
        at: float | None = None,
        *,
        clock: list[int] | None = None,
        window: tuple[float, float] | None = None,
    ) -> SnapshotFiles:
        """A snapshot (now, at time ``at``, at the cut within ``clock``, or over
        ``window``) written as Parquet on the server; its metadata and file paths."""
        reply = self._unary(
            self.stub.Snapshot, pb.SnapshotRequest(cut=_snapshot_cut(at, clock, window))
        )
        m = reply.meta
        meta = {
            "kind": m.kind,
            "at": m.at if m.HasField("at") else None,
            "cut": list(m.cut),
            "vertices": m.vertices,
            "edges": m.edges,
            "build_seconds": m.build_seconds,
            "replayed": m.replayed,
            "window": (m.window.t0, m.window.t1) if m.HasField("window") else None,
        }
        return SnapshotFiles(meta, reply.vertices_path, reply.edges_path)

    def analyze(
        self,
        name: str,
        at: float | None = None,
        *,
        clock: list[int] | None = None,
        window: tuple[float, float] | None = None,
        times: list[float] | None = None,
        buckets: int = 0,
        top: int = 10,
        **params: Any,
    ) -> AnalysisSummary:
        """Run the registered analysis ``name`` on a cut (as :meth:`snapshot` takes
        it; ``times``/``buckets`` for series analyses); ``params`` go to the analysis, and
        ``engine=`` (``local``, ``ray``, ``spark``; left out: ``auto``, by size) says where
        it runs (``info["engine"]``/``["engine_reason"]`` of the summary say where it did)."""
        request = pb.AnalyzeRequest(
            name=name,
            cut=_snapshot_cut(at, clock, window),
            times=times or [],
            buckets=buckets,
            params={k: to_value(v) for k, v in params.items()},
            top=top,
        )
        reply = self._unary(self.stub.Analyze, request)
        return AnalysisSummary(
            reply.name,
            reply.description,
            values_of(reply.info),
            list(reply.columns),
            [tuple(value_of(c) for c in row.cells) for row in reply.top],
            list(reply.paths),
            reply.seconds,
        )

    # -- subscriptions ----------------------------------------------------------------

    def subscribe(
        self,
        types: Iterable[str] | str | None = None,
        ids: Iterable[VertexId] | VertexId | None = None,
        predicate: str | None = None,
        *,
        since: float | None = None,
        buffer: int = 0,
        resume: StreamPosition | None = None,
    ) -> RemoteSubscription:
        """A notification stream of vertex updates: of vertex ``types``, of ``ids``,
        passing the registered predicate ``predicate`` (``created``, ``deleted``,
        ``changed``...); ``since``: replay from that time first; ``resume``: go on from a
        broken stream's ``position`` (the same filter)."""
        if isinstance(types, str):
            types = [types]
        if isinstance(ids, (int, str)):
            ids = [ids]
        request = pb.SubscribeRequest(
            types=list(types or []),
            ids=[to_vertex_id(v) for v in ids or []],
            predicate=predicate or "",
            since=since,
            buffer=buffer,
            resume=None if resume is None else to_position(resume),
        )
        return RemoteSubscription(self.stub.Subscribe(request, metadata=self.metadata))

    def health(self, service: str = "") -> str:
        """The server's health status (``SERVING``, ``NOT_SERVING``...) for ``service``
        (``""``: the server; ``chronoray.v1.Gateway``: the graph behind it). Needs no token."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        stub = health_pb2_grpc.HealthStub(self.channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=self.timeout)
        except grpc.RpcError as exc:
            raise _error(exc) from None
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)  # type: ignore[no-any-return]


def _cut(at: float | None, clock: list[int] | None) -> pb.Cut | None:
    if at is not None and clock is not None:
        raise ValueError("give at= or clock=, not both")
    if at is not None:
        return pb.Cut(at=at)
    if clock is not None:
        return pb.Cut(clock=pb.ClockCut(clocks=clock))
    return None


def _snapshot_cut(
    at: float | None, clock: list[int] | None, window: tuple[float, float] | None
) -> pb.SnapshotCut | None:
    if sum(x is not None for x in (at, clock, window)) > 1:
        raise ValueError("give at most one of at=, clock=, window=")
    if window is not None:
        return pb.SnapshotCut(window=pb.Window(t0=window[0], t1=window[1]))
    if at is not None:
        return pb.SnapshotCut(at=at)
    if clock is not None:
        return pb.SnapshotCut(clock=pb.ClockCut(clocks=clock))
    return None
