"""Results as the graph changes: ``chronoray live`` (a live computation while a file is
fed) and ``chronoray subscribe`` (a notification stream of vertex updates)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from chronoray.cli.app import main
from chronoray.cli.feeding import report_lines
from chronoray.cli.options import (
    Output,
    PathArg,
    format_option,
    output_options,
    shards_option,
    vertex_id,
)
from chronoray.cli.rendering import (
    Column,
    View,
    console,
    err_console,
    print_view,
    short,
    show_date,
)
from chronoray.cli.target import ClusterTarget, SubscribeRequest, Target, target_options

__all__ = ["live", "live_table", "live_view", "subscribe"]

_LIVE_CHOICES = ["degrees", "pagerank", "bfs", "wcc"]


def _live_computation(name: str, source: str | None, tol: float) -> Any:
    import chronoray as cr

    if name == "degrees":
        return cr.DegreeHistogram()
    if name == "pagerank":
        return cr.LivePageRank(tol=tol)
    if name == "wcc":
        return cr.WeaklyConnectedComponents()
    if source is None:
        raise click.UsageError("--computation bfs needs --bfs-source")
    return cr.BfsDepth(source=vertex_id(source))


def live_view(name: str, live: Any, updates: int, seconds: float) -> View:
    """A live computation's current result as a :class:`View` (what ``chronoray live``
    redraws, and prints as CSV or JSON): degrees (the first 15), PageRank (the top 10),
    BFS depths, or WCC's measures."""
    rate = updates / seconds if seconds else 0.0
    title = f"live {name}: {updates:,} updates in {seconds:.1f} s ({rate:,.0f}/s)"
    count = "{:,}".format
    if name == "degrees":
        result = live.result()
        degrees = sorted(set(result["out"]) | set(result["in"]))[:15]
        columns = [Column("degree"), Column("vertices (out)", show=count),
                   Column("vertices (in)", show=count)]  # fmt: skip
        rows = [[d, result["out"].get(d, 0), result["in"].get(d, 0)] for d in degrees]
    elif name == "pagerank":
        ranked = sorted(live.values().items(), key=lambda kv: -kv[1])[:10]
        columns = [Column("vertex"), Column("pagerank", show="{:.6f}".format)]
        rows = [[vertex, rank] for vertex, rank in ranked]
    elif name == "bfs":
        columns = [Column("depth"), Column("vertices", show=count)]
        rows = [[depth, n] for depth, n in live.result().items()]
    else:
        columns = [Column("measure", justify="left"), Column("value", show=count)]
        rows = [[key, value] for key, value in live.result().items()]
    return View(title, columns, rows)


def live_table(name: str, live: Any, updates: int, seconds: float) -> Table:
    """A table of a live computation's current result, fitting the console."""
    return live_view(name, live, updates, seconds).table(console.width)


