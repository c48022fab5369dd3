"""The ``chronoray`` command line.

Every option can also be set by an environment variable ``CHRONORAY_<COMMAND>_<OPTION>``
(shown by ``--help``); graph settings also read ``CHRONORAY_*`` (see ``Config``).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

__all__ = ["main"]

console = Console()
_err = Console(stderr=True)


def _vertex_id(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


@click.group(context_settings={"auto_envvar_prefix": "CHRONORAY", "show_default": True})
@click.version_option(package_name="chronoray")
def main() -> None:
    """chronoray: live, history-aware graph processing on Ray."""


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["snap", "bitcoin-csv"]),
    default="snap",
    envvar="CHRONORAY_INGEST_FORMAT",
    show_envvar=True,
)
@click.option(
    "--shards",
    type=int,
    default=None,
    show_envvar=True,
    help="Shard actors [default: 2 for a new graph, the graph's own count for an existing one].",
)
@click.option("--log-dir", type=click.Path(path_type=Path), required=True, show_envvar=True)
@click.option(
    "--on-error",
    type=click.Choice(["raise", "skip"]),
    default="raise",
    show_envvar=True,
    help="raise: stop at a malformed record; skip: count it and write it to --rejects.",
)
@click.option(
    "--rejects",
    type=click.Path(path_type=Path),
    default=None,
    show_envvar=True,
    help="File for skipped records [default: LOG_DIR/rejects.tsv].",
)
@click.option(
    "--source-id", default=None, show_envvar=True, help="Source name [default: file name]."
)
def ingest(
    path: Path,
    fmt: str,
    shards: int | None,
    log_dir: Path,
    on_error: str,
    rejects: Path | None,
    source_id: str | None,
) -> None:
    """Ingest an edge file into the graph persisted in LOG_DIR (created if new)."""
    from chronoray.sources import MalformedRecord, open_source

    source = open_source(path, fmt, name=source_id)  # type: ignore[arg-type]
    if on_error == "skip" and rejects is None:
        rejects = log_dir / "rejects.tsv"
    graph = _open_or_create(log_dir, shards)
    try:
        report = graph.ingest(
            source,
            on_error=on_error,
            rejects=rejects,  # type: ignore[arg-type]
            progress=sys.stderr.isatty(),
        )
    except MalformedRecord as exc:
        graph.close()
        _err.print(f"[red]error:[/] malformed record at {exc}")
        _err.print("everything before it was ingested; nothing after it (see --on-error skip)")
        sys.exit(2)
    stats = graph.stats()
    graph.close()
    console.print(
        f"ingested {report.updates:,} updates from {report.source} in {report.seconds:.1f} s "
        f"({report.rate:,.0f}/s); rejected {report.rejected:,}"
        + (f" (written to {rejects})" if report.rejected else "")
    )
    console.print(_stats_table(stats.as_dict()))


@main.command()
@click.option(
    "--log-dir", type=click.Path(exists=True, path_type=Path), required=True, show_envvar=True
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def stats(log_dir: Path, as_json: bool) -> None:
    """Vertex and edge totals, per shard, of the graph in LOG_DIR (reopened from its logs)."""
    from chronoray.graph import GraphCluster

    with GraphCluster.open(log_dir) as graph:
        result = graph.stats().as_dict()
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
    else:
        console.print(_stats_table(result))


@main.command()
@click.argument("vertex_id")
@click.option(
    "--log-dir", type=click.Path(exists=True, path_type=Path), required=True, show_envvar=True
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def vertex(vertex_id: str, log_dir: Path, as_json: bool) -> None:
    """State and edges of one vertex of the graph in LOG_DIR."""
    from chronoray.graph import GraphCluster
    from shards.core import VertexNotFound

    with GraphCluster.open(log_dir) as graph:
        try:
            found = graph.vertex(_vertex_id(vertex_id))
        except VertexNotFound as exc:
            _err.print(f"[red]error:[/] {exc} in {log_dir}")
            sys.exit(1)
    if as_json:
        click.echo(json.dumps(found, indent=2, default=str))
        return
    console.print(
        f"[bold]vertex {vertex_id}[/] ({found['type']}, clock {found['clock']}, "
        f"time {found['time']})"
    )
    for key, value in sorted(found["state"].items()):
        console.print(f"  {key} = {value!r}")
    for title, edges in (("out-edges", found["out_edges"]), ("in-edges", found["in_edges"])):
        table = Table(title=f"{title} ({len(edges)})")
        columns = sorted({k for props in edges.values() for k in props})
        table.add_column("vertex")
        for column in columns:
            table.add_column(column)
        for other, props in sorted(edges.items(), key=lambda kv: str(kv[0]))[:50]:
            table.add_row(str(other), *(str(props.get(c, "")) for c in columns))
        console.print(table)


@main.command("snapshot")
@click.option(
    "--log-dir", type=click.Path(exists=True, path_type=Path), required=True, show_envvar=True
)
@click.option("--at", "at", type=float, default=None, help="Event time of the cut.")
@click.option("--clock", default=None, help="Comma-separated shard worker clocks.")
@click.option("--window", nargs=2, type=float, default=None, help="T0 T1: changes in [T0, T1].")
@click.option("--out", type=click.Path(path_type=Path), required=True, show_envvar=True)
def snapshot_cmd(
    log_dir: Path,
    at: float | None,
    clock: str | None,
    window: tuple[float, float] | None,
    out: Path,
) -> None:
    """Write a consistent past graph as OUT/vertices.parquet and OUT/edges.parquet."""
    from chronoray.graph import GraphCluster

    vector = [int(c) for c in clock.split(",")] if clock else None
    with GraphCluster.open(log_dir) as graph:
        snap = graph.snapshot(at, clock=vector, window=window or None)
        paths = snap.save_parquet(out)
    meta = snap.meta
    console.print(
        f"{snap!r} built in {meta.build_seconds:.2f} s, {meta.replayed:,} log entries replayed "
        f"(cut {meta.cut}); wrote {paths[0]} and {paths[1]}"
    )


@main.command()
@click.argument("algo", type=click.Choice(["pagerank", "wcc", "degrees", "triangles", "activity"]))
@click.option(
    "--log-dir", type=click.Path(exists=True, path_type=Path), required=True, show_envvar=True
)
@click.option("--at", "at", type=float, default=None, help="Event time of the snapshot.")
@click.option("--clock", default=None, help="Comma-separated shard worker clocks.")
@click.option(
    "--window",
    nargs=2,
    type=float,
    default=None,
    help="T0 T1: the window's graph; for activity, the span cut into --buckets.",
)
@click.option("--times", default=None, help="activity: comma-separated cut times.")
@click.option("--buckets", type=int, default=10, show_envvar=True, help="activity: buckets.")
@click.option("--weight", default=None, help="pagerank: edge column used as weight.")
@click.option("--alpha", type=float, default=0.85, show_envvar=True, help="pagerank: damping.")
@click.option("--top", "top_k", type=int, default=10, show_envvar=True, help="Rows shown.")
@click.option("--out", type=click.Path(path_type=Path), required=True, show_envvar=True)
def analyze(
    algo: str,
    log_dir: Path,
    at: float | None,
    clock: str | None,
    window: tuple[float, float] | None,
    times: str | None,
    buckets: int,
    weight: str | None,
    alpha: float,
    top_k: int,
    out: Path,
) -> None:
    """Run a Spark analysis (RayDP, in this Ray cluster) on a snapshot of the graph in
    LOG_DIR; print the top rows, write OUT/ALGO.parquet and OUT/ALGO.png."""
    from chronoray.graph import GraphCluster

    params: dict[str, Any] = {}
    if algo == "pagerank":
        params = {"alpha": alpha, "weight": weight}
    elif weight is not None:
        raise click.UsageError("--weight is a pagerank option")
    try:
        cut_times = [float(t) for t in times.split(",")] if times else None
        vector = [int(c) for c in clock.split(",")] if clock else None
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    with GraphCluster.open(log_dir) as graph:
        with console.status(f"{algo}: snapshot, then Spark (the first start takes ~10 s)"):
            result = graph.analyze(
                algo,
                at,
                clock=vector,
                window=window or None,
                times=cut_times,
                buckets=buckets,
                **params,
            )
            paths = result.save(out)
    top = result.top(top_k)
    table = Table(title=result.describe())
    for column in top.columns:
        table.add_column(str(column), justify="right")
    for row in top.itertuples(index=False):
        table.add_row(*(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)
    facts = ", ".join(f"{k} {v}" for k, v in result.info.items() if v is not None)
    console.print(f"{facts}; Spark time {result.seconds:.1f} s")
    for path in paths:
        console.print(f"wrote {path}")


@main.command()
@click.argument("vertex_id")
@click.option(
    "--log-dir", type=click.Path(exists=True, path_type=Path), required=True, show_envvar=True
)
@click.option("--from", "t0", type=float, default=None, help="Earliest event time.")
@click.option("--to", "t1", type=float, default=None, help="Latest event time.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per state.")
def history(
    vertex_id: str, log_dir: Path, t0: float | None, t1: float | None, as_json: bool
) -> None:
    """Every state of one vertex between two times, from its shard's log."""
    from chronoray.graph import GraphCluster
    from shards.core import VertexNotFound

    with GraphCluster.open(log_dir) as graph:
        try:
            states = graph.history(_vertex_id(vertex_id), t0, t1)
        except VertexNotFound as exc:
            _err.print(f"[red]error:[/] {exc} in {log_dir}")
            sys.exit(1)
    if as_json:
        for state in states:
            click.echo(json.dumps(state, default=str))
        return
    keys = sorted({k for s in states for k in s.get("state", {})})
    table = Table(title=f"history of vertex {vertex_id} ({len(states)} states)")
    for column in ("clock", "time", "out", "in", *keys):
        table.add_column(column, justify="right")
    for s in states:
        if s.get("deleted"):
            table.add_row(str(s["clock"]), str(s["time"]), "deleted", "", *([""] * len(keys)))
            continue
        table.add_row(
            str(s["clock"]),
            str(s["time"]),
            str(len(s["out_edges"])),
            str(len(s["in_edges"])),
            *(_short(s["state"].get(k, ""), 20) for k in keys),
        )
    console.print(table)


