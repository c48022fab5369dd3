"""What ``chronoray ingest`` asks for, as one value (:class:`IngestRequest`), and how it is
fed: edge files through source actors of a graph, a table Spark reads, or an edge file
through a gateway. The lines returned say what was new, what was in the graph already
and where a resume started."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronoray.cli.errors import Failed
from chronoray.cli.rendering import console, err_console
from shards.watermark import show_time

__all__ = [
    "IngestRequest",
    "SparkTable",
    "feed_files",
    "feed_table",
    "feed_through",
    "report_lines",
]


@dataclass(frozen=True)
class SparkTable:
    """``ingest --spark``: the table Spark reads and the columns that make an update of
    each row (``props``: property name -> column)."""

    path: Path
    fmt: str
    src: str
    dst: str
    time: str
    kind: str | None
    props: dict[str, str]
    ids: str
    parts: int | None
    header: bool


@dataclass(frozen=True)
class IngestRequest:
    """What one ``chronoray ingest`` feeds and how: edge files ``paths`` (or a Spark
    ``table``), the event-time and error policy (the fields of
    :class:`~chronoray.options.IngestOptions`), the source name, and for a gateway the
    batch size."""

    paths: tuple[Path, ...]
    fmt: str
    table: SparkTable | None = None
    shards: int | None = None
    source_id: str | None = None
    detach: bool = False
    on_error: str = "raise"
    rejects: Path | None = None
    sort: bool = False
    allowed_lateness: float | None = None
    late: str = "reject"
    idle_timeout: float | None = None
    records_per_batch: int = 1000

    def rejects_in(self, folder: Path) -> IngestRequest:
        """This request, writing what it sets aside (malformed records, late updates) to
        ``folder/rejects.tsv`` (a Spark table: ``rejects.parquet``) unless told where."""
        sets_aside = self.on_error == "skip" or (
            self.allowed_lateness is not None and self.late == "reject"
        )
        if not sets_aside or self.rejects is not None:
            return self
        name = "rejects.tsv" if self.table is None else "rejects.parquet"
        return dataclasses.replace(self, rejects=folder / name)

    def options(self) -> dict[str, Any]:
        """The keywords of :meth:`GraphCluster.ingest <chronoray.graph.GraphCluster.ingest>`
        this request sets."""
        return {
            "on_error": self.on_error,
            "rejects": self.rejects,
            "sort": self.sort,
            "allowed_lateness": self.allowed_lateness,
            "late": self.late,
            "idle_timeout": self.idle_timeout or 0.0,
        }


def feed_files(graph: Any, request: IngestRequest) -> list[str] | None:
    """Feed the edge files of ``request`` into ``graph`` (several: at once, merged by event
    time); the summary lines (``None``: detached)."""
    from chronoray.sources import MalformedRecord, OutOfOrder, open_source

    sources = [
        open_source(p, request.fmt, name=request.source_id)  # type: ignore[arg-type]
        for p in request.paths
    ]
    options = request.options()
    wait = not request.detach
    try:
        if len(sources) == 1:
            progress = sys.stderr.isatty()
            reports = [graph.ingest(sources[0], progress=progress, wait=wait, **options)]
        else:
            reports = graph.ingest_many(sources, wait=wait, **options)
    except MalformedRecord as exc:
        raise Failed(
            f"malformed record at {exc}: everything before it was ingested, nothing after it "
            "(--on-error skip counts such records and goes on)"
        ) from exc
    except OutOfOrder as exc:
        raise Failed(f"{exc}; nothing of this file was ingested") from exc
    except KeyboardInterrupt:
        raise Failed(
            "interrupted: what the graph acknowledged is logged; run the same command again to "
            "resume (what the graph holds is skipped)"
        ) from None
    if request.detach:
        for job in reports:
            console.print(f"source {job.name} feeding graph {graph.name}")
        return None
    lines = [report_lines(report, request.rejects, not request.sort) for report in reports]
    return [*graph.file_notes, *lines]


def report_lines(report: Any, rejects: Path | None, lines: bool = True) -> str:
    """One ingestion's counters: what was new, what was in the graph already and where a
    resume started (``lines``: the source's offsets are line numbers), event time too."""
    where = "line" if lines else "offset"
    start = (
        f"resumed after {where} {report.resumed_after:,}"
        if report.resumed_after
        else "a new source"
    )
    text = (
        f"ingested {report.source}: {report.updates:,} updates read in {report.seconds:.1f} s "
        f"({report.rate:,.0f}/s): {report.new:,} new, {report.skipped:,} already in the graph "
        f"({start}); rejected {report.rejected:,}"
        + (f" (written to {rejects})" if report.rejected else "")
    )
    if report.out_of_order or report.late_rejected or report.late_applied:
        text += (
            f"\n  event time: {report.out_of_order:,} updates out of order, the latest by "
            f"{show_time(report.max_lateness)} s; late: {report.late_rejected:,} rejected"
            + (f" (written to {rejects})" if report.late_rejected and rejects else "")
            + f", {report.late_applied:,} applied at the watermark"
        )
    return text


def feed_table(graph: Any, request: IngestRequest) -> list[str]:
    """``ingest --spark``: Spark reads the table, checks, parts and orders its rows, and
    source actors feed the parts (see ``GraphCluster.ingest_spark``); the summary line."""
    from chronoray.sources import MalformedRecord
    from spark_bridge.ingest import read_table

    table = request.table
    assert table is not None
    with console.status("Spark: reading the table (the first start takes ~10 s)"):
        frame = read_table(graph.spark(), str(table.path), table.fmt, table.header)  # type: ignore[arg-type]
    try:
        with console.status("Spark: checking, parting and ordering the rows"):
            job = graph.ingest_spark(
                frame,
                src=table.src,
                dst=table.dst,
                time=table.time,
                kind=table.kind,
                props=table.props,
                source=request.source_id or table.path.name,
                ids=table.ids,
                parts=table.parts,
                on_error=request.on_error,
                rejects=request.rejects,
                wait=False,
            )
        report = job.wait(progress=sys.stderr.isatty())
    except MalformedRecord as exc:
        raise Failed(f"bad row at {exc}: nothing was ingested (see --on-error skip)") from exc
    graph.wait_idle()
    return [
        f"ingested {report.rows:,} rows of {table.path} in {len(report.parts)} parts in "
        f"{report.seconds:.1f} s ({report.rate:,.0f}/s; Spark {report.spark_seconds:.1f} s): "
        f"{sum(p.new for p in report.parts):,} new, {report.skipped:,} already in the graph; "
        f"rejected {report.rejected:,}"
        + (f" (written to {report.rejects})" if report.rejects else "")
    ]


def feed_through(client: Any, server: str, request: IngestRequest) -> list[str]:
    """``ingest --server``: feed the one edge file of ``request`` through the gateway
    ``client`` talks to, with a progress bar; the summary line."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from chronoray.ingest import count_lines
    from chronoray.sources import MalformedRecord, open_source

    (path,) = request.paths
    source = open_source(path, request.fmt, name=request.source_id)  # type: ignore[arg-type]
    total = count_lines(path)
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(f"ingest {source.name} via {server}", total=total)
        try:
            result = client.ingest(
                source,
                batch_size=request.records_per_batch,
                retry=30.0,
                on_ack=lambda ack: bar.update(task, completed=ack.through_offset),
            )
        except MalformedRecord as exc:
            raise Failed(
                f"malformed record at {exc}: everything before it was ingested, nothing after it"
            ) from exc
    return [
        f"ingested {result.sent - result.skipped:,} new records of {result.source} through "
        f"{server} in {result.seconds:.1f} s ({result.rate:,.0f}/s): {result.batches:,} "
        f"batches, each acknowledged once logged; resumed after offset "
        f"{result.resumed_after:,} ({result.skipped:,} records sent again were applied already)"
    ]
