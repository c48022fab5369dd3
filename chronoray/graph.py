"""``GraphCluster``: the driver-side handle of a live graph on Ray.

It starts (or joins) Ray, creates one ``ShardWorker`` actor per shard -- each with its own
RocksDB log under ``log_dir`` -- feeds updates from sources, and answers queries.

Guarantees:

* An update counts as ingested once the shard hosting it acknowledged it, i.e. logged it.
  :meth:`GraphCluster.ingest` returns after every update was acknowledged and every
  message it caused was processed (the graph is idle).
* A shard actor whose process dies is restarted by Ray on the same node (its log is
  there), rebuilds its vertices from its log, and the source resends what was not
  acknowledged; the ``(source, offset)`` id of each update makes the resend idempotent,
  so nothing is lost and nothing is applied twice. Ingesting the same source again is a
  no-op for the same reason.
* A malformed record stops ingestion with :class:`~chronoray.sources.MalformedRecord`
  (file, line, text) after everything before it was applied; nothing after it is.
* Reopening a ``log_dir`` (:meth:`GraphCluster.open`) recovers the graph from its logs.
"""

from __future__ import annotations

import importlib
import json
import math
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from chronoray.config import Config
from chronoray.sources import IterableSource, Source, read_updates
from ephemeral.computation import Computation
from ephemeral.host import LiveHost
from ephemeral.live import (
    Index,
    LiveComputation,
    RayBackend,
    Subscription,
    start_computation,
    subscribe,
)
from ephemeral.notify import NotificationFilter, StatePredicate
from shards.core import Batch, VertexNotFound
from shards.routing import shard_of
from shards.worker import ACTOR_ERRORS, ShardWorker, shard_actor_name
from snapshot.reconstruct import consistent_bound
from snapshot.retro import vertex_history, vertex_state_at
from snapshot.snapshot import Snapshot, SnapshotMeta, build_snapshot, read_log
from vertex.model import Vertex, VertexTypes
from vertex.records import Update, VertexId

if TYPE_CHECKING:
    from chronoray.analysis import AnalysisResult

__all__ = [
    "GraphCluster",
    "IngestReport",
    "GraphStats",
    "SnapshotNotReady",
    "VertexNotFound",
    "ensure_ray",
]

MANIFEST = "chronoray.json"
_NAMESPACE = "chronoray"


def ensure_ray(config: Config) -> None:
    """Start a local Ray instance (or join ``config.ray_address``) unless one is running."""
    if ray.is_initialized():
        return
    if config.ray_address:
        ray.init(address=config.ray_address, namespace=_NAMESPACE, log_to_driver=False)
    else:
        ray.init(
            address="local",  # a new instance, even if a `ray start` cluster is around
            num_cpus=config.num_cpus,
            object_store_memory=config.object_store_memory,
            include_dashboard=False,
            namespace=_NAMESPACE,
            log_to_driver=False,
        )


class SnapshotNotReady(RuntimeError):
    """A time cut was asked for a time whose updates are not all logged yet."""


@dataclass
class IngestReport:
    """What one :meth:`GraphCluster.ingest` did."""

    source: str
    updates: int = 0
    rejected: int = 0
    batches: int = 0
    resent_batches: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        """Updates per second."""
        return self.updates / self.seconds if self.seconds else 0.0


@dataclass
class GraphStats:
    """Vertex and edge totals, and per-shard counters."""

    vertices: int
    edges: int
    shards: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"vertices": self.vertices, "edges": self.edges, "shards": self.shards}


