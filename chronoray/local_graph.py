"""The in-process runtime behind ``GraphCluster(runtime="local")``.

:class:`LocalGraph` runs the graph's shards as ``ShardCore`` s in this process
(:class:`~ephemeral.local.LiveLocalRuntime`: live computations, streams and indexes
included), with RocksDB logs under the log directory, the same manifest and the same
:class:`~shards.coordinator.SourceCoordinator` as on Ray: a graph written by one runtime
opens on the other. Ingestion runs in the calling thread and returns once everything is
applied; time cuts read the logs in this process. What needs a cluster -- named graphs,
source actors, Spark -- is Ray's only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from chronoray.config import Config
from chronoray.controller import SOURCES_FILE, SUMMARY_KEYS, read_summary, write_summary
from chronoray.deploy import shard_log_path
from chronoray.ingest import FinishedJob, IngestJob, IngestReport, ingest_reporter, report_of
from chronoray.manifest import Manifest
from chronoray.options import IngestOptions
from chronoray.sources import RejectWriter, Source, check_order, late_record, read_columns
from ephemeral.computation import Computation
from ephemeral.live import Index, LiveComputation, Subscription
from ephemeral.local import LiveLocalRuntime
from shards.feed import SourceFeed
from shards.logstore import LogStore, RocksLogStore
from shards.protocol import ShardStats
from snapshot.snapshot import Snapshot, SnapshotMeta, build_local_snapshot
from vertex.annotations import mark_module_api
from vertex.columns import UpdateBatch
from vertex.model import VertexTypes
from vertex.records import Update, VertexId

__all__ = ["LocalGraph"]

_CHUNK = 100  # updates of one source in a turn while several feed the graph


class LocalGraph:
    """A graph of ``config.num_shards`` shards in this process, logged under ``log_dir``."""

    def __init__(
        self, config: Config, log_dir: Path, manifest: Manifest, types: VertexTypes
    ) -> None:
        self.config = config
        self.log_dir = log_dir
        self.manifest = manifest
        self.types = types
        manifest.shard_nodes = ["local"] * config.num_shards
        manifest.write(log_dir)

        def store(shard: int) -> RocksLogStore:
            path = shard_log_path(log_dir, shard)
            Path(path).mkdir(parents=True, exist_ok=True)
            return RocksLogStore(path, sync=config.sync)

        self.runtime = LiveLocalRuntime(
            config.num_shards,
            types,
            store,
            shard_checkpoint_interval=config.shard_checkpoint_interval,
            batch_size=config.batch_size,
            linger=config.batch_linger,
        )
        self._summary_path = log_dir / SOURCES_FILE
        self._summary = read_summary(self._summary_path)

    @property
    def num_shards(self) -> int:
        """Number of shards."""
        return self.config.num_shards

    # -- ingestion --------------------------------------------------------------------

    def ingest(
        self, given: list[tuple[Source, bool]], options: IngestOptions
    ) -> list[IngestReport | IngestJob]:
        """Feed the ``given`` sources together in this thread (merged by event time; the
        flag beside each, fed from the driver, holds for all here) and return their
        reports once every update is applied (``wait=False``: finished jobs)."""
        sources = [source for source, _ in given]
        if len({s.name for s in sources}) < len(sources):
            raise ValueError("several sources at once need distinct names")
        if options.on_batch is not None:
            raise ValueError("on_batch= needs runtime='ray' with in_driver=True")
        started = time.perf_counter()
        rejects = options.rejects_path
        reads = {
            s.name: read_columns(s, on_error=options.on_error, rejects=rejects) for s in sources
        }
        by_name = {s.name: s for s in sources}
        writer = RejectWriter(rejects) if rejects is not None else None

        def prepare(feed: SourceFeed) -> None:
            source = by_name[feed.source]
            where = str(getattr(source, "where", source.name))
            feed.reorder.where = where
            feed.offsets_increase = getattr(source, "offsets_increase", True)
            if writer is not None:
                feed.reorder.on_late = lambda u, w: writer.write(late_record(u, w, where))
            if feed.reorder.allowed_lateness is None:
                check_order(source, feed.reorder.floor, feed.applied_before)

        total = options.total if len(sources) == 1 else None
        name = sources[0].name if len(sources) == 1 else f"{len(sources)} sources"
        try:
            with ingest_reporter(options.progress, name, total) as bar:
                read = [0]
                streams = {n: _ticking(u, read, bar) for n, (u, _) in reads.items()}
                self.runtime.ingest_many(
                    streams,
                    chunk=_CHUNK,
                    allowed_lateness=options.allowed_lateness,
                    late=options.late,
                    idle_timeout=options.idle_timeout,
                    prepare=prepare,
                )
                bar({"read": read[0]})
        finally:
            if writer is not None:
                writer.close()
        seconds = time.perf_counter() - started
        reports = [
            report_of(self.runtime.feeds[s.name], s, reads[s.name][1], seconds) for s in sources
        ]
        for report in reports:
            self._summary[report.source] = {k: getattr(report, k) for k in SUMMARY_KEYS}
        write_summary(self._summary_path, self._summary)
        if options.wait:
            return list(reports)
        return [FinishedJob(r) for r in reports]

    # -- queries ----------------------------------------------------------------------

    def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """Type, clock, time, state and edges of a vertex (``VertexNotFound``)."""
        return self.runtime.vertex(vertex_id)

    def stats(self) -> list[ShardStats]:
        """Every shard's counters."""
        return [core.stats() for core in self.runtime.cores]

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per source name, what its last ingestion read and its event-time counters."""
        return dict(self._summary)

    def edges(self) -> Iterator[tuple[VertexId, VertexId, dict[str, Any]]]:
        """Every edge as ``(src, dst, props)``, shard by shard."""
        for core in self.runtime.cores:
            for src, record in list(core.vertices.items()):
                for dst, props in record.out_edges.items():
                    yield src, dst, dict(props)

    def degrees(self) -> dict[VertexId, tuple[int, int]]:
        """``vertex -> (out_degree, in_degree)``."""
        return {
            v: (len(r.out_edges), len(r.in_edges))
            for core in self.runtime.cores
            for v, r in core.vertices.items()
        }

    def errors(self) -> list[tuple[int, int, VertexId, str]]:
        """Recent failed behaviors as ``(shard, worker clock, vertex, error)``."""
        return [
            (k, wc, v, e)
            for k, core in enumerate(self.runtime.cores)
            for wc, v, e in core.recent_errors
        ]

    def wait_idle(self, timeout: float | None = None) -> None:
        """Deliver every pending message."""
        self.runtime.wait_idle()

    # -- the logs ---------------------------------------------------------------------

    def wait_until_complete(self, t: float, timeout: float) -> None:
        """Ingestion returns once everything is applied: nothing to wait for."""

    def build_snapshot(
        self,
        meta: SnapshotMeta,
        *,
        clock: tuple[int, ...] | None = None,
        at: float | None = None,
        since: float | None = None,
    ) -> Snapshot:
        """Every shard's part of the cut, rebuilt in this process from its log."""
        self.runtime.wait_idle()
        stores = [_logged(core.store) for core in self.runtime.cores]
        return build_local_snapshot(stores, meta, clock=clock, at=at, since=since)

    def read_log(self, shard: int, function: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """``function(store, *args, **kw)`` against ``shard``'s log."""
        return function(self.runtime.cores[shard].store, *args, **kw)

    def read_logs(
        self, function: Callable[..., Any], args: dict[int, tuple[Any, ...]]
    ) -> dict[int, Any]:
        """``function(store, *args[k])`` against shard ``k``'s log for every ``k``."""
        return self.runtime.read_logs(function, args)

    def clocks(self) -> tuple[int, ...]:
        """Every shard's worker clock now (messages delivered first)."""
        self.runtime.wait_idle()
        return tuple(core.worker_clock for core in self.runtime.cores)

    def crash(self, shard: int) -> None:
        """Lose ``shard``'s memory and rebuild it from its log, as a process kill would."""
        self.runtime.crash(shard)

    def crash_coordinator(self) -> None:
        """Lose the source coordinator's memory, as a kill of the Ray controller would."""
        self.runtime.crash_coordinator()

    # -- live computations ------------------------------------------------------------

    def start_computation(self, computation: Computation, id: str | None = None) -> LiveComputation:
        """Start an ephemeral live computation."""
        return self.runtime.start_computation(computation, id)

    def computation(self, id: str, computation: Computation) -> LiveComputation:
        """A handle on the running computation ``id``."""
        return self.runtime.computation(id, computation)

    def subscribe(self, *args: Any, **kwargs: Any) -> Subscription:
        """A notification stream of vertex updates."""
        return self.runtime.subscribe(*args, **kwargs)

    def index(self, name: str) -> Index:
        """A secondary index declared by the vertex classes."""
        return self.runtime.index(name)

    def close(self) -> None:
        """Close every log."""
        self.runtime.close()


def _logged(store: LogStore | None) -> LogStore:
    """A shard's log (a local graph always logs)."""
    assert store is not None
    return store


def _ticking(
    updates: Iterable[Update | UpdateBatch | None],
    read: list[int],
    bar: Callable[[dict[str, Any]], None],
) -> Iterator[Update | UpdateBatch | None]:
    """``updates``, counting them into ``read[0]`` and telling ``bar`` every thousand."""
    for update in updates:
        if update is not None:
            before = read[0]
            read[0] += len(update) if isinstance(update, UpdateBatch) else 1
            if read[0] // 1000 > before // 1000:
                bar({"read": read[0]})
        yield update


mark_module_api(globals())