@main.command("inspect-log")
@click.option(
    "--log-dir", type=click.Path(exists=True, path_type=Path), required=True, show_envvar=True
)
@click.option("--shard", type=int, default=0, show_envvar=True)
@click.option(
    "--log",
    "log_name",
    type=click.Choice(["events", "commands", "clocks"]),
    default="events",
    show_envvar=True,
)
@click.option("--start", type=int, default=None, help="First worker clock to show.")
@click.option("--limit", type=int, default=20, show_envvar=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def inspect_log(
    log_dir: Path, shard: int, log_name: str, start: int | None, limit: int, as_json: bool
) -> None:
    """Decoded entries of one shard's log (read-only; works while the graph runs)."""
    from itertools import islice

    from shards.logstore import RocksLogStore
    from shards.replay import last_worker_clock, log_rows

    path = log_dir / f"shard-{shard}"
    if not path.exists():
        _err.print(f"[red]error:[/] {path} does not exist")
        sys.exit(1)
    store = RocksLogStore(path, read_only=True)
    try:
        rows = list(islice(log_rows(store, log_name, start), limit))
        last = last_worker_clock(store)
    finally:
        store.close()
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, default=str))
        return
    table = Table(title=f"{path} {log_name} ({last:,} entries)")
    for column in rows[0] if rows else ["wc"]:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_short(v) for v in row.values()))
    console.print(table)


