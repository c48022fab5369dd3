"""``GraphCluster``: the driver-side handle of a live graph on Ray.

A graph is a set of Ray actors: one ``ShardWorker`` per shard (each with its own RocksDB
log under ``log_dir`` on its node), the graph's ``GraphController``, and one
``SourceActor`` per source feeding it. This class is a facade over the modules that own
each part: :mod:`chronoray.connect` (which cluster), :mod:`chronoray.placement` (which
node), :mod:`chronoray.manifest` (what the graph is), :mod:`chronoray.ingest` and
:mod:`shards.feed` (feeding), :mod:`chronoray.controller` (sources, frontier, names).

A graph is either private to the process that made it (``GraphCluster(...)``,
``GraphCluster.open(log_dir)``: ``close()`` stops it) or *named* and detached
(``GraphCluster.create(name, ...)``): it lives in the cluster in its own namespace,
outlives its creator, any driver or job can :meth:`~GraphCluster.attach` to it, ``close()``
only detaches and :meth:`~GraphCluster.shutdown` stops it (the logs stay).

Guarantees:

* An update counts as ingested once the shard hosting it acknowledged it, i.e. logged it.
  :meth:`GraphCluster.ingest` (``wait=True``) returns after every update was
  acknowledged and every message it caused was processed (the graph is idle).
* A shard actor whose process dies is restarted by Ray -- with ``storage="local"`` only
  on the node holding its log, with ``"shared"`` anywhere -- rebuilds its vertices from its
  log, and the source resends what was not acknowledged; the ``(source, offset)`` id of
  each update makes the resend idempotent, so nothing is lost and nothing is applied
  twice. Ingesting the same source again is a no-op for the same reason. A source actor
  that dies is restarted and resumes from what the shards logged.
* A malformed record stops ingestion with :class:`~chronoray.sources.MalformedRecord`
  (file, line, text) after everything before it was applied; nothing after it is.
* Reopening a ``log_dir`` (:meth:`GraphCluster.open`) recovers the graph from its logs.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from chronoray.config import Config
from chronoray.connect import ensure_ray
from chronoray.controller import CONTROLLER_NAME, graph_namespace, named_graphs
from chronoray.deploy import Deployment, deploy, shard_log_path, stop
from chronoray.errors import (
    GraphExists,
    GraphNotFound,
    LogDirInUse,
    ShardsUnavailable,
    SnapshotNotReady,
    SourceBusy,
    SourceMismatch,
)
from chronoray.ingest import (
    FeedPump,
    IngestJob,
    IngestReport,
    SourceActor,
    count_lines,
    feed_options,
    feed_source,
    ingest_reporter,
)
from chronoray.manifest import Manifest
from chronoray.placement import alive_nodes
from chronoray.sources import IterableSource, SortedSource, Source
from ephemeral.computation import Computation
from ephemeral.live import (
    Index,
    LiveComputation,
    RayBackend,
    Subscription,
    start_computation,
    subscribe,
)
from ephemeral.notify import NotificationFilter, StatePredicate, StreamPosition
from shards.core import VertexNotFound, source_channel
from shards.progress import Progress
from shards.protocol import ShardStats
from shards.routing import shard_of
from shards.watermark import LatePolicy
from shards.worker import ACTOR_ERRORS
from snapshot.reconstruct import consistent_bound
from snapshot.retro import vertex_history, vertex_state_at
from snapshot.snapshot import Snapshot, SnapshotMeta, build_snapshot, read_log
from vertex.model import Vertex, VertexTypes
from vertex.records import Update, VertexId

if TYPE_CHECKING:
    from chronoray.analysis import AnalysisResult
    from chronoray.spark_source import SparkIngestJob, SparkIngestReport

__all__ = [
    "GraphCluster",
    "GraphExists",
    "GraphNotFound",
    "GraphStats",
    "GraphStatus",
    "IngestJob",
    "IngestReport",
    "LogDirInUse",
    "ShardsUnavailable",
    "SnapshotNotReady",
    "SourceBusy",
    "SourceMismatch",
    "VertexNotFound",
]


@dataclass
class GraphStats:
    """Vertex and edge totals, per-shard counters (:class:`~shards.protocol.ShardStats`),
    and per source name what its last ingestion read and its event-time counters
    (``out_of_order``, ``max_lateness``, ``late_rejected``, ``late_applied``)."""

    vertices: int
    edges: int
    shards: list[ShardStats] = field(default_factory=list)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "vertices": self.vertices,
            "edges": self.edges,
            "shards": [s.as_dict() for s in self.shards],
            "sources": self.sources,
        }


@dataclass
class GraphStatus:
    """Where each shard is and whether it answers; what each source is doing."""

    name: str | None
    storage: str
    shards: list[dict[str, Any]]
    sources: dict[str, dict[str, Any]]

    @property
    def missing(self) -> list[dict[str, Any]]:
        """Shards that do not answer."""
        return [s for s in self.shards if not s["answering"]]

    def describe(self) -> list[str]:
        """One line per shard that does not answer and per source that waits."""
        lines = []
        for s in self.missing:
            where = "in the cluster" if s["node_alive"] else "not in the cluster"
            lines.append(
                f"shard {s['shard']} unavailable: its log is on node {s['node']}, which is "
                f"{where}" + ("; it comes back when that node does" if not s["node_alive"] else "")
            )
        for name, state in self.sources.items():
            if state.get("waiting"):
                lines.append(f"source {name}: {state['waiting']}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "storage": self.storage,
            "shards": self.shards,
            "sources": self.sources,
            "problems": self.describe(),
        }


_IDLE_POLL = 1.0  # seconds a shard waits for quiet before it answers anyway


def _recorded(manifest: Manifest, overrides: dict[str, Any]) -> None:
    """A reopened graph keeps its recorded shard count, storage and placement unless
    they are given (a different shard count is then refused)."""
    for name in ("num_shards", "storage", "placement"):
        if overrides.get(name) is None:
            overrides[name] = getattr(manifest, name)


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
    ``name`` makes a detached named graph (see :meth:`create`). ``storage``,
    ``placement`` and the rest are :class:`~chronoray.config.Config` fields.
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        vertex_types: list[type[Vertex]] | None = None,
        default_vertex: type[Vertex] | None = None,
        name: str | None = None,
        **overrides: Any,
    ) -> None:
        base = config or Config.load()
        given = {k: v for k, v in overrides.items() if v is not None}
        self.config = base.replace(**given) if given else base
        self.name = name
        self.log_dir = Path(self.config.log_dir).resolve()
        manifest = self._manifest(vertex_types, default_vertex)
        ensure_ray(self.config)
        self.graph_id = uuid.uuid4().hex[:10]
        self._deployment = deploy(
            self.config, self.log_dir, manifest, self._types, name, self.graph_id
        )
        self.manifest = manifest
        self._setup(self._deployment, owner=name is None)

    def _setup(self, deployment: Deployment, *, owner: bool) -> None:
        self.namespace = deployment.namespace
        self._controller_name = deployment.controller_name
        self._controller = deployment.controller
        self._shards = deployment.shards
        self._owner = owner  # close() stops a private graph, detaches from a named one
        self._pumps: dict[str, FeedPump] = {}
        self._closed = False

    # -- construction -----------------------------------------------------------------

    def _manifest(
        self, vertex_types: list[type[Vertex]] | None, default_vertex: type[Vertex] | None
    ) -> Manifest:
        c = self.config
        if Manifest.exists(self.log_dir):
            manifest = Manifest.read(self.log_dir)
            manifest.check_shards(c.num_shards, self.log_dir)
            self._types = (
                VertexTypes(vertex_types, default_vertex)
                if vertex_types
                else manifest.types(vertex_types)
            )
            manifest.storage, manifest.placement = c.storage, c.placement  # type: ignore[assignment]
            manifest.name = self.name
            return manifest
        self._types = VertexTypes(vertex_types, default_vertex)
        return Manifest.of(c.num_shards, self.types, c.storage, c.placement, self.name)  # type: ignore[arg-type]

    @classmethod
    def create(
        cls,
        name: str,
        config: Config | None = None,
        *,
        vertex_types: list[type[Vertex]] | None = None,
        default_vertex: type[Vertex] | None = None,
        **overrides: Any,
    ) -> GraphCluster:
        """Start the detached graph ``name`` in the cluster (its own namespace), new or
        reopened from ``log_dir``. It runs until :meth:`shutdown` (or ``chronoray stop``),
        whatever happens to this process; :class:`GraphExists` if the name is taken."""
        if not name or "/" in name:
            raise ValueError(f"a graph name must be non-empty without '/', got {name!r}")
        log_dir = overrides.get("log_dir") or (config or Config.load()).log_dir
        if Manifest.exists(log_dir):
            _recorded(Manifest.read(log_dir), overrides)
        return cls(
            config,
            vertex_types=vertex_types,
            default_vertex=default_vertex,
            name=name,
            **overrides,
        )

    @classmethod
    def attach(cls, name: str, config: Config | None = None) -> GraphCluster:
        """A handle on the running named graph ``name`` (from any driver or job of the
        cluster); :class:`GraphNotFound` if there is none. ``close()`` detaches."""
        config = config or Config.load()
        ensure_ray(config)
        try:
            controller = ray.get_actor(CONTROLLER_NAME, namespace=graph_namespace(name))
        except ValueError:
            running = ", ".join(named_graphs()) or "none"
            raise GraphNotFound(
                f"no graph named {name!r} in the Ray cluster (running: {running})"
            ) from None
        info = ray.get(controller.info.remote())
        graph = cls.__new__(cls)
        graph.config = Config(**info["config"])
        graph.name = name
        graph.log_dir = Path(info["log_dir"])
        graph.manifest = Manifest(**info["manifest"])
        graph._types = None
        graph.graph_id = info["graph_id"]
        graph._deployment = Deployment(
            graph.graph_id, info["namespace"], CONTROLLER_NAME, controller, info["shards"]
        )
        graph._setup(graph._deployment, owner=False)
        return graph

    @staticmethod
    def running(config: Config | None = None) -> list[str]:
        """Names of the named graphs running in the cluster."""
        ensure_ray(config or Config.load())
        return named_graphs()

    @classmethod
    def open(
        cls,
        log_dir: str | Path,
        *,
        vertex_types: list[type[Vertex]] | None = None,
        config: Config | None = None,
        **overrides: Any,
    ) -> GraphCluster:
        """Reopen the graph persisted in ``log_dir``: every shard recovers from its log.

        Its shard count and vertex classes come from the directory's manifest.
        """
        manifest = Manifest.read(log_dir)
        _recorded(manifest, overrides)
        types = manifest.types(vertex_types)
        given = {k: v for k, v in overrides.items() if v is not None}
        return cls(
            (config or Config.load()).replace(log_dir=str(log_dir), **given),
            vertex_types=types.classes,
            default_vertex=types.default,
        )

    # -- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> GraphCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the graph: a private graph is stopped (:meth:`shutdown`), a named
        one keeps running for other drivers (this handle is done)."""
        if self._closed:
            return
        if self._owner:
            self.shutdown()
        self._closed = True

    def shutdown(self) -> None:
        """Stop the graph's sources, close every shard's log and stop its actors (the
        logs stay on disk; :meth:`open` or :meth:`create` reopens them)."""
        self._closed = True
        stop(self._deployment)

    @property
    def types(self) -> VertexTypes:
        """The graph's vertex classes (imported from the manifest's record when attached)."""
        if self._types is None:
            self._types = self.manifest.types()
        return self._types

    @property
    def num_shards(self) -> int:
        """Number of shard actors."""
        return self.config.num_shards

    @property
    def shards(self) -> list[Any]:
        """The shard actor handles (for tests and tools)."""
        return list(self._shards)

    def status(self, timeout: float = 2.0) -> GraphStatus:
        """Where each shard's log is, whether its node is alive and the shard answers
        (within ``timeout``), and each source's progress (what it waits for)."""
        alive = {n.key for n in alive_nodes()}
        pings = [s.ping.remote() for s in self._shards]
        ready, _ = ray.wait(pings, num_returns=len(pings), timeout=timeout)
        shards = []
        for k, ref in enumerate(pings):
            answering = False
            if ref in ready:
                try:
                    ray.get(ref)
                    answering = True
                except ACTOR_ERRORS:
                    pass
            key = self.manifest.shard_nodes[k]
            shards.append(
                {"shard": k, "node": key, "node_alive": key in alive, "answering": answering}
            )
        sources: dict[str, dict[str, Any]] = {}
        for source, actor in ray.get(self._controller.sources.remote()).items():
            if actor is None:
                pump = self._pumps.get(source)
                sources[source] = pump.progress() if pump else {"fed from": "another driver"}
                continue
            try:
                sources[source] = ray.get(actor.progress.remote(), timeout=timeout)
            except (*ACTOR_ERRORS, ray.exceptions.GetTimeoutError):
                sources[source] = {"waiting": "source actor restarting"}
        return GraphStatus(self.name, self.config.storage, shards, sources)

    # -- ingestion --------------------------------------------------------------------

    def ingest(
        self,
        source: Source | Iterable[Update],
        *,
        name: str | None = None,
        on_error: Literal["raise", "skip"] = "raise",
        rejects: str | Path | None = None,
        progress: Progress = False,
        total: int | None = None,
        wait: bool = True,
        in_driver: bool = False,
        on_batch: Callable[[int], None] | None = None,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        sort: bool = False,
        idle_timeout: float = 0.0,
    ) -> Any:
        """Feed ``source`` into the graph.

        By default a source actor on the cluster reads it (on this driver's node, where
        its file is), batches it (``batch_size`` updates per shard, at most
        ``max_inflight`` unacknowledged batches per shard) and survives a crash of its own
        process. ``wait=False`` returns an :class:`~chronoray.ingest.IngestJob` at once;
        otherwise this waits until every update is acknowledged and the graph is idle and
        returns the :class:`~chronoray.ingest.IngestReport` (``progress=True`` draws a
        bar, ``total``: expected updates; a callable gets the count of updates read).

        **Event time.** A source must be in time order: a file that is not is refused
        (:class:`~shards.watermark.OutOfOrder`, naming its first line going back) before
        anything of it is applied, an iterable at that update (after what preceded it).
        ``sort=True`` sorts the source by time first, outside memory. ``allowed_lateness``
        (seconds) instead reorders updates behind a watermark -- the latest time read
        minus it -- and ``late`` says what becomes of updates later than that:
        ``"reject"`` (counted in the report and written to ``rejects`` with their line and
        lateness) or ``"apply"`` (applied at the watermark, keeping their own event time
        in the log). A source joining a graph that holds later updates from other sources
        cannot go back before them: such updates are late too. A source that reads nothing
        for ``idle_timeout`` seconds (default
        :data:`~chronoray.ingest.DEFAULT_IDLE_TIMEOUT`) stops holding the graph's
        watermark back: its own catches up with the other sources'.

        Several sources at once: :meth:`ingest_many`.

        ``in_driver=True`` feeds from this process instead (``on_batch`` is then called
        with the number of batches sent after each send; tests inject faults with it). A
        one-shot iterator (a generator) is always fed from the driver: it cannot be
        shipped to, nor re-read by, a restarted source actor.

        A plain iterable of updates gets ``name`` as its source name; without one, a fresh
        name, so two different lists never pass for the same source. Give a name to make
        ingesting the same list again a no-op.
        """
        options = {"allowed_lateness": allowed_lateness, "late": late, "idle_timeout": idle_timeout}
        if not isinstance(source, Source):
            in_driver = in_driver or isinstance(source, Iterator)
            source = IterableSource(source, name or f"iterable-{uuid.uuid4().hex[:12]}")
        if on_batch is not None and not in_driver:
            raise ValueError("on_batch= needs in_driver=True")
        if sort:
            source = SortedSource(source)
        path = getattr(source, "path", None)
        if progress is True and total is None and isinstance(path, Path):
            total = count_lines(path)
        reject_path = None if rejects is None else str(Path(rejects).resolve())
        self._open_sources([source.name])
        feed = feed_options(source, halves=self.types.stream_edges, **options)  # type: ignore[arg-type]
        if in_driver:
            return self._ingest_here(source, on_error, reject_path, progress, total, on_batch, feed)
        job = self._start_source(source, on_error, reject_path, total, feed)
        if not wait:
            return job
        report = job.wait(progress)
        self.wait_idle()
        return report

    def ingest_many(
        self,
        items: list[Source | Iterable[Update]],
        *,
        on_error: Literal["raise", "skip"] = "raise",
        rejects: str | Path | None = None,
        progress: Progress = False,
        wait: bool = True,
        in_driver: bool = False,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        sort: bool = False,
        idle_timeout: float = 0.0,
    ) -> list[Any]:
        """Feed several sources at once (files, iterables), with the options of
        :meth:`ingest`; returns their reports (or, ``wait=False``, their jobs).

        They open together, before any of them sends: the graph's watermark is the
        minimum over them, and the shards merge their updates by event time -- every
        vertex sees them in time order, whatever the sources' relative speed. Each runs
        in a source actor of its own (one-shot iterators, or ``in_driver=True``, in a
        thread of this driver)."""
        options = {"allowed_lateness": allowed_lateness, "late": late, "idle_timeout": idle_timeout}
        sources: list[Source] = []
        here: list[bool] = []
        for item in items:
            if isinstance(item, Source):
                src, driver = item, in_driver
            else:
                src = IterableSource(item, f"iterable-{uuid.uuid4().hex[:12]}")
                driver = in_driver or isinstance(item, Iterator)
            sources.append(SortedSource(src) if sort else src)
            here.append(driver)
        if len({s.name for s in sources}) < len(sources):
            raise ValueError("several sources at once need distinct names")
        if any(here) and not wait:
            raise ValueError("sources fed from the driver need wait=True")
        reject_path = None if rejects is None else str(Path(rejects).resolve())
        self._open_sources([s.name for s in sources])
        halves = self.types.stream_edges
        feeds = [feed_options(s, halves=halves, **options) for s in sources]
        jobs = [
            None if driver else self._start_source(src, on_error, reject_path, None, feed)
            for src, driver, feed in zip(sources, here, feeds, strict=True)
        ]
        if not wait:
            return jobs
        with ThreadPoolExecutor(max(1, len(sources))) as pool:
            futures = [
                pool.submit(self._ingest_here, src, on_error, reject_path, False, None, None, feed)
                if driver
                else pool.submit(job.wait, progress)  # type: ignore[union-attr]
                for src, driver, feed, job in zip(sources, here, feeds, jobs, strict=True)
            ]
            reports = [f.result() for f in futures]
        self.wait_idle()
        return reports

    def _open_sources(self, names: list[str]) -> None:
        """Register sources ``names`` with the controller, all before any of them sends;
        a name already feeding is refused (:class:`SourceBusy`) and nothing is opened."""
        opened: list[str] = []
        for name in names:
            if not ray.get(self._controller.open_source.remote(name)):
                for done in opened:
                    ray.get(self._controller.close_source.remote(done, {"report": None}))
                raise SourceBusy(f"source {name!r} is already feeding this graph")
            opened.append(name)

    def _start_source(
        self,
        source: Source,
        on_error: Literal["raise", "skip"],
        rejects: str | None,
        total: int | None,
        options: dict[str, Any],
    ) -> IngestJob:
        """The source actor feeding ``source``, on this driver's node."""
        c = self.config
        actor = (
            ray.remote(SourceActor)
            .options(
                num_cpus=0,
                max_restarts=-1,
                max_concurrency=8,
                namespace=self.namespace,
                scheduling_strategy=NodeAffinitySchedulingStrategy(
                    ray.get_runtime_context().get_node_id(), soft=False
                ),
                **({"lifetime": "detached"} if self.name is not None else {}),
            )
            .remote(
                source,
                (self.graph_id, self.namespace, self._controller_name, self.num_shards),
                c.batch_size,
                c.max_inflight,
                on_error,
                rejects,
                options,
            )
        )
        ray.get(self._controller.source_actor.remote(source.name, actor))
        return IngestJob(source.name, actor, self._controller, total)

    def ingest_spark(
        self,
        frame: Any,
        *,
        src: str,
        dst: str | None,
        time: str,
        kind: str | None = None,
        props: Sequence[str] | Mapping[str, str] | None = None,
        source: str,
        ids: Literal["int", "str"] | None = None,
        parts: int | None = None,
        on_error: Literal["raise", "skip"] = "raise",
        rejects: str | Path | None = None,
        progress: Progress = False,
        wait: bool = True,
    ) -> SparkIngestReport | SparkIngestJob:
        """Feed a Spark DataFrame (of this process's RayDP session, :meth:`spark`) into the
        graph, one row per update, through the Ray object store -- never a file.

        ``src``, ``dst``, ``time`` name the columns of an edge's source, target and event
        time; ``kind`` a column of update kinds (``add_edge``, ``remove_edge``,
        ``add_vertex``...; default: every row adds an edge); ``props`` the property
        columns (a list, or ``{property: column}``); ``ids`` forces ``int`` or ``str``
        vertex ids. Spark checks every row (null or non-integer ids, null, non-numeric,
        NaN, infinite or negative times, unknown kinds): with ``on_error="raise"`` a bad
        row refuses the whole ingest before anything is applied
        (:class:`~chronoray.sources.MalformedRecord` naming its position in the
        DataFrame); with ``"skip"`` bad rows are counted and appended to the Parquet
        table ``rejects`` with their position and reason.

        Spark then splits the rows into ``parts`` (default: one per shard) by the shard of
        their source vertex and sorts each by time; one source actor per part feeds it
        (in parallel, each a disjoint set of vertices in time order, so time cuts are
        exact). A row's id is ``(source[part/parts fingerprint], rank in its part)``:
        the same rows ingested again under ``source`` -- in any order -- are applied
        once; other rows under a used name are refused
        (:class:`~chronoray.errors.SourceMismatch`). Returns the
        :class:`~chronoray.spark_source.SparkIngestReport` once every row is applied and
        the graph is idle (``progress=True`` draws a bar fed by the source actors), or
        with ``wait=False`` a :class:`~chronoray.spark_source.SparkIngestJob` at once
        (this process owns the rows in the object store: keep it until the job ends).
        """
        from chronoray.spark_source import start_spark_ingest
        from spark_bridge.ingest import UpdateColumns

        columns = UpdateColumns.of(src, dst, time, kind, props, ids)
        job = start_spark_ingest(
            self,
            frame,
            columns,
            active=ray.get(self._controller.sources.remote()),
            source=source,
            parts=parts or self.num_shards,
            on_error=on_error,
            rejects=None if rejects is None else str(Path(rejects).resolve()),
        )
        if not wait:
            return job
        report = job.wait(progress)
        self.wait_idle()
        return report

    def _ingest_here(
        self,
        source: Source,
        on_error: Literal["raise", "skip"],
        rejects: str | None,
        progress: Progress,
        total: int | None,
        on_batch: Callable[[int], None] | None,
        options: dict[str, Any],
    ) -> IngestReport:
        final: dict[str, Any] = {"report": None, "error": None}
        with self.feeding(source.name, final, opened=True, **options) as pump:
            pump.on_batch = on_batch
            with ingest_reporter(progress, source.name, total) as bar:
                report, error = feed_source(
                    pump, source, on_error, rejects, lambda n: bar(dict(pump.progress(), read=n))
                )
            final["report"] = report.as_dict()
        self.wait_idle()
        if error is not None:
            raise error
        return report

    @contextmanager
    def feeding(
        self,
        name: str,
        final: dict[str, Any] | None = None,
        *,
        opened: bool = False,
        **options: Any,
    ) -> Iterator[FeedPump]:
        """Feed source ``name`` from this process (the gRPC gateway feeds its streams this
        way): the source is registered with the graph's controller (:class:`SourceBusy`
        if a source of that name is feeding already; ``opened``: it was, with others),
        and the :class:`~chronoray.ingest.FeedPump` yielded skips every update the shards
        applied already. ``pump.run(updates, tick)`` returns once all of ``updates`` are
        logged; it can be called again with the next ones (``end=True``: the last). Its
        updates must come in time order, and not before what other sources fed already
        (:class:`~shards.watermark.OutOfOrder`), unless ``options`` (those of
        :func:`~chronoray.ingest.feed_options`) say otherwise. Meanwhile a time snapshot
        through this handle asks the pump how far the source has read. On exit the source
        is closed (its frontier no longer holds messages back) with ``final`` as its
        report."""
        if not opened:
            self._open_sources([name])
        pump: FeedPump | None = None
        try:
            c = self.config
            floor = ray.get(self._controller.source_floor.remote(name))
            options = {"halves": self.types.stream_edges, **options}
            pump = FeedPump.resume(
                name,
                self._shards,
                self._controller,
                c.batch_size,
                c.max_inflight,
                floor=floor,
                **options,
            )
            self._pumps[name] = pump
            yield pump
        finally:  # closed first: a time cut never sees it active without its pump
            if pump is not None:
                pump.close()
            report = final if final is not None else {"report": None, "error": None}
            ray.get(self._controller.close_source.remote(name, report))
            self._pumps.pop(name, None)

    def wait_idle(self, timeout: float | None = None) -> None:
        """Block until no message is pending anywhere: two rounds in a row in which every
        shard answers quiet -- empty outboxes, live computations' messages included --
        with unchanged worker clocks and computation-message counters. Each shard waits
        for its own quiet (a long poll): the driver does not spin."""
        deadline = None if timeout is None else time.monotonic() + timeout
        previous: list[tuple[int, int]] | None = None
        while True:
            left = _IDLE_POLL if deadline is None else deadline - time.monotonic()
            wait = max(0.0, min(left, _IDLE_POLL))
            answers = self._from_shards(lambda s: s.wait_quiet.remote(wait))  # noqa: B023
            clocks = [(a.worker_clock, a.side_processed) for a in answers]
            if all(a.quiet for a in answers):
                if clocks == previous:
                    return
                previous = clocks
            else:
                previous = None
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
            vertices=sum(s.vertices for s in shards),
            edges=sum(s.edges for s in shards),
            shards=shards,
            sources=ray.get(self._controller.summary.remote()),
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

    def _all_stats(self) -> list[ShardStats]:
        """Every shard's stats (waiting for restarting shards)."""
        return self._from_shards(lambda s: s.stats.remote())

    def _from_shards(self, call: Callable[[Any], Any]) -> list[Any]:
        """``call(shard)`` on every shard, waiting up to 30 s for restarting shards; then
        :class:`ShardsUnavailable` saying which shard waits for which node."""
        try:
            return _retrying(  # type: ignore[no-any-return]
                lambda: ray.get([call(s) for s in self._shards]), 300
            )
        except ACTOR_ERRORS:
            problems = "; ".join(self.status().describe()) or "a shard does not answer"
            raise ShardsUnavailable(problems) from None

    # -- time travel ------------------------------------------------------------------

    def shard_log_path(self, shard: int) -> str:
        """The directory of shard ``shard``'s RocksDB log (on its node; see
        :meth:`shard_node_ids`)."""
        return shard_log_path(self.log_dir, shard)

    def shard_node_ids(self) -> list[str]:
        """The Ray node each shard runs on now (tasks reading its log go there); waits
        for a restarting shard."""
        return _retrying(lambda: ray.get([s.node.remote() for s in self._shards]))  # type: ignore[no-any-return]

    @property
    def log_node_id(self) -> str:
        """The node holding every log, for graphs whose shards share one node; graphs
        spread over nodes have one per shard (:meth:`shard_node_ids`)."""
        nodes = set(self.shard_node_ids())
        if len(nodes) != 1:
            raise RuntimeError("the shards' logs are on several nodes: use shard_node_ids()")
        return nodes.pop()

    def read_logs(
        self, function: Callable[..., Any], args: dict[int, tuple[Any, ...]]
    ) -> dict[int, Any]:
        """``function(store, *args[k])`` against a read-only handle of shard ``k``'s log,
        for every ``k`` in ``args``, in parallel tasks on the shards' nodes."""
        nodes = self.shard_node_ids()
        with ThreadPoolExecutor(max(1, len(args))) as pool:
            futures = {
                k: pool.submit(read_log, self.shard_log_path(k), nodes[k], function, *a)
                for k, a in args.items()
            }
            return {k: f.result() for k, f in futures.items()}

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
            return build_snapshot(paths, self.shard_node_ids(), meta, clock=cut)
        if window is not None:
            t0, t1 = window
            if t0 > t1:
                raise ValueError(f"window start {t0} is after its end {t1}")
            self.wait_until_complete(t1, timeout)
            meta = SnapshotMeta("window", at=t1, window=(t0, t1))
            return build_snapshot(paths, self.shard_node_ids(), meta, at=t1, since=t0)
        if at is not None:
            self.wait_until_complete(at, timeout)
            meta = SnapshotMeta("time", at=at)
            return build_snapshot(paths, self.shard_node_ids(), meta, at=at)
        now = tuple(s.worker_clock for s in self._all_stats())
        meta = SnapshotMeta("now", clock=list(now))
        return build_snapshot(paths, self.shard_node_ids(), meta, clock=now)

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
        node = self.shard_node_ids()[shard]
        if clock is not None:
            bound = read_log(path, node, consistent_bound, shard, tuple(clock))
            found = read_log(path, node, vertex_state_at, vertex_id, bound=bound)
        elif at is not None:
            self.wait_until_complete(at, 120.0)
            found = read_log(path, node, vertex_state_at, vertex_id, at=at)
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
        node = self.shard_node_ids()[shard]
        states = read_log(self.shard_log_path(shard), node, vertex_history, vertex_id, lo, hi)
        if not states:
            raise VertexNotFound(vertex_id)
        return states  # type: ignore[no-any-return]

    # -- Spark ------------------------------------------------------------------------

    def spark(self) -> Any:
        """The process's Spark session, its executors Ray actors in this Ray cluster (RayDP),
        sized by ``Config.spark_*`` when it starts; reused afterwards, stopped at exit. The
        JVM's own output goes to the driver log (:func:`~chronoray.connect.driver_log_path`)."""
        from chronoray.connect import driver_log_path, quiet_ray_logs
        from spark_bridge.session import spark_session

        quiet_ray_logs(data=True)
        c = self.config
        return spark_session(
            executors=c.spark_executors,
            executor_cores=c.spark_executor_cores,
            executor_memory=c.spark_executor_memory,
            shuffle_partitions=c.spark_shuffle_partitions,
            log_file=driver_log_path(),
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
        """Run a registered Spark analysis (:data:`chronoray.analysis.ANALYSES`:
        ``pagerank``, ``wcc``, ``degrees``, ``triangles``, ``activity``) on a snapshot taken
        as :meth:`snapshot` takes it (``at=``, ``clock=``, ``window=``, or now); ``params``
        go to the analysis (e.g. ``weight="count"``).

        A series analysis (``activity``) compares time cuts: at ``times``, or at the edges
        of ``buckets`` equal buckets of ``window``. The result keeps the Spark DataFrame
        (``.frame``) and gives ``.to_pandas()``, ``.top(k)`` and ``.save(dir)`` (Parquet and
        a PNG).
        """
        from chronoray.analysis import ANALYSES, run_analysis

        if name not in ANALYSES:
            raise ValueError(f"unknown analysis {name!r}; choose from {', '.join(ANALYSES)}")
        if ANALYSES[name].series:
            if times is None:
                if window is None:
                    raise ValueError(f"{name} needs times=[...] or window=(t0, t1)")
                t0, t1 = window
                times = [t0 + (t1 - t0) * i / buckets for i in range(buckets)] + [t1]
            snapshots: Any = [self.snapshot(at=t) for t in times]
        else:
            if times is not None:
                raise ValueError(f"times= is for series analyses; {name} analyses one snapshot")
            snapshots = self.snapshot(at, clock=clock, window=window)
        return run_analysis(self.spark(), name, snapshots, **params)

    def wait_until_complete(self, t: float, timeout: float = 120.0) -> None:
        """Return once every update with time ``<= t`` and every message it caused is
        logged: every source feeding the graph read past ``t`` and its batches holding
        such updates were applied, and no shard holds an unacknowledged message of time
        ``<= t`` (each waited for on the shard: a long poll). Raises
        :class:`SnapshotNotReady` if a source has not read past ``t`` (or is not in time
        order, or is fed by another driver), or if that is still not so after ``timeout``
        seconds."""
        deadline = time.monotonic() + timeout
        while True:
            waiting: dict[tuple[str, int], int] = {}
            for name, actor in ray.get(self._controller.sources.remote()).items():
                for shard, last in self._source_open_through(name, actor, t):
                    key = (source_channel(name), shard)
                    waiting[key] = max(last, waiting.get(key, 0))
            left = max(0.0, deadline - time.monotonic())
            complete = all(
                shard >= 0 and self._applied_on(shard, channel, last, left)
                for (channel, shard), last in waiting.items()
            )
            if complete and self._quiet_through(t, left):
                return
            if time.monotonic() > deadline:
                raise SnapshotNotReady(f"time {t} still incomplete after {timeout} s")
            if not complete:
                time.sleep(_IDLE_POLL / 10)  # updates held at a source, behind a vertex removal

    def _quiet_through(self, t: float, wait: float) -> bool:
        """Whether no shard holds a message of time ``<= t``, once so (or after ``wait``
        seconds)."""
        return all(self._from_shards(lambda s: s.wait_pending_after.remote(t, wait)))

    def _applied_on(self, shard: int, channel: str, position: int, wait: float) -> bool:
        """Whether ``shard`` applied ``channel`` through ``position``, once it did (or
        after ``wait`` seconds)."""
        actor = self._shards[shard]
        outcome = _retrying(lambda: ray.get(actor.wait_applied.remote(channel, position, wait)))
        return bool(outcome.applied >= position)

    def _source_open_through(self, name: str, actor: Any, t: float) -> list[tuple[int, int]]:
        """The open batches of source ``name`` holding updates of time ``<= t``."""
        if actor is None:
            pump = self._pumps.get(name)
            if pump is None:
                raise SnapshotNotReady(
                    f"source {name} is fed from another driver; a time snapshot can only be "
                    "taken once its ingestion ended (feed it through a source actor instead)"
                )
            reason, batches = pump.complete_through(t)
        else:
            reason, batches = _retrying(lambda: ray.get(actor.complete_through.remote(t)))
        if reason is not None:
            raise SnapshotNotReady(reason)
        return batches

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
        resume: StreamPosition | None = None,
    ) -> Subscription:
        """A notification stream of vertex updates: all of them, or only of vertex
        ``types``, of vertex ``ids``, and/or those where ``predicate(old_state,
        new_state)`` holds. Per vertex in log order; each shard buffers at most ``buffer``
        items per subscription and tells a slow consumer how many it missed
        (``Lagged``). ``since=T`` replays from the logs every update with event time
        ``>= T`` first, then continues live. ``resume=`` the ``position`` of an earlier
        stream with the same filter goes on where it stood: what came after it is replayed
        from the logs, then the stream is live (nothing missed, nothing repeated). Close
        it when done."""
        spec = NotificationFilter.of(types, ids, predicate)
        return subscribe(self._live, spec, buffer, since, resume)

    def index(self, name: str) -> Index:
        """The secondary index ``name`` declared by a vertex class (``indexes`` class
        attribute): ``.lookup(key)`` and ``.range(lo, hi)`` return vertex ids."""
        names = {n for cls in self.types.classes for n in (getattr(cls, "indexes", None) or {})}
        if name not in names:
            declared = ", ".join(sorted(names)) or "none"
            raise KeyError(f"no index {name!r} (declared by the vertex classes: {declared})")
        return Index(self._live, name)