@main.command()
@click.argument("path", type=PathArg(exists=True, dir_okay=False, path_type=Path))
@format_option
@target_options(exists=False)
@shards_option
@click.option(
    "--computation",
    "name",
    type=click.Choice(_LIVE_CHOICES),
    default="degrees",
    help="The live computation to run during ingestion.",
)
@click.option("--bfs-source", default=None, help="Source vertex for bfs.")
@click.option("--tol", type=float, default=1e-6, help="PageRank tolerance.")
@click.option("--refresh", type=float, default=0.5, help="Seconds per redraw.")
@output_options(
    json_help="Print the final result as JSON (title, columns, rows); the ingest report "
    "goes to stderr.",
    csv_help="Print the final result as CSV; the ingest report goes to stderr.",
)
def live(
    path: Path,
    fmt: str,
    target: ClusterTarget,
    shards: int | None,
    name: str,
    bfs_source: str | None,
    tol: float,
    refresh: float,
    output: Output,
) -> None:
    """Ingest an edge file with a live computation, showing its result as it changes (on a
    terminal; else, and with --json or --csv, only the final result)."""
    from rich.live import Live

    from chronoray.sources import open_source

    computation = _live_computation(name, bfs_source, tol)
    with target.open(shards=shards, create=True) as graph:
        source = open_source(path, fmt)  # type: ignore[arg-type]
        handle = graph.start_computation(computation)
        job = graph.ingest(source, wait=False)
        notes = list(graph.file_notes)
        started = time.perf_counter()
        if console.is_terminal and output == "table":  # redrawn; piped: the final one only
            with Live(console=console, auto_refresh=False, transient=True) as screen:
                while not job.done():
                    read = job.progress().get("read", 0)
                    screen.update(
                        live_table(name, handle, read, time.perf_counter() - started),
                        refresh=True,
                    )
                    time.sleep(refresh)
        report = job.wait()
        graph.wait_idle()
        said = console if output == "table" else err_console  # stdout: the result only
        for line in [*notes, report_lines(report, None)]:
            said.print(line, soft_wrap=True)
        said.print(f"[green]done[/]; final result of {handle.id}:")
        view = live_view(name, handle, report.updates, time.perf_counter() - started)
        handle.stop()
    data = {"title": view.title, "columns": [c.name for c in view.columns], "rows": view.rows}
    print_view(view, output, data)


@main.command()
@target_options(server=True, exists=False)
@click.option(
    "--ingest",
    "ingest_path",
    type=PathArg(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Ingest this file while printing its updates' notifications.",
)
@format_option
@click.option("--type", "types", multiple=True, help="Only vertices of this type (repeatable).")
@click.option("--vertex", "vertices", multiple=True, help="Only this vertex id (repeatable).")
@click.option(
    "--predicate",
    default=None,
    help="Only updates passing this registered predicate (created, deleted, changed).",
)
@click.option(
    "--since",
    type=float,
    default=None,
    help="Replay from the log from this event time first  [default: from the start without "
    "--ingest and --graph, else no replay]",
)
@click.option(
    "--limit", type=int, default=None, help="Stop after this many notifications  [default: none]"
)
@click.option("--buffer", type=int, default=10_000, help="Per-shard buffer.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object per line.")
def subscribe(
    target: Target,
    ingest_path: Path | None,
    fmt: str,
    types: tuple[str, ...],
    vertices: tuple[str, ...],
    predicate: str | None,
    since: float | None,
    limit: int | None,
    buffer: int,
    as_json: bool,
) -> None:
    """Print a notification stream of vertex updates: replayed from the logs (--since),
    and/or live while --ingest feeds a file (or, with --graph or --server, while others
    ingest)."""
    from chronoray.gateway.predicates import PREDICATES

    if predicate is not None and predicate not in PREDICATES:
        raise click.BadParameter(
            f"{predicate!r}; registered: {', '.join(sorted(PREDICATES))}", param_hint="--predicate"
        )
    request = SubscribeRequest(
        types=types,
        ids=[vertex_id(v) for v in vertices] or None,
        predicate=predicate,
        since=since,
        limit=limit,
        buffer=buffer,
        ingest_path=ingest_path,
        fmt=fmt,
    )
    for item in target.notifications(request):
        if isinstance(item, str):  # a note about the file fed
            err_console.print(item, soft_wrap=True)
        else:
            _print_notification(item, as_json)


def _print_notification(item: Any, as_json: bool) -> None:
    from ephemeral.notify import Lagged

    if isinstance(item, Lagged):
        row: dict[str, Any] = {"lagged": item.missed, "shard": item.shard}
        if as_json:
            click.echo(json.dumps(row))
        else:
            console.print(f"[yellow]lagged:[/] {item.missed:,} notifications of shard {item.shard}")
        return
    if as_json:
        click.echo(json.dumps(item._asdict(), default=str))
        return
    state = "deleted" if item.state is None else short(dict(item.state), 80)
    console.print(
        f"{item.vertex} [dim]{item.type_name} clock {item.clock} t={show_date(item.time)} "
        f"shard {item.shard} wc {item.wc}[/] {state}"
    )