def _short(value: Any, width: int = 60) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


@main.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("chronoray-demo"),
    show_envvar=True,
    help="Where logs and pictures go (its logs are replaced).",
)
@click.option("--shards", type=int, default=2, show_envvar=True)
def demo(out: Path, shards: int) -> None:
    """The main job: ingest CollegeMsg into a local Ray cluster, summarise, draw, travel back
    in time, and run PageRank in Spark on a past snapshot."""
    from chronoray.datasets import collegemsg_path
    from chronoray.demo import run_demo

    log_dir = out / "logs"
    if log_dir.exists():
        shutil.rmtree(log_dir)
    started = time.perf_counter()
    run_demo(collegemsg_path(), out, shards, console)
    console.print(f"[green]demo done[/] in {time.perf_counter() - started:.1f} s; output in {out}/")


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
    return cr.BfsDepth(source=_vertex_id(source))


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
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["snap", "bitcoin-csv"]),
    default="snap",
    show_envvar=True,
)
@click.option("--log-dir", type=click.Path(path_type=Path), required=True, show_envvar=True)
@click.option("--shards", type=int, default=None, show_envvar=True, help="[default: 2]")
@click.option(
    "--computation",
    "name",
    type=click.Choice(_LIVE_CHOICES),
    default="degrees",
    show_envvar=True,
    help="The live computation to run during ingestion.",
)
@click.option("--bfs-source", default=None, show_envvar=True, help="Source vertex for bfs.")
@click.option("--tol", type=float, default=1e-6, show_envvar=True, help="PageRank tolerance.")
@click.option("--refresh", type=float, default=0.5, show_envvar=True, help="Seconds per redraw.")
def live(
    path: Path,
    fmt: str,
    log_dir: Path,
    shards: int | None,
    name: str,
    bfs_source: str | None,
    tol: float,
    refresh: float,
) -> None:
    """Ingest an edge file with a live computation, showing its result as it changes."""
    import threading

    from rich.live import Live

    from chronoray.sources import open_source

    computation = _live_computation(name, bfs_source, tol)
    graph = _open_or_create(log_dir, shards)
    try:
        handle = graph.start_computation(computation)
        count = [0]
        failure: list[BaseException] = []

        def run() -> None:
            try:
                graph.ingest(open_source(path, fmt), progress=lambda n: count.__setitem__(0, n))
            except BaseException as exc:  # shown by the main thread
                failure.append(exc)

        started = time.perf_counter()
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        with Live(console=console, auto_refresh=False) as screen:
            while worker.is_alive():
                worker.join(refresh)
                elapsed = time.perf_counter() - started
                screen.update(live_table(name, handle, count[0], elapsed), refresh=True)
        if failure:
            raise failure[0]
        console.print(f"[green]done[/]; final result of {handle.id}:")
        console.print(live_table(name, handle, count[0], time.perf_counter() - started))
        handle.stop()
    finally:
        graph.close()


