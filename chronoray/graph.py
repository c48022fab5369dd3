"""``GraphCluster``: the handle of a live graph, on Ray or in this process.

``GraphCluster`` is a facade: the same methods and types whichever runtime runs the graph,
chosen by ``runtime=``:

* ``"ray"`` (the default): shard actors with RocksDB logs on the cluster's nodes, the
  graph's controller, source actors (:mod:`chronoray.ray_graph`);
* ``"local"``: the same shards as ``ShardCore`` s in this process, for tests and
  notebooks, with the same logs, manifest and source coordination
  (:mod:`chronoray.local_graph`): a graph written by one opens on the other.

Behind it, ingestion (every form of :meth:`~GraphCluster.ingest`, one
:class:`~chronoray.options.IngestOptions` value) and time travel
(:class:`~chronoray.travel.TimeTravel`) are components of their own; what needs a
cluster (named graphs, source actors fed from elsewhere, Spark) is refused on
``"local"`` with a line saying so.

A Ray graph is either private to the process that made it (``GraphCluster(...)``,
``GraphCluster.open(log_dir)``: ``close()`` stops it) or *named* and detached
(``GraphCluster.create(name, ...)``): it lives in the cluster in its own namespace,
outlives its creator, any driver or job can :meth:`~GraphCluster.attach` to it, ``close()``
only detaches and :meth:`~GraphCluster.shutdown` stops it (the logs stay).

Guarantees:

* An update counts as ingested once the shard hosting it acknowledged it, i.e. logged it.
  :meth:`GraphCluster.ingest` (``wait=True``) returns after every update was
  acknowledged and every message it caused was processed (the graph is idle).
* A shard whose process dies is restarted (by Ray -- with ``storage="local"`` only on the
  node holding its log, with ``"shared"`` anywhere), rebuilds its vertices from its log,
  and the sources resend what was not acknowledged; the ``(source, offset)`` id of each
  update makes the resend idempotent, so nothing is lost and nothing is applied twice.
  Ingesting the same source again is a no-op for the same reason. A source actor that
  dies is restarted and resumes from what the shards logged. Whatever restarts while
  several sources feed the graph, every update is logged at its own event time: every
  past cut stays equal to the input.
* A malformed record stops ingestion with :class:`~chronoray.sources.MalformedRecord`
  (file, line, text) after everything before it was applied; nothing after it is.
* Reopening a ``log_dir`` (:meth:`GraphCluster.open`) recovers the graph from its logs.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from chronoray.config import Config
from chronoray.connect import ensure_ray
from chronoray.controller import named_graphs
from chronoray.deploy import shard_log_path
from chronoray.errors import (
    GraphExists,
    GraphNotFound,
    LogDirInUse,
    ShardsUnavailable,
    SnapshotNotReady,
    SourceBusy,
    SourceMismatch,
)
from chronoray.ingest import FeedPump, IngestJob, IngestReport, SourceFinal, count_lines
from chronoray.local_graph import LocalGraph
from chronoray.manifest import Manifest
from chronoray.options import IngestOptions
from chronoray.ray_graph import RayGraph
from chronoray.sources import IterableSource, SortedSource, Source
from chronoray.travel import TimeTravel
from ephemeral.computation import Computation
from ephemeral.live import Index, LiveComputation, Subscription
from ephemeral.notify import StatePredicate, StreamPosition
from shards.core import VertexNotFound
from shards.protocol import ShardStats
from snapshot.snapshot import Snapshot
from vertex.annotations import mark_module_api
from vertex.model import Vertex, VertexTypes
from vertex.records import Update, VertexId

if TYPE_CHECKING:
    from chronoray.analysis import AnalysisResult
    from chronoray.spark_source import SparkIngestJob, SparkIngestReport

log = logging.getLogger(__name__)

__all__ = [
    "GraphCluster",
    "GraphExists",
    "GraphNotFound",
    "GraphStats",
    "GraphStatus",
    "IngestJob",
    "IngestOptions",
    "IngestReport",
    "LogDirInUse",
    "RuntimeName",
    "ShardsUnavailable",
    "SnapshotNotReady",
    "SourceBusy",
    "SourceMismatch",
    "VertexNotFound",
]

RuntimeName = Literal["ray", "local"]
SourceLike = Source | Iterable[Update | None]
"""A source: a file source, or any iterable of updates (``None``: nothing to read now)."""


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


def _recorded(manifest: Manifest, overrides: dict[str, Any]) -> None:
    """A reopened graph keeps its recorded shard count, storage and placement unless
    they are given (a different shard count is then refused)."""
    for name in ("num_shards", "storage", "placement"):
        if overrides.get(name) is None:
            overrides[name] = getattr(manifest, name)


def _described(
    config: Config,
    log_dir: Path,
    name: str | None,
    vertex_types: list[type[Vertex]] | None,
    default_vertex: type[Vertex] | None,
) -> tuple[Manifest, VertexTypes]:
    """What the graph in ``log_dir`` is (its manifest, read or new) and its classes."""
    if Manifest.exists(log_dir):
        manifest = Manifest.read(log_dir)
        manifest.check_shards(config.num_shards, log_dir)
        types = (
            VertexTypes(vertex_types, default_vertex)
            if vertex_types
            else manifest.types(vertex_types)
        )
        manifest.storage, manifest.placement = config.storage, config.placement  # type: ignore[assignment]
        manifest.name = name
        return manifest, types
    types = VertexTypes(vertex_types, default_vertex)
    manifest = Manifest.of(config.num_shards, types, config.storage, config.placement, name)  # type: ignore[arg-type]
    return manifest, types


class GraphCluster:
    """A live, event-sourced graph: ``num_shards`` shards with RocksDB logs, on Ray
    (``runtime="ray"``, the default) or in this process (``runtime="local"``).

    >>> import chronoray as cr
    >>> import tempfile
    >>> with cr.GraphCluster(runtime="local", num_shards=2, log_dir=tempfile.mkdtemp()) as g:
    ...     report = g.ingest([cr.Update.add_edge(1, 2, 10), cr.Update.add_edge(1, 2, 20)])
    ...     report.updates, g.stats().edges, g.vertex(1)["out_edges"][2]["count"]
    (2, 1, 2)

    ``vertex_types`` are the vertex classes the graph knows; ``default_vertex`` (default:
    the first of them, else :class:`~vertex.model.TemporalVertex`) is used for vertices
    created implicitly. Classes are recorded by import path in the log directory, so
    :meth:`open` finds them again (classes defined in ``__main__`` must be passed again).
    ``name`` makes a detached named graph (see :meth:`create`; Ray only). ``storage``,
    ``placement`` and the rest are :class:`~chronoray.config.Config` fields.
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        runtime: RuntimeName | RayGraph | LocalGraph = "ray",
        vertex_types: list[type[Vertex]] | None = None,
        default_vertex: type[Vertex] | None = None,
        name: str | None = None,
        **overrides: Any,
    ) -> None:
        if isinstance(runtime, str):
            runtime = self._started(runtime, config, vertex_types, default_vertex, name, overrides)
        self._runtime: RayGraph | LocalGraph = runtime
        self.config = runtime.config
        self.name = name if isinstance(runtime, LocalGraph) else runtime.name
        self.log_dir = runtime.log_dir
        self.manifest = runtime.manifest
        self._travel = TimeTravel(runtime)
        self.file_notes: list[str] = []
        """Notes for people from the file check of the last :meth:`ingest` call (a file
        that grew, or changed after what the graph applied of it); empty if none."""

    @staticmethod
    def _started(
        runtime: str,
        config: Config | None,
        vertex_types: list[type[Vertex]] | None,
        default_vertex: type[Vertex] | None,
        name: str | None,
        overrides: dict[str, Any],
    ) -> RayGraph | LocalGraph:
        if runtime not in ("ray", "local"):
            raise ValueError(f"runtime must be 'ray' or 'local', got {runtime!r}")
        base = config or Config.load()
        given = {k: v for k, v in overrides.items() if v is not None}
        config = base.replace(**given) if given else base
        log_dir = Path(config.log_dir).resolve()
        manifest, types = _described(config, log_dir, name, vertex_types, default_vertex)
        if runtime == "local":
            if name is not None:
                raise ValueError("a named graph lives in a Ray cluster: runtime='ray'")
            return LocalGraph(config, log_dir, manifest, types)
        return RayGraph(config, log_dir, manifest, types, name)

    # -- construction -----------------------------------------------------------------

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
        return cls(runtime=RayGraph.attach(name, config or Config.load()))

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
        runtime: RuntimeName = "ray",
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
            runtime=runtime,
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
        self._runtime.close()

    def shutdown(self) -> None:
        """Stop the graph's sources, close every shard's log and stop its actors (the
        logs stay on disk; :meth:`open` or :meth:`create` reopens them)."""
        if isinstance(self._runtime, LocalGraph):
            self._runtime.close()
        else:
            self._runtime.shutdown()

    @property
    def runtime(self) -> RuntimeName:
        """Which runtime runs the graph: ``"ray"`` or ``"local"``."""
        return "local" if isinstance(self._runtime, LocalGraph) else "ray"

    def _ray(self, what: str) -> RayGraph:
        """The Ray runtime, for what only it can do."""
        if isinstance(self._runtime, LocalGraph):
            raise RuntimeError(f"{what} needs runtime='ray' (this graph runs in this process)")
        return self._runtime

    @property
    def types(self) -> VertexTypes:
        """The graph's vertex classes (imported from the manifest's record when attached)."""
        return self._runtime.types

    @property
    def num_shards(self) -> int:
        """Number of shards."""
        return self.config.num_shards

    @property
    def graph_id(self) -> str:
        """The Ray graph's id (its actors' names hold it)."""
        return self._ray("graph_id").graph_id

    @property
    def namespace(self) -> str:
        """The Ray namespace of the graph's actors."""
        return self._ray("namespace").namespace

    @property
    def shards(self) -> list[Any]:
        """The shard actor handles (for tests and tools; Ray only)."""
        return self._ray("shards").shards

    def status(self, timeout: float = 2.0) -> GraphStatus:
        """Where each shard's log is, whether its node is alive and the shard answers
        (within ``timeout``), and each source's progress (what it waits for)."""
        if isinstance(self._runtime, LocalGraph):
            shards = [
                {"shard": k, "node": "local", "node_alive": True, "answering": True}
                for k in range(self.num_shards)
            ]
            sources = self._runtime.runtime.progress()
            return GraphStatus(self.name, self.config.storage, shards, sources)
        return self._runtime.status(timeout)

    # -- ingestion --------------------------------------------------------------------

    def ingest(
        self,
        source: SourceLike | Sequence[SourceLike],
        options: IngestOptions | None = None,
        /,
        **keywords: Any,
    ) -> Any:
        """Feed ``source`` -- a file source, an iterable of updates, or a list of several
        of them -- into the graph, as ``options`` (an
        :class:`~chronoray.options.IngestOptions`; its fields may be given as keywords
        instead, or on top) say. The one entry to ingestion on both runtimes.

        On Ray by default a source actor on the cluster reads it (on this driver's node,
        where its file is), batches it (``batch_size`` updates per shard, at most
        ``max_inflight`` unacknowledged batches per shard) and survives a crash of its own
        process; in process, this thread feeds it. ``wait=False`` returns an
        :class:`~chronoray.ingest.IngestJob` at once; otherwise this waits until every
        update is acknowledged and the graph is idle and returns the
        :class:`~chronoray.ingest.IngestReport` (``progress=True`` draws a bar, ``total``:
        expected updates; a callable gets the count of updates read).

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
        :data:`~shards.coordinator.DEFAULT_IDLE_TIMEOUT`) stops holding the graph's
        watermark back: its own catches up with the other sources' (an iterable yields
        ``None`` for "nothing to read now").

        Several sources at once -- a list of sources, or of iterables (a list of updates is
        one source) -- open together and are merged by event time; their reports (or
        jobs) come back as a list (:meth:`ingest_many` is the same).

        ``in_driver=True`` feeds from this process instead (``on_batch`` is then called
        with the number of batches sent after each send; tests inject faults with it). A
        one-shot iterator (a generator) is always fed from the driver: it cannot be
        shipped to, nor re-read by, a restarted source actor.

        A plain iterable of updates gets ``name`` as its source name; without one, a fresh
        name, so two different lists never pass for the same source. Give a name to make
        ingesting the same list again a no-op.
        """
        return self._ingest(source, _several(source), _options(options, keywords))

    def ingest_many(
        self,
        items: Sequence[SourceLike],
        options: IngestOptions | None = None,
        /,
        **keywords: Any,
    ) -> list[Any]:
        """Feed several sources at once (files, iterables), with the options of
        :meth:`ingest`; returns their reports (or, ``wait=False``, their jobs). The same
        as ``ingest([a, b, ...])``.

        They open together, before any of them sends: the graph's watermark is the
        minimum over them, and the shards merge their updates by event time -- every
        vertex sees them in time order, whatever the sources' relative speed. On Ray each
        runs in a source actor of its own (one-shot iterators, or ``in_driver=True``, in
        a thread of this driver)."""
        results: list[Any] = self._ingest(list(items), True, _options(options, keywords))
        return results

    def _ingest(self, source: Any, several: bool, options: IngestOptions) -> Any:
        items = list(source) if several else [source]
        if not several and options.on_batch is not None and not options.in_driver:
            raise ValueError("on_batch= needs in_driver=True")
        sources = [self._source(item, options, several) for item in items]
        self.file_notes = self._claim_files([source for source, _ in sources], options.sort)
        if not several and options.progress is True and options.total is None:
            path = getattr(sources[0][0], "path", None)
            if isinstance(path, Path):
                options = options.replace(total=count_lines(path))
        results = self._runtime.ingest(sources, options) if sources else []
        return results if several else results[0]

    def _claim_files(self, sources: list[Source], sort: bool) -> list[str]:
        """A file source is checked against the file ingested before under its name: other
        content is refused (:class:`~chronoray.errors.SourceMismatch`, naming both files)
        instead of being skipped line by line as resends; see :mod:`chronoray.source_files`.
        Returns the notes for people (a file that grew), which also go to the log."""
        if self.log_dir is None or not any(
            isinstance(getattr(s, "path", None), Path) for s in sources
        ):
            return []
        from chronoray.source_files import check_files

        notes = check_files(self, sources, sorted_files=sort)
        for note in notes:
            log.info(note)
        return notes

    @staticmethod
    def _source(item: SourceLike, options: IngestOptions, several: bool) -> tuple[Source, bool]:
        """``item`` as a source, and whether it must be fed from this process (a one-shot
        iterator cannot be shipped to, nor re-read by, a restarted source actor)."""
        here = options.in_driver
        if not isinstance(item, Source):
            here = here or isinstance(item, Iterator)
            name = None if several else options.name
            item = IterableSource(item, name or f"iterable-{uuid.uuid4().hex[:12]}")  # type: ignore[arg-type]
        return (SortedSource(item) if options.sort else item), here

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
        progress: Any = False,
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
        job = self._ray("ingest_spark").ingest_spark(
            frame,
            src=src,
            dst=dst,
            time=time,
            kind=kind,
            props=props,
            source=source,
            ids=ids,
            parts=parts,
            on_error=on_error,
            rejects=rejects,
            graph=self,
        )
        if not wait:
            return job
        report = job.wait(progress)
        self.wait_idle()
        return report

    def feeding(
        self,
        name: str,
        final: SourceFinal | None = None,
        *,
        opened: bool = False,
        **options: Any,
    ) -> AbstractContextManager[FeedPump]:
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
        return self._ray("feeding()").feeding(name, final, opened=opened, **options)

    def wait_idle(self, timeout: float | None = None) -> None:
        """Block until no message is pending anywhere (live computations' messages
        included); on Ray each shard waits for its own quiet (a long poll), so the driver
        does not spin."""
        self._runtime.wait_idle(timeout)

    def wait_until_complete(self, t: float, timeout: float = 120.0) -> None:
        """Return once every update with time ``<= t`` and every message it caused is
        logged: every source feeding the graph read past ``t`` and its batches holding
        such updates were applied, and no shard holds an unacknowledged message of time
        ``<= t``. Raises :class:`SnapshotNotReady` if a source has not read past ``t``
        (or is not in time order, or is fed by another driver), or if that is still not
        so after ``timeout`` seconds."""
        self._runtime.wait_until_complete(t, timeout)

    # -- queries ----------------------------------------------------------------------

    def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """Type, clock, event time, state, out- and in-edges of ``vertex_id``.

        Raises :class:`VertexNotFound` for an unknown id.
        """
        return self._runtime.vertex(vertex_id)

    def out_edges(self, vertex_id: VertexId) -> dict[VertexId, dict[str, Any]]:
        """Outgoing edges of ``vertex_id`` (target -> properties)."""
        return self.vertex(vertex_id)["out_edges"]  # type: ignore[no-any-return]

    def in_edges(self, vertex_id: VertexId) -> dict[VertexId, dict[str, Any]]:
        """Incoming edge records of ``vertex_id`` (source -> properties)."""
        return self.vertex(vertex_id)["in_edges"]  # type: ignore[no-any-return]

    def stats(self) -> GraphStats:
        """Vertex and edge totals, per-shard counters and per-source summaries."""
        shards = self._runtime.stats()
        return GraphStats(
            vertices=sum(s.vertices for s in shards),
            edges=sum(s.edges for s in shards),
            shards=shards,
            sources=self._runtime.summary(),
        )

    def edges(self) -> Iterator[tuple[VertexId, VertexId, dict[str, Any]]]:
        """Every edge as ``(src, dst, props)``, shard by shard."""
        return self._runtime.edges()

    def degrees(self) -> dict[VertexId, tuple[int, int]]:
        """``vertex -> (out_degree, in_degree)`` for the whole graph."""
        return self._runtime.degrees()

    def errors(self) -> list[tuple[int, int, VertexId, str]]:
        """Recent failed behaviors as ``(shard, worker clock, vertex, error)``."""
        return self._runtime.errors()

    # -- time travel ------------------------------------------------------------------

    def shard_log_path(self, shard: int) -> str:
        """The directory of shard ``shard``'s RocksDB log (on its node; see
        :meth:`shard_node_ids`)."""
        return shard_log_path(self.log_dir, shard)

    def shard_node_ids(self) -> list[str]:
        """The Ray node each shard runs on now (tasks reading its log go there); waits
        for a restarting shard."""
        return self._ray("shard_node_ids()").shard_node_ids()

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
        for every ``k`` in ``args`` (on Ray in parallel tasks on the shards' nodes)."""
        return self._runtime.read_logs(function, args)

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
        return self._travel.snapshot(at, clock=clock, window=window, timeout=timeout)

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
        found = self._travel.vertex_state(vertex_id, at, clock=clock)
        return self.vertex(vertex_id) if found is None else found

    def history(
        self, vertex_id: VertexId, t0: float | None = None, t1: float | None = None
    ) -> list[dict[str, Any]]:
        """Every state of ``vertex_id`` with time in ``[t0, t1]`` (with its clock, time and
        shard worker clock), preceded by the state it had at ``t0``."""
        return self._travel.history(vertex_id, t0, t1)

    # -- Spark ------------------------------------------------------------------------

    def spark(self) -> Any:
        """The process's Spark session, its executors Ray actors in this Ray cluster (RayDP),
        sized by ``Config.spark_*`` when it starts; reused afterwards, stopped at exit. The
        JVM's own output goes to the driver log (:func:`~chronoray.connect.driver_log_path`)."""
        return self._ray("spark()").spark()

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
        """Run a registered analysis (:data:`chronoray.analysis.ANALYSES`: ``pagerank``,
        ``wcc``, ``degrees``, ``triangles``, ``activity``) on a snapshot taken as
        :meth:`snapshot` takes it (``at=``, ``clock=``, ``window=``, or now); ``params`` go
        to the analysis (e.g. ``weight="count"``), ``engine=`` (``"local"``, ``"ray"``,
        ``"spark"``; default ``"auto"``: by size) chooses where it runs; Spark starts only
        if it runs there. ``result.info["engine"]``/``["engine_reason"]`` say which and why.

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
        return run_analysis(self.spark, name, snapshots, **params)

    # -- live computations, notification streams, indexes -----------------------------

    def start_computation(self, computation: Computation, id: str | None = None) -> LiveComputation:
        """Register an ephemeral computation on the running graph and return its handle.

        It activates at once on every vertex that matches and later on every vertex
        created afterwards, runs as the graph changes, is never logged (the logs are the
        same with or without it), and is queryable while it runs (``.result()``,
        ``.values()``, ``.value(v)``) until ``.stop()``. Its state is in the shards'
        memory: a shard that crashes and restarts comes back without it -- stop it and
        start it again. ``id`` defaults to a fresh one.
        """
        return self._runtime.start_computation(computation, id)

    def computation(self, id: str, computation: Computation) -> LiveComputation:
        """A handle on the running computation ``id`` (``computation``: the object it
        was started with, which turns shard results into the aggregated result)."""
        return self._runtime.computation(id, computation)

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
        return self._runtime.subscribe(
            types, ids, predicate, buffer=buffer, since=since, resume=resume
        )

    def index(self, name: str) -> Index:
        """The secondary index ``name`` declared by a vertex class (``indexes`` class
        attribute): ``.lookup(key)`` and ``.range(lo, hi)`` return vertex ids."""
        names = {n for cls in self.types.classes for n in (getattr(cls, "indexes", None) or {})}
        if name not in names:
            declared = ", ".join(sorted(names)) or "none"
            raise KeyError(f"no index {name!r} (declared by the vertex classes: {declared})")
        return self._runtime.index(name)


def _several(source: Any) -> bool:
    """Whether ``ingest``'s argument is several sources: a list or tuple of sources or of
    iterables (a list of updates is one source)."""
    if not isinstance(source, list | tuple) or not source:
        return False
    return not any(isinstance(item, Update) or item is None for item in source)


def _options(options: IngestOptions | None, keywords: dict[str, Any]) -> IngestOptions:
    """``options`` with the keyword forms (the same field names) applied."""
    base = options if options is not None else IngestOptions()
    if not isinstance(base, IngestOptions):
        raise TypeError(f"options must be an IngestOptions, got {base!r}")
    return base.replace(**keywords) if keywords else base


mark_module_api(globals(), public=("GraphCluster", "GraphStats", "GraphStatus"))
