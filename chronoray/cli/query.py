"""Questions to a graph: ``chronoray stats``, ``vertex``, ``snapshot``, ``history``,
``analyze``; and its logs: ``inspect-log``, ``upgrade-log``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from chronoray.cli.app import main
from chronoray.cli.errors import Failed
from chronoray.cli.options import (
    TIME_HELP,
    AnalysisName,
    EventTime,
    Output,
    PathArg,
    cut_options,
    id_order,
    log_dir_option,
    output_options,
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
    stats_views,
)
from chronoray.cli.target import AnalyzeRequest, ClusterTarget, Target, target_options

__all__ = ["analyze", "history", "inspect_log", "snapshot_cmd", "stats", "upgrade_log", "vertex"]


@main.command()
@target_options(server=True)
@output_options(
    json_help="Print JSON: totals, per shard, per source (and the gateway's counters).",
    csv_help="Print CSV: the shards table, then a blank line and the sources table.",
)
def stats(target: Target, output: Output) -> None:
    """Vertex and edge totals, per shard, of a running graph (--graph, or --server through
    a gateway) or the one in LOG_DIR."""
    result, lines = target.stats()
    print_view(stats_views(result), output, result)
    if output != "table":
        return
    for line in lines:
        if isinstance(target, ClusterTarget):  # problems of the graph
            err_console.print(f"[yellow]{line}[/]")
        else:
            console.print(line)


@main.command()
@click.argument("vertex_id")
@target_options(server=True)
@output_options(
    json_help="Print JSON: the vertex's type, clock, time, state and edges.",
    csv_help="Print CSV: its edges (direction, other vertex, properties).",
)
def vertex(vertex_id: str, target: Target, output: Output) -> None:
    """State and edges of one vertex (edges by the other vertex's id, 50 of each shown), of
    a running graph (--graph, or --server through a gateway) or the one in LOG_DIR."""
    found = _in_order(target.vertex(_id(vertex_id)))
    directions = {"out": found["out_edges"], "in": found["in_edges"]}
    names = sorted({k for edges in directions.values() for p in edges.values() for k in p})
    edge_columns = [Column("vertex"), *(Column(n, 1, wrap=True) for n in names)]
    rows = {
        direction: [
            [other, *(props.get(n, "") for n in names)]
            for other, props in sorted(edges.items(), key=lambda kv: id_order(kv[0]))
        ]
        for direction, edges in directions.items()
    }
    if output == "csv":
        every = [[d, *row] for d, of_d in rows.items() for row in of_d]
        print_view(View("edges", [Column("direction"), *edge_columns], every), output)
        return
    if output == "table":
        console.print(
            f"[bold]vertex {vertex_id}[/] ({found['type']}, clock {found['clock']}, "
            f"time {show_date(found['time'])})"
        )
        for key, value in sorted(found["state"].items()):
            console.print(f"  {key} = {value!r}")
    views = [View(f"{d}-edges ({len(of_d)})", edge_columns, of_d[:50]) for d, of_d in rows.items()]
    print_view(views, output, found)


def _in_order(found: dict[str, Any]) -> dict[str, Any]:
    """A vertex as printed, whichever target found it: state keys and edge properties
    sorted by name, edges by the other vertex's id (numbers in numeric order)."""

    def edges(of: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        ordered = sorted(of.items(), key=lambda kv: id_order(kv[0]))
        return {other: dict(sorted(props.items())) for other, props in ordered}

    return found | {
        "state": dict(sorted(found["state"].items())),
        "out_edges": edges(found["out_edges"]),
        "in_edges": edges(found["in_edges"]),
    }


def _id(text: str) -> int | str:
    return vertex_id(text)


@main.command("snapshot")
@target_options(server=True)
@cut_options
@click.option(
    "--out",
    type=PathArg(path_type=Path),
    default=None,
    help="Folder for vertices.parquet and edges.parquet (created if missing); required "
    "without --server (a gateway writes under its own --output-dir).",
)
def snapshot_cmd(
    target: Target,
    at: float | None,
    clock: list[int] | None,
    window: tuple[float, float] | None,
    out: Path | None,
) -> None:
    """Write a consistent past graph as OUT/vertices.parquet and OUT/edges.parquet (through
    a gateway: on its machine, paths printed). A graph in --log-dir that is not running is
    read from its logs in this process (no Ray)."""
    made = target.snapshot(at, clock, window or None, out)
    meta = made.meta
    console.print(
        f"{made.describe()} built in {meta['build_seconds']:.2f} s, {meta['replayed']:,} log "
        f"entries replayed (cut {list(meta['cut'])}); wrote {made.paths[0]} and "
        f"{made.paths[1]}{made.where}"
    )


@main.command()
@click.argument("algo", type=AnalysisName())
@target_options(server=True)
@cut_options
@click.option("--times", default=None, help="activity: comma-separated cut times.")
@click.option("--buckets", type=int, default=10, help="activity: buckets of --window.")
@click.option("--weight", default=None, help="pagerank: edge column used as weight.")
@click.option("--alpha", type=float, default=0.85, help="pagerank: damping.")
@click.option("--top", "top_k", type=int, default=10, help="Rows shown.")
@click.option(
    "--engine",
    type=click.Choice(["auto", "local", "ray", "spark"]),
    default="auto",
    help="Where it runs: kernels in this process, Ray models, Spark; auto: by size.",
)
@click.option(
    "--out",
    type=PathArg(path_type=Path),
    default=None,
    help="Folder for ALGO.parquet and ALGO.png (created if missing); required without "
    "--server (a gateway writes under its own --output-dir).",
)
@output_options(
    json_help="Print JSON: the rows shown, and the analysis's facts, engine and files.",
    csv_help="Print the rows shown as CSV.",
)
def analyze(
    algo: str,
    target: Target,
    at: float | None,
    clock: list[int] | None,
    window: tuple[float, float] | None,
    times: str | None,
    buckets: int,
    weight: str | None,
    alpha: float,
    top_k: int,
    engine: str,
    out: Path | None,
    output: Output,
) -> None:
    """Run an analysis on a snapshot (vectorized kernels here, Ray models, or Spark through
    RayDP in this Ray cluster; --engine, by size unless told); print the top rows, the
    engine and why, write OUT/ALGO.parquet and OUT/ALGO.png (through a gateway: on its
    machine, paths printed)."""
    params: dict[str, Any] = {}
    if algo == "pagerank":
        params = {"alpha": alpha, "weight": weight}
    elif weight is not None:
        raise click.UsageError("--weight is a pagerank option")
    try:
        cut_times = [float(t) for t in times.split(",")] if times else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--times") from None
    request = AnalyzeRequest(
        algo, at, clock, window or None, cut_times, buckets, engine, top_k, params, out
    )
    status = f"{algo}: snapshot, then the analysis (Spark's start takes ~10 s)"
    with err_console.status(status):  # stdout: the result only
        result = target.analyze(request)
    top = result.top
    rows = [list(row) for row in top.itertuples(index=False)]
    view = View(result.description, _result_columns(list(top.columns)), rows)
    named = sorted(result.info.items())  # by name: a gateway's reply keeps no order
    shown = {k: v for k, v in named if v is not None and not k.startswith("engine")}
    data = {
        "analysis": algo,
        "rows": json.loads(top.to_json(orient="records")),
        "info": shown,
        "engine": result.engine,
        "engine_reason": result.info["engine_reason"],
        "seconds": result.seconds,
        "wrote": result.paths,
    }
    print_view(view, output, data)
    if output != "table":
        return
    facts = ", ".join(f"{k} {v}" for k, v in shown.items())
    console.print(f"{facts}; {result.engine} time {result.seconds:.2f} s")
    console.print(f"engine {result.engine}: {result.info['engine_reason']}")
    for path in result.paths:
        console.print(f"wrote {path}{result.where}")


def _result_columns(names: list[str]) -> list[Column]:
    """Columns of an analysis's top rows: times as dates, other floats to 6 digits; the
    first columns (the time or vertex, the measure) are kept longest on a narrow terminal."""

    def number(value: Any) -> str:
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    columns = []
    for k, name in enumerate(names):
        timed = name in ("time", "t", "start", "end") or name.endswith("_time")
        columns.append(Column(str(name), k, show=show_date if timed else number))
    return columns


@main.command()
@click.argument("vertex_id")
@target_options(server=True)
@click.option(
    "--from", "t0", type=EventTime(), default=None, help=f"Earliest event time: {TIME_HELP}."
)
@click.option("--to", "t1", type=EventTime(), default=None, help=f"Latest event time: {TIME_HELP}.")
@output_options(json_help="Print JSON: one object per state, a line each.")
def history(
    vertex_id: str,
    target: Target,
    t0: float | None,
    t1: float | None,
    output: Output,
) -> None:
    """Every state of one vertex between two times, from its shard's log (JSON: edges as
    counts, wc 0 for the state it had at --from)."""
    states = [
        s | {"state": dict(sorted(s["state"].items()))} if "state" in s else s
        for s in target.history(_id(vertex_id), t0, t1)
    ]
    keys = sorted({k for s in states for k in s.get("state", {})})
    columns = [
        Column("clock"),
        Column("time", show=show_date),
        Column("out", 1),
        Column("in", 1),
        *(Column(k, 2 + i, wrap=True, show=lambda v: short(v, 20)) for i, k in enumerate(keys)),
    ]
    rows = []
    for s in states:
        if s.get("deleted"):
            rows.append([s["clock"], s["time"], "deleted", "", *([""] * len(keys))])
        else:
            state = s["state"]
            rows.append(
                [
                    s["clock"],
                    s["time"],
                    s["out_edges"],
                    s["in_edges"],
                    *(state.get(k, "") for k in keys),
                ]  # fmt: skip
            )
    view = View(f"history of vertex {vertex_id} ({len(states)} states)", columns, rows)
    print_view(view, output, states, lines=True)


# what matters first in a log entry; the rest is dropped first on a narrow terminal
_LOG_PRIORITY = ["wc", "vertex", "clock", "time", "kind", "state", "edges", "created", "deleted"]


@main.command("inspect-log")
@log_dir_option(
    required=True,
    help="Log directory of a graph, running or not (its logs are read, never written).",
)
@click.option("--shard", type=click.IntRange(min=0), default=0, help="Which shard's log.")
@click.option(
    "--log",
    "log_name",
    type=click.Choice(["events", "commands", "clocks"]),
    default="events",
    help="events: state changes and messages sent; commands: messages received; clocks: "
    "block headers (worker and vector clocks).",
)
@click.option("--start", type=int, default=None, help="First worker clock to show.")
@click.option("--limit", type=click.IntRange(min=1), default=20, help="Entries shown at most.")
@output_options(json_help="Print JSON: one object per entry, a line each.")
def inspect_log(
    log_dir: Path, shard: int, log_name: str, start: int | None, limit: int, output: Output
) -> None:
    """Decoded entries of one shard's log (read-only; works while the graph runs)."""
    from itertools import islice

    from shards.logstore import RocksLogStore
    from shards.replay import last_worker_clock, log_rows

    path = log_dir / f"shard-{shard}"
    if not path.exists():
        raise click.BadParameter(f"{path} does not exist", param_hint="--shard")
    store = RocksLogStore(path, read_only=True)
    try:
        rows = list(islice(log_rows(store, log_name, start), limit))
        last = last_worker_clock(store)
    finally:
        store.close()
    names = list(rows[0]) if rows else ["wc"]
    columns = [_log_column(name, k) for k, name in enumerate(names)]
    view = View(f"{path} {log_name} ({last:,} entries)", columns, [list(r.values()) for r in rows])
    print_view(view, output, rows, lines=True)


def _log_column(name: str, position: int) -> Column:
    """A column of a log entry: the first ones and those of :data:`_LOG_PRIORITY` are kept
    longest; times are dates; a value wraps, cut at 300 characters in the table."""
    rank = _LOG_PRIORITY.index(name) if name in _LOG_PRIORITY else len(_LOG_PRIORITY) + position
    if name == "time":
        return Column(name, rank, show=show_date)
    if name in ("wc", "clock"):
        return Column(name, 0 if name == "wc" else rank)
    return Column(name, rank, wrap=True, justify="left", show=lambda v: short(v, 300))


@main.command("upgrade-log")
@log_dir_option(required=True, help="Log directory of a graph that is not running.")
def upgrade_log(log_dir: Path) -> None:
    """Convert a graph's shard logs of format 2, 3, 4 or 5 to format 6 in place (each shard's log is
    checked, written anew beside it, verified, then swapped in: never half-converted)."""
    from chronoray.deploy import shard_log_path
    from chronoray.manifest import Manifest
    from shards.upgrade import upgrade_shard_log

    try:
        manifest = Manifest.read(log_dir)
    except FileNotFoundError as exc:
        raise Failed(str(exc)) from exc
    for shard in range(manifest.num_shards):
        path = shard_log_path(log_dir, shard)
        result = upgrade_shard_log(path)
        if result.resumed:
            click.echo(f"{path}: {result.resumed}")
        if not result.converted:
            click.echo(f"{path}: already in the current format")
            continue
        counts = ", ".join(f"{n:,} {family}" for family, n in result.entries.items())
        click.echo(f"{path}: converted ({counts}; {result.bytes:,} bytes checksummed)")
