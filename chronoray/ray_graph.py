"""The Ray runtime behind ``GraphCluster(runtime="ray")`` (the default).

A graph is a set of Ray actors: one ``ShardWorker`` per shard (each with its own RocksDB
log under ``log_dir`` on its node), the graph's ``GraphController``, and one
``SourceActor`` per source feeding it. :class:`RayGraph` holds their handles and offers
what :class:`~chronoray.graph.GraphCluster` needs from a runtime; it leans on the
modules that own each part: :mod:`chronoray.connect` (which cluster),
:mod:`chronoray.placement` (which node), :mod:`chronoray.deploy` (starting and stopping
actors), :mod:`chronoray.ingest` and :mod:`shards.feed` (feeding),
:mod:`chronoray.controller` (sources and their coordination, names).

Every wait here is a long poll on the shards (:meth:`~shards.worker.ShardWorker.wait_quiet`,
``wait_applied``, ``wait_pending_after``): the driver never spins.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import ray
from ray import ObjectRef
from ray.exceptions import NodeDiedError, TaskUnschedulableError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from chronoray.config import Config
from chronoray.connect import ensure_ray
from chronoray.controller import CONTROLLER_NAME, graph_namespace, named_graphs
from chronoray.deploy import Deployment, deploy, shard_log_path, stop
from chronoray.errors import GraphNotFound, ShardsUnavailable, SnapshotNotReady, SourceBusy
from chronoray.handles import ControllerHandle, ShardHandle
from chronoray.ingest import (
    FeedPump,
    IngestJob,
    IngestReport,
    SourceActor,
    SourceFinal,
    SourceJob,
    feed_options,
    feed_source,
    ingest_reporter,
)
from chronoray.manifest import Manifest
from chronoray.options import IngestOptions
from chronoray.placement import alive_nodes
from chronoray.sources import Source
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
from shards.coordinator import source_channel
from shards.protocol import Outcome, ShardStats
from shards.remote import actor_class
from shards.routing import shard_of
from shards.worker import ACTOR_ERRORS
from snapshot.snapshot import Snapshot, SnapshotMeta
from snapshot.tasks import build_snapshot, read_log
from vertex.annotations import mark_module_api
from vertex.model import VertexTypes
from vertex.records import VertexId

if TYPE_CHECKING:
    from chronoray.graph import GraphStatus
    from chronoray.spark_source import SparkIngestJob

__all__ = ["RayGraph"]

_IDLE_POLL = 1.0  # seconds a shard waits for quiet before it answers anyway
_NODE_GONE = (TaskUnschedulableError, NodeDiedError)  # a task's node was lost


T = TypeVar("T")


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


class RayGraph:
    """The actors of one graph: started here (``deployment=None``: :func:`deploy`) or
    found running (:meth:`attach`). ``owner``: :meth:`close` stops them (a private graph)
    rather than only letting go (a named graph another driver may use)."""

    def __init__(
        self,
        config: Config,
        log_dir: Path,
        manifest: Manifest,
        types: VertexTypes | None,
        name: str | None,
        deployment: Deployment | None = None,
    ) -> None:
        self.config = config
        self.log_dir = log_dir
        self.manifest = manifest
        self.name = name
        self._types = types
        if deployment is None:
            assert types is not None
            ensure_ray(config)
            graph_id = uuid.uuid4().hex[:10]
            deployment = deploy(config, log_dir, manifest, types, name, graph_id)
        self.deployment = deployment
        self.graph_id = deployment.graph_id
        self.namespace = deployment.namespace
        self._controller = ControllerHandle(
            deployment.controller, deployment.controller_name, deployment.namespace
        )
        self._shards = [ShardHandle(actor) for actor in deployment.shards]
        self.owner = name is None  # close() stops a private graph, detaches from a named one
        self._pumps: dict[str, FeedPump] = {}
        self._opening: set[str] = set()  # opened by this driver, pump or actor not yet up
        self._closed = False

    @classmethod
    def attach(cls, name: str, config: Config) -> RayGraph:
        """The running named graph ``name`` (:class:`GraphNotFound` if there is none)."""
        ensure_ray(config)
        try:
            controller = ray.get_actor(CONTROLLER_NAME, namespace=graph_namespace(name))
        except ValueError:
            running = ", ".join(named_graphs()) or "none"
            raise GraphNotFound(
                f"no graph named {name!r} in the Ray cluster (running: {running})"
            ) from None
        info = ControllerHandle(controller, CONTROLLER_NAME, graph_namespace(name)).info()
        deployment = Deployment(
            info["graph_id"], info["namespace"], CONTROLLER_NAME, controller, info["shards"]
        )
        return cls(
            Config(**info["config"]),
            Path(info["log_dir"]),
            Manifest(**info["manifest"]),
            None,
            name,
            deployment,
        )

    # -- lifecycle --------------------------------------------------------------------

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
        """The shard actor handles (Ray's)."""
        return [s.actor for s in self._shards]

    def close(self) -> None:
        """Let go: a private graph is stopped, a named one keeps running."""
        if self._closed:
            return
        if self.owner:
            self.shutdown()
        self._closed = True

    def shutdown(self) -> None:
        """Stop the graph's sources, close every shard's log and stop its actors."""
        self._closed = True
        stop(self.deployment)

    def status(self, timeout: float) -> GraphStatus:
        """Where each shard is and whether it answers; each source's progress."""
        from chronoray.graph import GraphStatus

        alive = {n.key for n in alive_nodes()}
        pings = [s.ping() for s in self._shards]
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
        for source, actor in self._controller.sources().items():
            if actor is None:
                pump = self._pumps.get(source)
                if pump is not None:
                    sources[source] = pump.progress()
                elif source in self._opening:
                    sources[source] = {"waiting": "opening"}
                else:
                    sources[source] = {"fed from": "another driver"}
                continue
            try:
                sources[source] = ray.get(actor.progress.remote(), timeout=timeout)
            except (*ACTOR_ERRORS, ray.exceptions.GetTimeoutError):
                sources[source] = {"waiting": "source actor restarting"}
        return GraphStatus(self.name, self.config.storage, shards, sources)

    # -- ingestion --------------------------------------------------------------------

    def ingest(
        self, sources: list[tuple[Source, bool]], options: IngestOptions
    ) -> list[IngestReport | IngestJob]:
        """Feed ``sources`` -- each with whether it is fed from this driver -- together:
        opened before any sends, each in a source actor of its own (or a thread of this
        driver); their reports once all are applied and the graph is idle, or (``wait``
        false) their jobs."""
        if len({s.name for s, _ in sources}) < len(sources):
            raise ValueError("several sources at once need distinct names")
        if any(here for _, here in sources) and not options.wait and len(sources) > 1:
            raise ValueError("sources fed from the driver need wait=True")
        self._open_sources([s.name for s, _ in sources])
        halves = self.types.stream_edges
        feeds = [
            feed_options(
                s,
                halves=halves,
                allowed_lateness=options.allowed_lateness,
                late=options.late,
                idle_timeout=options.idle_timeout,
            )
            for s, _ in sources
        ]
        total = options.total if len(sources) == 1 else None
        if len(sources) == 1 and sources[0][1]:
            return [self._ingest_here(sources[0][0], options, total, feeds[0])]
        jobs = [
            None if here else self._start_source(src, options, total, feed)
            for (src, here), feed in zip(sources, feeds, strict=True)
        ]
        if not options.wait:
            return [job for job in jobs if job is not None]
        progress = options.progress if len(sources) == 1 else False
        with ThreadPoolExecutor(max(1, len(sources))) as pool:
            futures = [
                pool.submit(self._ingest_here, src, options.replace(progress=False), None, feed)
                if job is None
                else pool.submit(job.wait, progress)
                for (src, _), feed, job in zip(sources, feeds, jobs, strict=True)
            ]
            reports: list[IngestReport | IngestJob] = [f.result() for f in futures]
        self.wait_idle()
        return reports

    def _open_sources(self, names: list[str]) -> None:
        """Register sources ``names`` with the controller, all before any of them sends;
        a name already feeding is refused (:class:`SourceBusy`) and nothing is opened."""
        opened: list[str] = []
        token = uuid.uuid4().hex  # a retried open that went through is not refused
        for name in names:
            if not self._controller.open_source(name, token):
                for done in opened:
                    self._controller.close_source(done, SourceFinal())
                raise SourceBusy(f"source {name!r} is already feeding this graph")
            opened.append(name)
        self._opening.update(names)

    def _start_source(
        self, source: Source, options: IngestOptions, total: int | None, feed: dict[str, Any]
    ) -> IngestJob:
        """The source actor feeding ``source``, on this driver's node."""
        c = self.config
        actor_name = f"chronoray-{self.graph_id}-source-{uuid.uuid4().hex[:10]}"
        actor = (
            actor_class(SourceActor)
            .options(
                name=actor_name,  # a restarted controller finds it by name
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
                (self.graph_id, self.namespace, self.deployment.controller_name, self.num_shards),
                c.batch_size,
                c.max_inflight,
                options.on_error,
                options.rejects_path,
                {"linger": c.batch_linger, **feed},
            )
        )
        self._controller.source_actor(source.name, actor, actor_name)
        self._opening.discard(source.name)
        return SourceJob(source.name, actor, self._controller, total)

    def _ingest_here(
        self, source: Source, options: IngestOptions, total: int | None, feed: dict[str, Any]
    ) -> IngestReport:
        final = SourceFinal()
        with self.feeding(source.name, final, opened=True, **feed) as pump:
            pump.on_batch = options.on_batch
            with ingest_reporter(options.progress, source.name, total) as bar:
                report, error = feed_source(
                    pump,
                    source,
                    options.on_error,
                    options.rejects_path,
                    lambda n: bar(dict(pump.progress(), read=n)),
                )
            final.report = report
        self.wait_idle()
        if error is not None:
            raise error
        return report

    @contextmanager
    def feeding(
        self,
        name: str,
        final: SourceFinal | None = None,
        *,
        opened: bool = False,
        **options: Any,
    ) -> Iterator[FeedPump]:
        """See :meth:`GraphCluster.feeding <chronoray.graph.GraphCluster.feeding>`."""
        if not opened:
            self._open_sources([name])
        pump: FeedPump | None = None
        try:
            c = self.config
            floor = self._controller.source_floor(name)
            options = {"halves": self.types.stream_edges, "linger": c.batch_linger, **options}
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
            self._opening.discard(name)
            yield pump
        finally:  # closed first: a time cut never sees it active without its pump
            if pump is not None:
                pump.close()
            ended = final if final is not None else SourceFinal()
            self._controller.close_source(name, ended)
            self._pumps.pop(name, None)
            self._opening.discard(name)

    def ingest_spark(
        self,
        frame: Any,
        *,
        src: str,
        dst: str | None,
        time: str,
        kind: str | None,
        props: Sequence[str] | Mapping[str, str] | None,
        source: str,
        ids: Literal["int", "str"] | None,
        parts: int | None,
        on_error: Literal["raise", "skip"],
        rejects: str | Path | None,
        graph: Any,
    ) -> SparkIngestJob:
        """Start feeding a Spark DataFrame (see ``GraphCluster.ingest_spark``)."""
        from chronoray.spark_source import start_spark_ingest
        from spark_bridge.ingest import UpdateColumns

        columns = UpdateColumns.of(src, dst, time, kind, props, ids)
        return start_spark_ingest(
            graph,
            frame,
            columns,
            active=self._controller.sources(),
            source=source,
            parts=parts or self.num_shards,
            on_error=on_error,
            rejects=None if rejects is None else str(Path(rejects).resolve()),
        )

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
            answers = self._from_shards(lambda s: s.wait_quiet(wait))  # noqa: B023
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

    def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """Type, clock, event time, state, out- and in-edges of ``vertex_id``."""
        shard = self._shards[shard_of(vertex_id, self.num_shards)]
        return ray.get(shard.vertex(vertex_id))

    def stats(self) -> list[ShardStats]:
        """Every shard's counters (waiting for restarting shards)."""
        return self._from_shards(lambda s: s.stats())

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per source name, what its last ingestion read and its event-time counters."""
        return self._controller.summary()

    def edges(self) -> Iterator[tuple[VertexId, VertexId, dict[str, Any]]]:
        """Every edge as ``(src, dst, props)``, shard by shard."""
        for part in ray.get([s.edges() for s in self._shards]):
            yield from part

    def degrees(self) -> dict[VertexId, tuple[int, int]]:
        """``vertex -> (out_degree, in_degree)`` for the whole graph."""
        degrees = ray.get([s.degrees() for s in self._shards])
        return {v: (o, i) for part in degrees for v, o, i in part}

    def errors(self) -> list[tuple[int, int, VertexId, str]]:
        """Recent failed behaviors as ``(shard, worker clock, vertex, error)``."""
        errors = ray.get([s.recent_errors() for s in self._shards])
        return [(k, wc, v, e) for k, part in enumerate(errors) for wc, v, e in part]

    def _from_shards(self, call: Callable[[ShardHandle], ObjectRef[T]]) -> list[T]:
        """``call(shard)`` on every shard, waiting up to 30 s for restarting shards; then
        :class:`ShardsUnavailable` saying which shard waits for which node."""
        try:
            answers: list[T] = _retrying(lambda: ray.get([call(s) for s in self._shards]), 300)
            return answers
        except ACTOR_ERRORS:
            problems = "; ".join(self.status(2.0).describe()) or "a shard does not answer"
            raise ShardsUnavailable(problems) from None

    # -- the logs ---------------------------------------------------------------------

    def shard_log_path(self, shard: int) -> str:
        """The directory of shard ``shard``'s RocksDB log (on its node)."""
        return shard_log_path(self.log_dir, shard)

    def shard_node_ids(self) -> list[str]:
        """The Ray node each shard runs on now; waits for a restarting shard."""
        nodes: list[str] = _retrying(lambda: ray.get([s.node() for s in self._shards]))
        return nodes

    def _on_shard_nodes(self, run: Callable[[list[str]], T], timeout: float = 300.0) -> T:
        """``run(nodes)`` with the node of each shard now; with the nodes asked again when
        a node was lost meanwhile (a task bound to it cannot be scheduled: its shards
        restart on other nodes, their logs on shared storage)."""
        deadline = time.monotonic() + timeout
        while True:
            nodes = self.shard_node_ids()
            try:
                return run(nodes)
            except _NODE_GONE:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def read_logs(
        self, function: Callable[..., Any], args: dict[int, tuple[Any, ...]]
    ) -> dict[int, Any]:
        """``function(store, *args[k])`` against a read-only handle of shard ``k``'s log,
        in parallel tasks on the shards' nodes (a processing model's whole replay: kept
        out of the shard actors' processes, whose work it would slow)."""

        def run(nodes: list[str]) -> dict[int, Any]:
            with ThreadPoolExecutor(max(1, len(args))) as pool:
                futures = {
                    k: pool.submit(read_log, self.shard_log_path(k), nodes[k], function, *a)
                    for k, a in args.items()
                }
                return {k: f.result() for k, f in futures.items()}

        return self._on_shard_nodes(run)

    def read_log(self, shard: int, function: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """``function(store, *args, **kw)`` (a small read: a vertex's state or history) by
        ``shard``'s actor, or a task on its node where the actor cannot answer."""
        path, actor = self.shard_log_path(shard), self.shards[shard]
        return self._on_shard_nodes(
            lambda nodes: read_log(path, nodes[shard], function, *args, shard_actor=actor, **kw)
        )

    def build_snapshot(
        self,
        meta: SnapshotMeta,
        *,
        clock: tuple[int, ...] | None = None,
        at: float | None = None,
        since: float | None = None,
    ) -> Snapshot:
        """Every shard's part of the cut, rebuilt by its shard actor from its log (by a
        task on its log's node where the actor cannot answer); a part lost later with its
        node is built again where its shard runs then."""
        paths = [self.shard_log_path(k) for k in range(self.num_shards)]
        return self._on_shard_nodes(
            lambda nodes: build_snapshot(
                paths,
                nodes,
                meta,
                clock=clock,
                at=at,
                since=since,
                nodes_now=self.shard_node_ids,
                shards=self.shards,
            )
        )

    def clocks(self) -> tuple[int, ...]:
        """Every shard's worker clock now."""
        return tuple(s.worker_clock for s in self.stats())

    def wait_until_complete(self, t: float, timeout: float) -> None:
        """See ``GraphCluster.wait_until_complete``; each condition is waited for on the
        shard concerned (a long poll)."""
        deadline = time.monotonic() + timeout
        while True:
            waiting: dict[tuple[str, int], int] = {}
            starting = False  # a source opened here has no pump or actor yet, or restarts
            for name, actor in self._controller.sources().items():
                batches = self._source_open_through(name, actor, t)
                starting |= batches is None
                for shard, last in batches or []:
                    key = (source_channel(name), shard)
                    waiting[key] = max(last, waiting.get(key, 0))
            left = max(0.0, deadline - time.monotonic())
            complete = not starting and all(
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
        quiet = self._from_shards(lambda s: s.wait_pending_after(t, wait))
        return all(quiet)

    def _applied_on(self, shard: int, channel: str, position: int, wait: float) -> bool:
        """Whether ``shard`` applied ``channel`` through ``position``, once it did (or
        after ``wait`` seconds)."""
        actor = self._shards[shard]
        outcome: Outcome = _retrying(lambda: ray.get(actor.wait_applied(channel, position, wait)))
        return outcome.applied >= position

    def _source_open_through(self, name: str, actor: Any, t: float) -> list[tuple[int, int]] | None:
        """The open batches of source ``name`` holding updates of time ``<= t`` (None
        while this driver is still starting its pump or actor, or the actor restarts)."""
        if actor is None:
            pump = self._pumps.get(name)
            if pump is None and name in self._opening:
                return None
            if pump is None:
                raise SnapshotNotReady(
                    f"source {name} is fed from another driver; a time snapshot can only be "
                    "taken once its ingestion ended (feed it through a source actor instead)"
                )
            reason, batches = pump.complete_through(t)
        else:
            try:
                reason, batches = ray.get(actor.complete_through.remote(t))
            except ACTOR_ERRORS:  # restarting: asked again until the snapshot's timeout
                return None
        if reason is not None:
            raise SnapshotNotReady(reason)
        return batches

    def crash(self, shard: int) -> int:
        """SIGKILL ``shard``'s process (Ray restarts it; it recovers from its log)."""
        import os
        import signal

        pid = ray.get(self._shards[shard].pid())
        os.kill(pid, signal.SIGKILL)
        return pid

    def crash_controller(self) -> int:
        """SIGKILL the graph's controller's process (Ray restarts it; it recovers from the
        shards, its state file and the sources' reports); returns the killed pid."""
        import os
        import signal

        pid = self._controller.pid()
        os.kill(pid, signal.SIGKILL)
        return pid

    # -- Spark and live computations --------------------------------------------------

    def spark(self) -> Any:
        """The process's Spark session in this Ray cluster (RayDP)."""
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

    @property
    def live(self) -> RayBackend:
        """How live computations reach the shards."""
        return RayBackend(self.shards, self.wait_idle)

    def start_computation(self, computation: Computation, id: str | None = None) -> LiveComputation:
        """Start an ephemeral live computation on the shards."""
        return start_computation(self.live, computation, id)

    def computation(self, id: str, computation: Computation) -> LiveComputation:
        """A handle on the running computation ``id``."""
        return LiveComputation(self.live, id, computation)

    def subscribe(
        self,
        types: Any,
        ids: Any,
        predicate: StatePredicate | None,
        *,
        buffer: int,
        since: float | None,
        resume: StreamPosition | None,
    ) -> Subscription:
        """A notification stream of vertex updates."""
        spec = NotificationFilter.of(types, ids, predicate)
        return subscribe(self.live, spec, buffer, since, resume)

    def index(self, name: str) -> Index:
        """A secondary index declared by the vertex classes."""
        return Index(self.live, name)


mark_module_api(globals())
