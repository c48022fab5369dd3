"""Ingestion from Spark: a DataFrame's parts fed by source actors in parallel.

:func:`start_spark_ingest` (what :meth:`GraphCluster.ingest_spark
<chronoray.graph.GraphCluster.ingest_spark>` runs) has Spark check, part and order the
rows (:func:`spark_bridge.ingest.prepare_updates`), then starts one source actor per part
-- the same :class:`~chronoray.ingest.SourceActor` as for files, fed by an
:class:`ArrowPartSource` reading the part's Arrow block from the Ray object store -- and
returns a :class:`SparkIngestJob` that follows them all.

Guarantees:

* **Refused or whole.** With ``on_error="raise"`` a DataFrame with a bad row is refused
  before anything moves (:class:`~chronoray.sources.MalformedRecord` naming the file
  Spark read the first bad row from -- or the source name, for a DataFrame not read from
  files --, the row's position, its fields and the reason, and how many rows are bad);
  files Spark cannot read are :class:`~spark_bridge.ingest.TableUnreadable`, also before
  anything moves; with ``"skip"``
  bad rows are counted and written to the rejects table, the others ingested.
* **Exact time cuts.** A part holds the rows of a set of shards -- so of vertices -- in
  time order; its source actor feeds them in that order and reports its frontier to the
  graph's controller, which holds messages from the future back to the minimum over all
  sources, as for several file sources.
* **Exactly once.** Part ``k`` of ``P`` is the source ``NAME[k/P FINGERPRINT]`` and a
  row's offset is its rank in the part: a source actor that dies is restarted by Ray and
  resumes from what the shards logged, and ingesting the same data again under the same
  name is a no-op. Other data under a name that was used -- which would get other ranks
  -- is refused (:class:`~chronoray.errors.SourceMismatch`) rather than half-applied.
* The rows live in the object store, owned by the driver that started the ingest: it
  must stay until the job ends (:meth:`SparkIngestJob.wait` does).
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import ray

from chronoray.connect import driver_log_path
from chronoray.errors import SourceBusy, SourceMismatch
from chronoray.ingest import IngestJob, IngestReport, ingest_reporter
from chronoray.sources import MalformedRecord
from shards.core import source_channel
from shards.progress import Progress
from spark_bridge.ingest import BlockLayout, PreparedUpdates, UpdateColumns, prepare_updates
from spark_bridge.session import stderr_to
from vertex.annotations import mark_module_api
from vertex.columns import UpdateBatch
from vertex.records import Update

if TYPE_CHECKING:
    from chronoray.graph import GraphCluster

__all__ = [
    "ArrowPartSource",
    "SparkIngestJob",
    "SparkIngestReport",
    "part_source_name",
    "start_spark_ingest",
]

_POLL = 0.2


def part_source_name(source: str, part: int, parts: int, fingerprint: str) -> str:
    """The source name of part ``part`` of ``parts`` of the data with ``fingerprint``."""
    return f"{source}[{part}/{parts} {fingerprint}]"


class ArrowPartSource:
    """One part of a prepared DataFrame, as a :class:`~chronoray.sources.Source`: the
    updates of its Arrow block in the object store, offsets ``1..rows`` in the block's
    (time) order. Read again from the same block after a restart: the same ids."""

    def __init__(
        self, name: str, block: ray.ObjectRef, part: int, layout: BlockLayout, rows: int
    ) -> None:
        self.name = name
        self.block = block
        self.part = part
        self.layout = layout
        self.rows = rows

    def __repr__(self) -> str:
        return f"ArrowPartSource({self.name!r}, rows={self.rows})"

    def records(self) -> Iterator[Update]:
        """The part's updates (the rows were checked in Spark: none is malformed)."""
        yield from self.layout.updates(ray.get(self.block), self.part, self.name)

    def read(self) -> Iterator[Update]:
        """Same as :meth:`records`."""
        return self.records()

    def batches(self) -> Iterator[UpdateBatch | Update]:
        """The part's updates as columns where its block's columns allow (see
        :meth:`~spark_bridge.ingest.BlockLayout.batches`): what a source actor feeds."""
        yield from self.layout.batches(ray.get(self.block), self.part, self.name)


@dataclass
class SparkIngestReport:
    """What an ingest from Spark did: one :class:`~chronoray.ingest.IngestReport` per part,
    the valid rows, the rows rejected (and where they were written), the seconds Spark
    took to check, part, order and hand them over, and the whole wall time."""

    source: str
    parts: list[IngestReport]
    rows: int
    rejected: int
    rejects: str | None
    spark_seconds: float
    seconds: float
    fingerprint: str

    @property
    def updates(self) -> int:
        """Updates read by the parts' sources."""
        return sum(p.updates for p in self.parts)

    @property
    def skipped(self) -> int:
        """Updates a shard had applied before (a resumed or repeated ingest)."""
        return sum(p.skipped for p in self.parts)

    @property
    def rate(self) -> float:
        """Rows per second, Spark's part included."""
        return self.rows / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(asdict(self), updates=self.updates, skipped=self.skipped, rate=self.rate)


