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
from chronoray.cli.options import PathArg, format_option, shards_option, vertex_id
from chronoray.cli.rendering import console, err_console, short, show_date
from chronoray.cli.target import ClusterTarget, SubscribeRequest, Target, target_options

__all__ = ["live", "live_table", "subscribe"]

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


def live_table(name: str, live: Any, updates: int, seconds: float) -> Table:
    """A table of a live computation's current result (what ``chronoray live`` redraws)."""
    rate = updates / seconds if seconds else 0.0
    table = Table(title=f"live {name}: {updates:,} updates in {seconds:.1f} s ({rate:,.0f}/s)")
    if name == "degrees":
        result = live.result()
        table.add_column("degree", justify="right")
        table.add_column("vertices (out)", justify="right")
        table.add_column("vertices (in)", justify="right")
        for degree in sorted(set(result["out"]) | set(result["in"]))[:15]:
            out_n, in_n = result["out"].get(degree, 0), result["in"].get(degree, 0)
            table.add_row(str(degree), f"{out_n:,}", f"{in_n:,}")
    elif name == "pagerank":
        values = live.values()
        table.add_column("vertex", justify="right")
        table.add_column("pagerank", justify="right")
        for vertex, rank in sorted(values.items(), key=lambda kv: -kv[1])[:10]:
            table.add_row(str(vertex), f"{rank:.6f}")
    elif name == "bfs":
        table.add_column("depth", justify="right")
        table.add_column("vertices", justify="right")
        for depth, count in live.result().items():
            table.add_row(str(depth), f"{count:,}")
    else:
        table.add_column("measure")
        table.add_column("value", justify="right")
        for key, value in live.result().items():
            table.add_row(key, f"{value:,}")
    return table


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
def live(
    path: Path,
    fmt: str,
    target: ClusterTarget,
    shards: int | None,
    name: str,
    bfs_source: str | None,
    tol: float,
    refresh: float,
) -> None:
    """Ingest an edge file with a live computation, showing its result as it changes."""
    from rich.live import Live

    from chronoray.sources import open_source

    computation = _live_computation(name, bfs_source, tol)
    with target.open(shards=shards, create=True) as graph:
        source = open_source(path, fmt)  # type: ignore[arg-type]
        handle = graph.start_computation(computation)
        job = graph.ingest(source, wait=False)
        notes = list(graph.file_notes)
        started = time.perf_counter()
        if console.is_terminal:  # redrawn in place; piped, only the final table is printed
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
        for line in [*notes, report_lines(report, None)]:
            console.print(line, soft_wrap=True)
        console.print(f"[green]done[/]; final result of {handle.id}:")
        console.print(live_table(name, handle, report.updates, time.perf_counter() - started))
        handle.stop()


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