class GraphCluster:
    """A live, event-sourced graph: ``num_shards`` shard actors with RocksDB logs.

    >>> import chronoray as cr                                  # doctest: +SKIP
    >>> with cr.GraphCluster(num_shards=2, log_dir="logs") as g:  # doctest: +SKIP
    ...     g.ingest(cr.SnapEdgeSource("collegemsg.txt"))
    ...     g.stats().edges
    20296

    ``vertex_types`` are the vertex classes the graph knows; ``default_vertex`` (default:
    the first of them, else :class:`~vertex.model.TemporalVertex`) is used for vertices
    created implicitly. Classes are recorded by import path in the log directory, so
    :meth:`open` finds them again (classes defined in ``__main__`` must be passed again).
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        vertex_types: list[type[Vertex]] | None = None,
        default_vertex: type[Vertex] | None = None,
        **overrides: Any,
    ) -> None:
        base = config or Config.load()
        given = {k: v for k, v in overrides.items() if v is not None}
        self.config = base.replace(**given) if given else base
        self.log_dir = Path(self.config.log_dir).resolve()
        self.types = VertexTypes(vertex_types, default_vertex)
        self._write_or_check_manifest()
        ensure_ray(self.config)
        self.graph_id = uuid.uuid4().hex[:10]
        node = self._node_id = ray.get_runtime_context().get_node_id()
        actor_cls = ray.remote(ShardWorker)
        self._shards = [
            actor_cls.options(
                name=shard_actor_name(self.graph_id, k),
                namespace=_NAMESPACE,
                max_restarts=-1,
                max_task_retries=0,
                max_concurrency=1000,
                num_cpus=self.config.shard_num_cpus,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(
                self.graph_id,
                k,
                self.config.num_shards,
                str(self.log_dir / f"shard-{k}"),
                self.types,
                checkpoint_interval=self.config.checkpoint_interval,
                shard_checkpoint_interval=self.config.shard_checkpoint_interval,
                sync=self.config.sync,
                max_pending=self.config.max_pending,
                host_factory=LiveHost,
            )
            for k in range(self.config.num_shards)
        ]
        self._sent: dict[tuple[str, int], int] = {}
        self._feeder: _Feeder | None = None
        self._closed = False
        ray.get([s.ping.remote() for s in self._shards])

    @classmethod
    def open(
        cls,
        log_dir: str | Path,
        *,
        vertex_types: list[type[Vertex]] | None = None,
        **overrides: Any,
    ) -> GraphCluster:
        """Reopen the graph persisted in ``log_dir``: every shard recovers from its log.

        Its shard count and vertex classes come from the directory's manifest.
        """
        manifest_path = Path(log_dir) / MANIFEST
        if not manifest_path.exists():
            raise FileNotFoundError(f"{log_dir} holds no chronoray graph ({MANIFEST} missing)")
        manifest = json.loads(manifest_path.read_text())
        classes = vertex_types or [_import_class(p) for p in manifest["vertex_types"]]
        default = next((c for c in classes if c.type_name == manifest["default_vertex"]), None)
        if overrides.get("num_shards") is None:
            overrides["num_shards"] = manifest["num_shards"]
        return cls(
            Config.load(log_dir=str(log_dir), **overrides),
            vertex_types=classes,
            default_vertex=default,
        )

    # -- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> GraphCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every shard's log and stop the shard actors (the logs stay on disk)."""
        if self._closed:
            return
        self._closed = True
        try:
            ray.get([s.close.remote() for s in self._shards])
        except ACTOR_ERRORS:
            pass  # a shard process that is gone has released its log already
        finally:
            for shard in self._shards:
                ray.kill(shard, no_restart=True)

    @property
    def num_shards(self) -> int:
        """Number of shard actors."""
        return self.config.num_shards

    @property
    def shards(self) -> list[Any]:
        """The shard actor handles (for tests and tools)."""
        return list(self._shards)

    # -- ingestion --------------------------------------------------------------------

    def ingest(
        self,
        source: Source | Iterable[Update],
        *,
        name: str | None = None,
        on_error: Literal["raise", "skip"] = "raise",
        rejects: str | Path | None = None,
        progress: bool | Callable[[int], None] = False,
        total: int | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Feed ``source`` into the graph and wait until the graph is idle.

        Updates go in batches of ``batch_size`` per shard with at most ``max_inflight``
        unacknowledged batches per shard. ``progress=True`` draws a progress bar (``total``:
        expected updates); a callable gets the running update count instead. ``on_batch``
        is called with the number of batches sent so far after each send (tests use it to
        inject faults). Batches a dead shard did not acknowledge are resent once it is back.

        A plain iterable of updates gets ``name`` as its source name; without one, a fresh
        name, so two different lists never pass for the same source. Give a name to make
        ingesting the same list again a no-op.
        """
        if not isinstance(source, Source):
            source = IterableSource(source, name or f"iterable-{uuid.uuid4().hex[:12]}")
        if progress is True and total is None and isinstance(getattr(source, "path", None), Path):
            total = _count_lines(source.path)  # type: ignore[attr-defined]
        updates, read_stats = read_updates(source, on_error=on_error, rejects=rejects)
        report = IngestReport(source=source.name)
        started = time.perf_counter()
        with _progress(progress, total, source.name) as tick:
            feeder = self._feeder = _Feeder(self, report, on_batch)
            self._broadcast_frontier(-math.inf, reset=True)
            try:
                for update in updates:
                    feeder.add(update)
                    report.updates += 1
                    if report.updates % 1000 == 0:
                        tick(report.updates)
            finally:  # also at a malformed record: what came before it is applied in full
                self._feeder = None
                feeder.finish()
                report.rejected = read_stats.rejected
                tick(report.updates)
                self._broadcast_frontier(math.inf)
                self.wait_idle()
        report.seconds = time.perf_counter() - started
        return report

    def _broadcast_frontier(self, t: float, *, reset: bool = False) -> None:
        _retrying(lambda: ray.get([s.set_frontier.remote(t, reset) for s in self._shards]))

    def wait_idle(self, timeout: float | None = None) -> None:
        """Block until no message is pending anywhere: two consecutive rounds of shard
        stats show empty outboxes (live computations' messages included) and unchanged
        worker clocks and computation-message counters."""
        deadline = None if timeout is None else time.monotonic() + timeout
        previous: list[tuple[int, int]] | None = None
        while True:
            stats = self._all_stats()
            clocks = [(s["worker_clock"], s["side_processed"]) for s in stats]
            idle = all(s["pending"] == 0 and s["side_pending"] == 0 for s in stats)
            if idle and clocks == previous:
                return
            previous = clocks
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("graph still busy")

    # -- queries ----------------------------------------------------------------------

    def _shard(self, vertex_id: VertexId) -> Any:
        return self._shards[shard_of(vertex_id, self.num_shards)]

    def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """Type, clock, event time, state, out- and in-edges of ``vertex_id``.

        Raises :class:`VertexNotFound` for an unknown id.
        """
        return ray.get(self._shard(vertex_id).vertex.remote(vertex_id))  # type: ignore[no-any-return]

    def out_edges(self, vertex_id: VertexId) -> dict[VertexId, dict[str, Any]]:
        """Outgoing edges of ``vertex_id`` (target -> properties)."""
        return self.vertex(vertex_id)["out_edges"]  # type: ignore[no-any-return]

    def in_edges(self, vertex_id: VertexId) -> dict[VertexId, dict[str, Any]]:
        """Incoming edge records of ``vertex_id`` (source -> properties)."""
        return self.vertex(vertex_id)["in_edges"]  # type: ignore[no-any-return]

    def stats(self) -> GraphStats:
        """Vertex and edge totals and per-shard counters."""
        shards = self._all_stats()
        return GraphStats(
            vertices=sum(s["vertices"] for s in shards),
            edges=sum(s["edges"] for s in shards),
            shards=shards,
        )

    def edges(self) -> Iterator[tuple[VertexId, VertexId, dict[str, Any]]]:
        """Every edge as ``(src, dst, props)``, shard by shard."""
        for part in ray.get([s.edges.remote() for s in self._shards]):
            yield from part

    def degrees(self) -> dict[VertexId, tuple[int, int]]:
        """``vertex -> (out_degree, in_degree)`` for the whole graph."""
        parts = ray.get([s.degrees.remote() for s in self._shards])
        return {v: (o, i) for part in parts for v, o, i in part}

    def errors(self) -> list[tuple[int, int, VertexId, str]]:
        """Recent failed behaviors as ``(shard, worker clock, vertex, error)``."""
        parts = ray.get([s.recent_errors.remote() for s in self._shards])
        return [(k, wc, v, e) for k, part in enumerate(parts) for wc, v, e in part]

    def _all_stats(self, pending_time: bool = False) -> list[dict[str, Any]]:
        return _retrying(lambda: ray.get([s.stats.remote(pending_time) for s in self._shards]))

    # -- time travel ------------------------------------------------------------------

    def shard_log_path(self, shard: int) -> str:
        """The directory of shard ``shard``'s RocksDB log (on the node :attr:`log_node_id`)."""
        return str(self.log_dir / f"shard-{shard}")

    @property
    def log_node_id(self) -> str:
        """The Ray node holding the logs: tasks that read them are pinned there."""
        return self._node_id

    def snapshot(
        self,
        at: float | None = None,
        *,
        clock: list[int] | tuple[int, ...] | None = None,
        window: tuple[float, float] | None = None,
        timeout: float = 120.0,
    ) -> Snapshot:
        """A consistent past graph, rebuilt from the logs in parallel (one task per shard).

        ``at=T``: every effect of updates with time ``<= T`` (waits, up to ``timeout``
        seconds, until all of them are logged; raises :class:`SnapshotNotReady` if the
        source has not read past ``T`` yet). ``clock=vector``: the largest consistent cut
        within that vector of shard worker clocks. ``window=(t0, t1)``: the graph at
        ``t1`` restricted to what changed in ``[t0, t1]``, edges with ``window_count``.
        No argument: the current graph, as a consistent cut of the worker clocks now.
        """
        if sum(x is not None for x in (at, clock, window)) > 1:
            raise ValueError("give at most one of at=, clock=, window=")
        paths = [self.shard_log_path(k) for k in range(self.num_shards)]
        if clock is not None:
            cut = tuple(int(c) for c in clock)
            if len(cut) != self.num_shards:
                raise ValueError(f"clock needs {self.num_shards} components, got {len(cut)}")
            meta = SnapshotMeta("clock", clock=list(cut))
            return build_snapshot(paths, self._node_id, meta, clock=cut)
        if window is not None:
            t0, t1 = window
            if t0 > t1:
                raise ValueError(f"window start {t0} is after its end {t1}")
            self.wait_until_complete(t1, timeout)
            meta = SnapshotMeta("window", at=t1, window=(t0, t1))
            return build_snapshot(paths, self._node_id, meta, at=t1, since=t0)
        if at is not None:
            self.wait_until_complete(at, timeout)
            return build_snapshot(paths, self._node_id, SnapshotMeta("time", at=at), at=at)
        now = tuple(s["worker_clock"] for s in self._all_stats())
        meta = SnapshotMeta("now", clock=list(now))
        return build_snapshot(paths, self._node_id, meta, clock=now)

    def vertex_state(
        self,
        vertex_id: VertexId,
        at: float | None = None,
        *,
        clock: list[int] | tuple[int, ...] | None = None,
    ) -> dict[str, Any]:
        """The state of ``vertex_id`` at time ``at`` or at the consistent cut within
        ``clock`` (neither: now), read from its shard's log. :class:`VertexNotFound` if it
        did not exist then."""
        shard = shard_of(vertex_id, self.num_shards)
        path = self.shard_log_path(shard)
        if clock is not None:
            bound = read_log(path, self._node_id, consistent_bound, shard, tuple(clock))
            found = read_log(path, self._node_id, vertex_state_at, vertex_id, bound=bound)
        elif at is not None:
            self.wait_until_complete(at, 120.0)
            found = read_log(path, self._node_id, vertex_state_at, vertex_id, at=at)
        else:
            return self.vertex(vertex_id)
        if found is None:
            raise VertexNotFound(vertex_id)
        return found  # type: ignore[no-any-return]

    def history(
        self, vertex_id: VertexId, t0: float | None = None, t1: float | None = None
    ) -> list[dict[str, Any]]:
        """Every state of ``vertex_id`` with time in ``[t0, t1]`` (with its clock, time and
        shard worker clock), preceded by the state it had at ``t0``."""
        shard = shard_of(vertex_id, self.num_shards)
        lo = -math.inf if t0 is None else t0
        hi = math.inf if t1 is None else t1
        if t1 is not None:
            self.wait_until_complete(t1, 120.0)
        states = read_log(
            self.shard_log_path(shard), self._node_id, vertex_history, vertex_id, lo, hi
        )
        if not states:
            raise VertexNotFound(vertex_id)
        return states  # type: ignore[no-any-return]

    # -- Spark ------------------------------------------------------------------------

    def spark(self) -> Any:
        """The process's Spark session, its executors Ray actors in this Ray cluster (RayDP),
        sized by ``Config.spark_*`` when it starts; reused afterwards, stopped at exit."""
        from spark_bridge.session import spark_session

        c = self.config
        return spark_session(
            executors=c.spark_executors,
            executor_cores=c.spark_executor_cores,
            executor_memory=c.spark_executor_memory,
            shuffle_partitions=c.spark_shuffle_partitions,
        )

    def analyze(
        self,
        name: str,
        at: float | None = None,
        *,
        clock: list[int] | tuple[int, ...] | None = None,
        window: tuple[float, float] | None = None,
        times: list[float] | None = None,
        buckets: int = 10,
        **params: Any,
    ) -> AnalysisResult:
        """Run a Spark analysis (``pagerank``, ``wcc``, ``degrees``, ``triangles``,
        ``activity``) on a snapshot taken as :meth:`snapshot` takes it (``at=``, ``clock=``,
        ``window=``, or now); ``params`` go to the analysis (e.g. ``weight="count"``).

        ``activity`` compares time cuts: at ``times``, or at the edges of ``buckets`` equal
        buckets of ``window``. The result keeps the Spark DataFrame (``.frame``) and gives
        ``.to_pandas()``, ``.top(k)`` and ``.save(dir)`` (Parquet and a PNG).
        """
        from chronoray.analysis import run_analysis

        if name == "activity":
            if times is None:
                if window is None:
                    raise ValueError("activity needs times=[...] or window=(t0, t1)")
                t0, t1 = window
                times = [t0 + (t1 - t0) * i / buckets for i in range(buckets)] + [t1]
            snapshots: Any = [self.snapshot(at=t) for t in times]
        else:
            if times is not None:
                raise ValueError(f"times= is for activity; {name} analyses one snapshot")
            snapshots = self.snapshot(at, clock=clock, window=window)
        return run_analysis(self.spark(), name, snapshots, **params)

    def wait_until_complete(self, t: float, timeout: float = 120.0) -> None:
        """Return once every update with time ``<= t`` and every message it caused is
        logged: the source read past ``t``, shards applied every batch holding such an
        update, and no shard holds an unacknowledged message of time ``<= t``. Raises
        :class:`SnapshotNotReady` if that is still not so after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        feeder = self._feeder
        while True:
            if feeder is not None:
                if not feeder.ordered:
                    raise SnapshotNotReady(
                        "the source being ingested is not in time order; a time snapshot "
                        "can only be taken once ingestion ended"
                    )
                if feeder.max_ts <= t:
                    raise SnapshotNotReady(
                        f"time {t} is not complete: the source has only read up to "
                        f"{feeder.max_ts}; take it later or after ingestion"
                    )
                feeder.send_buffered(t)
            stats = self._all_stats(pending_time=True)
            complete = all(s["min_pending_time"] > t for s in stats)
            if feeder is not None:
                complete = complete and feeder.applied_through(t, stats)
            if complete:
                return
            if time.monotonic() > deadline:
                raise SnapshotNotReady(f"time {t} still incomplete after {timeout} s")

    # -- live computations, notification streams, indexes -----------------------------

    @property
    def _live(self) -> RayBackend:
        return RayBackend(self._shards, self.wait_idle)

    def start_computation(self, computation: Computation, id: str | None = None) -> LiveComputation:
        """Register an ephemeral computation on the running graph and return its handle.

        It activates at once on every vertex that matches and later on every vertex
        created afterwards, runs as the graph changes, is never logged (the logs are the
        same with or without it), and is queryable while it runs (``.result()``,
        ``.values()``, ``.value(v)``) until ``.stop()``. Its state is in the shards'
        memory: a shard that crashes and restarts comes back without it -- stop it and
        start it again. ``id`` defaults to a fresh one.
        """
        return start_computation(self._live, computation, id)

    def computation(self, id: str, computation: Computation) -> LiveComputation:
        """A handle on the running computation ``id`` (``computation``: the object it
        was started with, which turns shard results into the aggregated result)."""
        return LiveComputation(self._live, id, computation)

    def subscribe(
        self,
        types: Iterable[str] | str | None = None,
        ids: Iterable[VertexId] | VertexId | None = None,
        predicate: StatePredicate | None = None,
        *,
        buffer: int = 10_000,
        since: float | None = None,
    ) -> Subscription:
        """A notification stream of vertex updates: all of them, or only of vertex
        ``types``, of vertex ``ids``, and/or those where ``predicate(old_state,
        new_state)`` holds. Per vertex in log order; each shard buffers at most ``buffer``
        items per subscription and tells a slow consumer how many it missed
        (``Lagged``). ``since=T`` replays from the logs every update with event time
        ``>= T`` first, then continues live. Close it when done."""
        spec = NotificationFilter.of(types, ids, predicate)
        return subscribe(self._live, spec, buffer, since)

    def index(self, name: str) -> Index:
        """The secondary index ``name`` declared by a vertex class (``indexes`` class
        attribute): ``.lookup(key)`` and ``.range(lo, hi)`` return vertex ids."""
        names = {n for cls in self.types.classes for n in (getattr(cls, "indexes", None) or {})}
        if name not in names:
            declared = ", ".join(sorted(names)) or "none"
            raise KeyError(f"no index {name!r} (declared by the vertex classes: {declared})")
        return Index(self._live, name)

    # -- manifest ---------------------------------------------------------------------

    def _write_or_check_manifest(self) -> None:
        path = self.log_dir / MANIFEST
        if path.exists():
            found = json.loads(path.read_text())["num_shards"]
            if found != self.config.num_shards:
                raise ValueError(
                    f"{self.log_dir} holds a graph of {found} shards; "
                    f"it cannot be opened with num_shards={self.config.num_shards}"
                )
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        manifest = {
            "format": 1,
            "num_shards": self.config.num_shards,
            "vertex_types": [f"{c.__module__}:{c.__qualname__}" for c in self.types.classes],
            "default_vertex": self.types.default_name,
        }
        path.write_text(json.dumps(manifest, indent=2) + "\n")


class _Feeder:
    """Routes updates into per-shard batches and keeps them until acknowledged."""

    def __init__(
        self, graph: GraphCluster, report: IngestReport, on_batch: Callable[[int], None] | None
    ) -> None:
        self.graph = graph
        self.report = report
        self.on_batch = on_batch
        n = graph.num_shards
        self.buffers: list[list[Update]] = [[] for _ in range(n)]
        self.inflight: list[deque[tuple[Batch, Any]]] = [deque() for _ in range(n)]
        self.unconfirmed: list[list[Batch]] = [[] for _ in range(n)]
        self.acked = [0] * n
        # (last offset, min time) of batches not yet seen applied, per shard
        self.open_batches: list[deque[tuple[int, float]]] = [deque() for _ in range(n)]
        self.max_ts = -math.inf
        self.ordered = True
        self._notify = True
        self._frontier = -math.inf

    def add(self, update: Update) -> None:
        if update.ts < self.max_ts:
            self.ordered = False
        else:
            self.max_ts = update.ts
        shard = shard_of(update.vertex, self.graph.num_shards)
        buffer = self.buffers[shard]
        buffer.append(update)
        if len(buffer) >= self.graph.config.batch_size:
            self._send(shard)

    def finish(self) -> None:
        """Send what is buffered and wait for every acknowledgement."""
        for shard in range(self.graph.num_shards):
            if self.buffers[shard]:
                self._send(shard)
        for shard in range(self.graph.num_shards):
            self._settle(shard, 0)
            if any(b.items[-1][0] > self.acked[shard] for b in self.unconfirmed[shard]):
                self._resend(shard)

    def _send(self, shard: int) -> None:
        updates = self.buffers[shard]
        self.buffers[shard] = []
        key = (updates[0].source, shard)
        batch = Batch.of_updates(updates, prev=self.graph._sent.get(key, 0))
        self.graph._sent[key] = updates[-1].offset
        self.inflight[shard].append((batch, self.graph._shards[shard].push.remote(batch)))
        self.open_batches[shard].append((updates[-1].offset, min(u.ts for u in updates)))
        self.report.batches += 1
        if self.on_batch is not None and self._notify:
            self._notify = False  # a callback that takes a snapshot must not re-enter it
            try:
                self.on_batch(self.report.batches)
            finally:
                self._notify = True
        self._settle(shard, self.graph.config.max_inflight)
        self._advance_frontier()

    def _advance_frontier(self) -> None:
        """Tell the shards the time up to which every update read so far was applied."""
        unapplied = [u.ts for buffer in self.buffers for u in buffer]
        for shard, batches in enumerate(self.open_batches):
            while batches and batches[0][0] <= self.acked[shard]:
                batches.popleft()
            unapplied += [min_ts for _, min_ts in batches]
        frontier = min(unapplied, default=self.max_ts)
        if frontier > self._frontier:
            self._frontier = frontier
            for actor in self.graph._shards:
                actor.set_frontier.remote(frontier)

    def send_buffered(self, t: float) -> None:
        """Send every buffered batch holding an update of time ``<= t``."""
        for shard, buffer in enumerate(self.buffers):
            if buffer and min(u.ts for u in buffer) <= t:
                notify, self._notify = self._notify, False
                try:
                    self._send(shard)
                finally:
                    self._notify = notify

    def applied_through(self, t: float, stats: list[dict[str, Any]]) -> bool:
        """Whether the shards (per ``stats``) applied every sent update of time ``<= t``."""
        channel = f"src:{self.report.source}"
        for shard, batches in enumerate(self.open_batches):
            applied = stats[shard]["applied"].get(channel, 0)
            while batches and batches[0][0] <= applied:
                batches.popleft()
            if any(min_ts <= t for _, min_ts in batches):
                return False
        return True

    def _settle(self, shard: int, keep: int) -> None:
        inflight = self.inflight[shard]
        while len(inflight) > keep:
            batch, ref = inflight[0]
            try:
                applied, _ = ray.get(ref)
            except ACTOR_ERRORS:
                self._resend(shard)
                continue
            inflight.popleft()
            self.acked[shard] = max(self.acked[shard], applied)
            if applied < batch.items[-1][0]:  # overtaken by a later batch: wait for it
                self.unconfirmed[shard].append(batch)
            self.unconfirmed[shard] = [
                b for b in self.unconfirmed[shard] if b.items[-1][0] > self.acked[shard]
            ]

    def _resend(self, shard: int) -> None:
        """Resend every unacknowledged batch of ``shard``, in order, once it is back."""
        pending = self.unconfirmed[shard] + [b for b, _ in self.inflight[shard]]
        pending.sort(key=lambda b: b.prev)
        self.inflight[shard].clear()
        self.unconfirmed[shard] = []
        actor = self.graph._shards[shard]
        # a restarted shard forgot the frontier: hold its messages again until told more
        _retrying(lambda: ray.get(actor.set_frontier.remote(self._frontier, True)))
        for batch in pending:
            if batch.items[-1][0] <= self.acked[shard]:
                continue
            applied, _ = _retrying(lambda b=batch: ray.get(actor.push.remote(b)))
            self.acked[shard] = max(self.acked[shard], applied)
            self.report.resent_batches += 1


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _retrying(call: Callable[[], Any], attempts: int = 600) -> Any:
    """Run ``call``; while the actor is dead or restarting, wait for Ray to bring it back."""
    for attempt in range(attempts):
        try:
            return call()
        except ACTOR_ERRORS:
            if attempt == attempts - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


def _import_class(path: str) -> type[Vertex]:
    module_name, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f"vertex class {path} recorded in the log directory cannot be imported ({exc}); "
            "pass vertex_types= to GraphCluster.open"
        ) from exc
    return obj  # type: ignore[no-any-return]


class _NullProgress:
    def __enter__(self) -> Callable[[int], None]:
        return lambda n: None

    def __exit__(self, *exc: object) -> None:
        return None


class _RichProgress:
    def __init__(self, total: int | None, name: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]ingest[/] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("updates"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        self.task = self.progress.add_task(name, total=total)

    def __enter__(self) -> Callable[[int], None]:
        self.progress.start()
        return lambda n: self.progress.update(self.task, completed=n)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


class _CallbackProgress:
    def __init__(self, callback: Callable[[int], None]) -> None:
        self.callback = callback

    def __enter__(self) -> Callable[[int], None]:
        return self.callback

    def __exit__(self, *exc: object) -> None:
        return None


def _progress(
    progress: bool | Callable[[int], None], total: int | None, name: str
) -> _NullProgress | _RichProgress | _CallbackProgress:
    if callable(progress):
        return _CallbackProgress(progress)
    return _RichProgress(total, name) if progress else _NullProgress()