@dataclass
class SparkIngestJob:
    """The source actors of one ingest from Spark: follow them with :meth:`wait`."""

    source: str
    prepared: PreparedUpdates
    jobs: list[IngestJob]
    rejects: str | None
    started: float = field(default_factory=time.perf_counter)

    def done(self) -> bool:
        """Whether every part's source ended."""
        return all(job.done() for job in self.jobs)

    def progress(self) -> dict[str, Any]:
        """Rows read over all parts, what a part waits for (if any), and each part's own
        progress."""
        parts = [job.progress() for job in self.jobs]
        waiting = [f"{p['source']}: {p['waiting']}" for p in parts if p.get("waiting")]
        return {
            "source": self.source,
            "read": sum(
                p.get("read", job.total or 0) for p, job in zip(parts, self.jobs, strict=True)
            ),
            "waiting": "; ".join(waiting) or None,
            "parts": parts,
        }

    def wait(self, progress: Progress = False, timeout: float | None = None) -> SparkIngestReport:
        """Block until every part ended; the report (the first part's error raised here).
        ``progress``: one bar over all parts (``True``) or a callable getting the rows
        read so far. Spark's cached copy of the rows is freed at the end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with ingest_reporter(progress, self.source, self.prepared.rows) as bar:
                while not self.done():
                    state = self.progress()
                    bar(state)
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeoutError(f"source {self.source} still running: {state}")
                    time.sleep(_POLL)
                reports = [job.wait() for job in self.jobs]
                bar({"read": sum(r.updates for r in reports)})
        finally:
            self.prepared.release()
        return SparkIngestReport(
            source=self.source,
            parts=reports,
            rows=self.prepared.rows,
            rejected=self.prepared.rejected,
            rejects=self.rejects,
            spark_seconds=self.prepared.seconds,
            seconds=time.perf_counter() - self.started,
            fingerprint=self.prepared.fingerprint,
        )


def start_spark_ingest(
    graph: GraphCluster,
    frame: Any,
    columns: UpdateColumns,
    *,
    active: Collection[str],
    source: str,
    parts: int,
    on_error: Literal["raise", "skip"],
    rejects: str | None,
) -> SparkIngestJob:
    """Check and prepare ``frame`` in Spark, then start a source actor per part (see the
    module doc); raises before starting anything if the data is refused. ``active``: the
    sources feeding the graph now."""
    started = time.perf_counter()
    busy = sorted(n for n in active if n.startswith(f"{source}["))
    if busy:
        raise SourceBusy(f"source {source!r} is already feeding this graph ({', '.join(busy)})")
    prepared = prepare_updates(
        frame,
        columns,
        num_shards=graph.num_shards,
        parts=parts,
        source=source,
        on_error=on_error,
        rejects=rejects,
    )
    try:
        return _start_parts(graph, source, parts, prepared, rejects, started)
    except BaseException:
        prepared.release()
        raise


def _start_parts(
    graph: GraphCluster,
    source: str,
    parts: int,
    prepared: PreparedUpdates,
    rejects: str | None,
    started: float,
) -> SparkIngestJob:
    """Refuse bad or other data, else start one source actor per part of ``prepared``."""
    if prepared.first_bad is not None:
        bad = prepared.first_bad
        raise MalformedRecord(
            source if bad.file is None else bad.file,
            bad.row,
            bad.text,
            f"{bad.reason} ({prepared.rejected:,} bad rows in all; nothing ingested)",
        )
    _check_same_data(graph, source, parts, prepared.fingerprint)
    part_sources = [
        ArrowPartSource(
            part_source_name(source, p, parts, prepared.fingerprint),
            prepared.blocks[p],
            p,
            prepared.layout,
            prepared.counts[p],
        )
        for p in sorted(prepared.blocks)
    ]
    # Ray says once per process, on the terminal, that a restarted actor needs its
    # arguments' objects (ray#53727): this driver keeps the blocks until the job ends.
    # The parts open together: each is in time order, and the shards merge them by
    # event time (one opened after another had gone on would find its start late)
    with stderr_to(driver_log_path()):
        jobs = graph.ingest_many(part_sources, wait=False)
    for job, part in zip(jobs, part_sources, strict=True):
        job.total = part.rows
    return SparkIngestJob(source, prepared, jobs, rejects if prepared.rejected else None, started)


def _check_same_data(graph: GraphCluster, source: str, parts: int, fingerprint: str) -> None:
    """Refuse other data (or another number of parts) under a source name used before:
    the part sources of ``source`` that some shard applied updates of must be these."""
    prefix = source_channel(f"{source}[")
    used = re.compile(re.escape(source) + r"\[\d+/\d+ [0-9a-f]+\]")
    mine = re.compile(re.escape(source) + rf"\[\d+/{parts} {fingerprint}\]")
    channels = {c for s in graph.stats().shards for c in s.applied if c.startswith(prefix)}
    names = {c[len(source_channel("")) :] for c in channels}
    other = sorted(n for n in names if used.fullmatch(n) and not mine.fullmatch(n))
    if other:
        raise SourceMismatch(
            f"source {source!r} was ingested before from other rows or in another number of "
            f"parts ({', '.join(other)}; now {parts} parts of data {fingerprint}): offsets are "
            "ranks in a part, so they would not name the same rows -- give new rows a new "
            "source name"
        )


mark_module_api(globals())