@main.command()
@click.option("--log-dir", type=click.Path(path_type=Path), required=True, show_envvar=True)
@click.option(
    "--ingest",
    "ingest_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    show_envvar=True,
    help="Ingest this file while printing its updates' notifications.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["snap", "bitcoin-csv"]),
    default="snap",
    show_envvar=True,
)
@click.option("--type", "types", multiple=True, help="Only vertices of this type (repeatable).")
@click.option("--vertex", "vertices", multiple=True, help="Only this vertex id (repeatable).")
@click.option(
    "--since",
    type=float,
    default=None,
    help="Replay from the log from this event time first [default: from the start, when "
    "nothing is ingested].",
)
@click.option("--limit", type=int, default=None, help="Stop after this many notifications.")
@click.option("--buffer", type=int, default=10_000, show_envvar=True, help="Per-shard buffer.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def subscribe(
    log_dir: Path,
    ingest_path: Path | None,
    fmt: str,
    types: tuple[str, ...],
    vertices: tuple[str, ...],
    since: float | None,
    limit: int | None,
    buffer: int,
    as_json: bool,
) -> None:
    """Print a notification stream of vertex updates of the graph in LOG_DIR: replayed
    from its log (--since), and/or live while --ingest feeds a file."""
    import threading

    from chronoray.sources import open_source

    if ingest_path is None and since is None:
        since = float("-inf")
    graph = _open_or_create(log_dir, None)
    ids = [_vertex_id(v) for v in vertices] or None
    sub = graph.subscribe(types=list(types) or None, ids=ids, buffer=buffer, since=since)
    worker = None
    if ingest_path is not None:
        worker = threading.Thread(
            target=graph.ingest, args=(open_source(ingest_path, fmt),), daemon=True
        )
        worker.start()
    printed = 0
    try:
        while limit is None or printed < limit:
            items = sub.poll(timeout=0.2)
            if not items and (worker is None or not worker.is_alive()):
                items = sub.drain()
                if not items:
                    break
            for item in items[: None if limit is None else limit - printed]:
                _print_notification(item, as_json)
                printed += 1
    finally:
        if worker is not None:
            worker.join()
        sub.close()
        graph.close()


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
    state = "deleted" if item.state is None else _short(dict(item.state), 80)
    console.print(
        f"{item.vertex} [dim]{item.type_name} clock {item.clock} t={item.time} "
        f"shard {item.shard} wc {item.wc}[/] {state}"
    )


def _open_or_create(log_dir: Path, shards: int | None) -> Any:
    """Reopen the graph in ``log_dir`` (refusing another shard count) or create it."""
    from chronoray.graph import MANIFEST, GraphCluster

    if (log_dir / MANIFEST).exists():
        return GraphCluster.open(log_dir, num_shards=shards)
    return GraphCluster(log_dir=str(log_dir), num_shards=shards or 2)


def _stats_table(stats: dict[str, Any]) -> Table:
    table = Table(title=f"graph: {stats['vertices']:,} vertices, {stats['edges']:,} edges")
    for column in ("shard", "vertices", "edges", "worker clock", "errors", "restarted"):
        table.add_column(column, justify="right")
    for s in stats["shards"]:
        table.add_row(
            str(s["shard"]),
            f"{s['vertices']:,}",
            f"{s['edges']:,}",
            f"{s['worker_clock']:,}",
            str(s["errors"]),
            str(s.get("restarted", False)),
        )
    return table


if __name__ == "__main__":
    main()
