"""The ``chronoray`` command line.

Options shared by several commands are declared once below (``--log-dir``, ``--graph``,
``--json``, the cut options, ``--shards``, ...). An option that sets a graph setting
reads the same environment variable as :class:`~chronoray.config.Config`
(``CHRONORAY_LOG_DIR``, ``CHRONORAY_NUM_SHARDS``, ``CHRONORAY_RAY_ADDRESS``...; ``--help``
shows each), and ``--config FILE`` reads a TOML file first. Every error ends in one line
on stderr, without a traceback (``chronoray --debug`` shows it): ``Error: ...`` and exit
status 2 for a usage error (an option out of range, two cuts, a shard count other than the
graph's...), ``error: ...`` and 1 for a failure (a graph that does not exist, a bad record,
a file going back in time, an unknown vertex, another file under a used source name...).
Ray's and Spark's own log lines go to the driver log file named at the end of a command's
output.
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console, Group
from rich.table import Table

from chronoray.analysis import ANALYSIS_NAMES
from chronoray.config import Config, env_name
from chronoray.errors import USER_ERRORS
from shards.watermark import show_time

__all__ = ["main"]

console = Console()
_err = Console(stderr=True)
_F = TypeVar("_F", bound=Callable[..., Any])
_FORMATS = ["snap", "bitcoin-csv"]


def _vertex_id(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _id_order(vertex: Any) -> tuple[int, float, str]:
    """Sort key of vertex ids: numbers in numeric order, then text ids."""
    if isinstance(vertex, int | float) and not isinstance(vertex, bool):
        return 0, vertex, ""
    return 1, 0.0, str(vertex)


# -- shared options -----------------------------------------------------------------------


class EventTime(click.ParamType):
    """An event time: a number (the data's own time, Unix seconds for SNAP files) or an ISO
    8601 date, taken as Unix seconds (``2004-08-01T00:00:00Z``; a date without a zone is
    UTC).

    >>> EventTime().convert("2004-08-01T00:00:00Z", None, None)
    1091318400.0
    >>> EventTime().convert("2004-08-01", None, None), EventTime().convert("1.5e3", None, None)
    (1091318400.0, 1500.0)
    """

    name = "TIME"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip()
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is not None:
            if not math.isfinite(number):
                self.fail(f"{text!r} is not a finite time", param, ctx)
            return number
        from datetime import UTC, datetime

        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            self.fail(
                f"{text!r} is neither a number nor an ISO 8601 date (2004-08-01T00:00:00Z)",
                param,
                ctx,
            )
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()


_TIME_HELP = "a number in the data's time unit (Unix seconds for SNAP files) or an ISO 8601 date"


class ClockVector(click.ParamType):
    """Comma-separated shard worker clocks, e.g. ``1200,980``."""

    name = "CLOCKS"

    def convert(self, value: Any, param: Any, ctx: Any) -> list[int]:
        if isinstance(value, list):
            return value
        try:
            clocks = [int(part) for part in str(value).split(",")]
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of integers", param, ctx)
        if any(c < 0 for c in clocks):
            self.fail(f"{value!r}: clocks are >= 0", param, ctx)
        return clocks


class _Path(click.Path):
    """``click.Path`` that refuses a NUL character as a usage error naming the option
    (the operating system cannot take one: ``os.stat`` would raise ``ValueError``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and "\x00" in os.fsdecode(value):
            self.fail(f"{value!r}: a path cannot hold a NUL character", param, ctx)
        return super().convert(value, param, ctx)


def _setting(field: str, *decls: str, **kwargs: Any) -> Callable[[_F], _F]:
    """An option that sets the ``Config`` field ``field``, read from the same env name."""
    return click.option(*decls, envvar=env_name(field), show_envvar=True, **kwargs)


def log_dir_option(
    *,
    required: bool = False,
    exists: bool = True,
    help: str = "Log directory of a graph (reopened from its logs; one not running).",
) -> Callable[[_F], _F]:
    """``--log-dir``: a graph's log directory (by default, of a graph that is not running)."""
    return _setting(
        "log_dir",
        "--log-dir",
        type=_Path(exists=exists, file_okay=False, path_type=Path),
        required=required,
        default=None,
        help=help,
    )


graph_option = click.option(
    "--graph",
    "graph_name",
    envvar="CHRONORAY_GRAPH",
    show_envvar=True,
    default=None,
    help="A running named graph (see chronoray ls); instead of --log-dir.",
)


def json_option(function: _F | None = None, *, help: str = "Print JSON.") -> Any:
    """``--json``: machine-readable output (``help`` says its shape)."""
    option = click.option("--json", "as_json", is_flag=True, help=help)
    return option(function) if function is not None else option


shards_option = _setting(
    "num_shards",
    "--shards",
    type=click.IntRange(min=1),
    default=None,
    help="Shard actors [default: 2 for a new graph, the graph's own count for an existing one].",
)
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(_FORMATS),
    default="snap",
    help="snap: SRC DST TIME lines; bitcoin-csv: SRC,DST,RATING,TIME lines.",
)


def cut_options(function: _F) -> _F:
    """``--at``, ``--clock`` and ``--window``: which consistent cut of the graph."""
    function = click.option(
        "--window",
        nargs=2,
        type=EventTime(),
        default=None,
        help=f"T0 T1: changes in [T0, T1]; each {_TIME_HELP}.",
    )(function)
    function = click.option(
        "--clock", type=ClockVector(), default=None, help="Shard worker clocks, comma-separated."
    )(function)

    @functools.wraps(function)
    def one_cut(*args: Any, **kwargs: Any) -> Any:
        given = [f"--{k}" for k in ("at", "clock", "window") if kwargs.get(k) is not None]
        if len(given) > 1:
            raise click.UsageError(
                f"{' and '.join(given)}: give one cut (--at, --clock or --window)"
            )
        return function(*args, **kwargs)

    return click.option(
        "--at",
        "at",
        type=EventTime(),
        default=None,
        help=f"Event time of the cut: {_TIME_HELP}, e.g. 2004-08-01T00:00:00Z.",
    )(one_cut)  # type: ignore[arg-type]


def server_options(function: _F) -> _F:
    """``--server``, ``--token-file``, ``--tls-ca``: reach a graph through a gRPC gateway
    (``chronoray serve``) instead of joining its Ray cluster."""
    function = click.option(
        "--tls-ca",
        type=_Path(exists=True, dir_okay=False, path_type=Path),
        envvar="CHRONORAY_GATEWAY_TLS_CA",
        show_envvar=True,
        default=None,
        help="--server: PEM certificate(s) to trust; the gateway speaks TLS.",
    )(function)
    function = click.option(
        "--token-file",
        type=_Path(exists=True, dir_okay=False, path_type=Path),
        envvar="CHRONORAY_GATEWAY_TOKEN_FILE",
        show_envvar=True,
        default=None,
        help="--server: file holding the gateway's token [default: CHRONORAY_GATEWAY_TOKEN, "
        "else ~/.chronoray/gateway-token].",
    )(function)
    return click.option(
        "--server",
        envvar="CHRONORAY_SERVER",
        show_envvar=True,
        default=None,
        metavar="HOST:PORT",
        help="A gateway (chronoray serve) in front of a running graph; instead of --graph.",
    )(function)


def _client(server: str, token_file: Path | None, tls_ca: Path | None) -> Any:
    from chronoray.client import GatewayClient

    return GatewayClient(server, token_file=token_file, tls_ca=tls_ca)


def _not_with(option: str, **given: Any) -> None:
    """Refuse the options ``given`` a value next to ``option`` (``--server``: the gateway
    decides the graph; ``--spark``: Spark orders the rows itself)."""
    used = [f"--{name.replace('_', '-')}" for name, value in given.items() if value]
    if used:
        raise click.UsageError(f"{', '.join(used)} cannot be used with {option}")


@dataclass
class _Settings:
    """What the group's options set, for every command."""

    config_file: Path | None
    address: str | None

    def config(self, **overrides: Any) -> Config:
        try:
            return Config.load(self.config_file, ray_address=self.address, **overrides)
        except ValueError as exc:  # a setting out of range (option, file or environment)
            raise click.UsageError(str(exc)) from None


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse NaN, which passes click's range checks (every comparison with it is false)."""
    if value is not None and math.isnan(value):
        raise click.BadParameter("nan is not a number of seconds")
    return value


PLUGIN_GROUP = "chronoray.commands"
"""Entry-point group of commands other packages add (``cep``): loaded only when used, so
``chronoray`` imports none of the packages built on it."""


class Failed(Exception):
    """A command could not do what was asked; its message is the one line shown."""


_HELP: type[click.UsageError] = getattr(
    click.exceptions, "NoArgsIsHelpError", type("_NeverRaised", (click.UsageError,), {})
)


class _UsageLine(click.ClickException):
    """A usage error shown as one line (exit status 2) instead of click's usage block."""

    exit_code = 2

    def __init__(self, usage: click.UsageError) -> None:
        where = usage.ctx.command_path if usage.ctx is not None else "chronoray"
        super().__init__(f"{usage.format_message()} (see {where} --help)")

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {_one_line(self.format_message())}", err=True)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _one_line(text: str) -> str:
    """``text`` on one line: colour codes dropped, lines joined with "; "."""
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    return "; ".join(lines)


def _error_line(exc: BaseException) -> str:
    """What an error says to people, in one line: the message of an error about what was
    asked (Ray's wrapping of an actor's error removed), else its type and first line."""
    from chronoray.sources import MalformedRecord, OutOfOrder

    cause = getattr(exc, "cause", None)  # Ray's RayTaskError: what the actor raised
    if isinstance(cause, BaseException):
        exc = cause
    if isinstance(exc, (*USER_ERRORS, Failed, MalformedRecord, OutOfOrder)):
        return _one_line(str(exc))
    if type(exc).__name__ == "VertexNotFound":
        return _one_line(str(exc))
    first = next(iter(_one_line(str(exc)).split("; ")), "")
    return f"{type(exc).__name__}: {first} (--debug shows the traceback)"


def _quiet_interrupts() -> None:
    """At exit, before Ray shuts down: a Ctrl-C meanwhile says so in one line instead of
    interrupting Ray's shutdown with a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _shutting_down)


def _shutting_down(signum: int, frame: Any) -> None:
    os.write(2, b"chronoray: shutting down Ray, a moment\n")


class _Group(click.Group):
    """Ends every error in one line on stderr -- ``Error:`` and exit status 2 for a usage
    error, ``error:`` and 1 for a failure, 130 when interrupted; the traceback only with
    ``--debug`` -- and adds plugin commands."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, _HELP):
            raise
        except click.UsageError as exc:
            if ctx.params.get("debug"):
                raise
            raise _UsageLine(exc) from None
        except click.ClickException:
            raise
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"error: {_error_line(exc)}", err=True)  # one line, never wrapped
            sys.exit(1)
        finally:
            atexit.unregister(_quiet_interrupts)  # registered last: runs before Ray's own
            atexit.register(_quiet_interrupts)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except _HELP:  # no command given: click shows the help
            raise
        except click.UsageError as exc:  # the group's own options
            raise _UsageLine(exc) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *(ep.name for ep in _plugins())})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        found = [ep for ep in _plugins() if ep.name == cmd_name]
        return found[0].load() if found else None


def _plugins() -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=PLUGIN_GROUP))


@click.group(cls=_Group, context_settings={"show_default": True})
@click.version_option(package_name="chronoray")
@click.option(
    "--config",
    "config_file",
    type=_Path(exists=True, dir_okay=False, path_type=Path),
    envvar="CHRONORAY_CONFIG",
    show_envvar=True,
    default=None,
    help="TOML file of settings (table [chronoray]); env and options override it.",
)
@_setting(
    "ray_address",
    "--address",
    default=None,
    help="Ray cluster to join [default: RAY_ADDRESS if set (in a Ray job), else a local one].",
)
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
@click.pass_context
def main(ctx: click.Context, config_file: Path | None, address: str | None, debug: bool) -> None:
    """chronoray: live, history-aware graph processing on Ray."""
    ctx.obj = _Settings(config_file, address)


@contextmanager
def _graph(
    graph_name: str | None,
    log_dir: Path | None,
    *,
    shards: int | None = None,
    create: bool = False,
) -> Iterator[Any]:
    """The graph a command works on: the running graph ``graph_name``, or the one in
    ``log_dir`` (reopened; created if ``create``). Closing detaches from a named graph."""
    from chronoray.graph import GraphCluster
    from chronoray.manifest import Manifest

    settings: _Settings = click.get_current_context().obj
    if graph_name is not None and log_dir is not None:
        raise click.UsageError("give --graph or --log-dir, not both")
    if graph_name is not None:
        graph = GraphCluster.attach(graph_name, settings.config())
        if shards is not None and shards != graph.num_shards:
            held = graph.num_shards
            graph.close()
            raise click.UsageError(
                f"graph {graph_name} has {held} shards: give --shards {held} or leave it out"
            )
    elif log_dir is None:
        raise click.UsageError("give --graph NAME (a running graph) or --log-dir DIR")
    elif Manifest.exists(log_dir):
        held = Manifest.read(log_dir).num_shards
        if shards is not None and shards != held:
            raise click.UsageError(
                f"{log_dir} holds a graph of {held} shards: give --shards {held} or leave it out"
            )
        graph = GraphCluster.open(log_dir, config=settings.config(), num_shards=shards)
    elif create:
        graph = GraphCluster(settings.config(log_dir=str(log_dir), num_shards=shards))
    else:
        raise click.UsageError(f"{log_dir} holds no chronoray graph")
    try:
        yield graph
    finally:
        graph.close()
    # only after success: a failure ends in its one error line
    click.get_current_context().call_on_close(_note_logs)


def _note_logs() -> None:
    from chronoray.connect import driver_log_path

    _err.print(f"[dim]Ray's and Spark's own log lines: {driver_log_path()}[/]")


# -- named graphs -------------------------------------------------------------------------


@main.command()
@click.argument("name")
@shards_option
@log_dir_option(required=True, exists=False)
@_setting(
    "storage",
    "--storage",
    type=click.Choice(["local", "shared"]),
    default=None,
    help="local: each shard's log on its node's disk; shared: LOG_DIR on shared storage "
    "[default: local].",
)
@_setting(
    "placement",
    "--placement",
    type=click.Choice(["spread", "pack"]),
    default=None,
    help="spread: shards over the cluster's nodes; pack: on one node [default: spread].",
)
@click.pass_obj
def start(
    settings: _Settings,
    name: str,
    shards: int | None,
    log_dir: Path,
    storage: str | None,
    placement: str | None,
) -> None:
    """Start the named graph NAME in the Ray cluster (new, or reopened from LOG_DIR). It
    runs until `chronoray stop NAME`; other commands reach it with --graph NAME."""
    from chronoray.connect import cluster_address
    from chronoray.graph import GraphCluster

    if cluster_address(settings.config()) is None:
        raise click.UsageError(
            "a named graph lives in a Ray cluster: give --address (or CHRONORAY_RAY_ADDRESS), "
            "or run this as a `ray job submit` job; a private Ray would stop with this command"
        )
    graph = GraphCluster.create(
        name,
        settings.config(),
        log_dir=str(log_dir),
        num_shards=shards,
        storage=storage,
        placement=placement,
    )
    nodes = ", ".join(graph.manifest.shard_nodes)
    console.print(
        f"graph [bold]{name}[/] started: {graph.num_shards} shards ({graph.config.storage} "
        f"storage) on nodes {nodes}; logs in {graph.log_dir}"
    )
    graph.close()
    _note_logs()


@main.command("ls")
@json_option
@click.pass_obj
def ls_cmd(settings: _Settings, as_json: bool) -> None:
    """The named graphs running in the Ray cluster."""
    from chronoray.graph import GraphCluster

    rows = []
    for name in GraphCluster.running(settings.config()):
        graph = GraphCluster.attach(name, settings.config())
        status = graph.status()
        rows.append(
            {
                "name": name,
                "shards": graph.num_shards,
                "storage": graph.config.storage,
                "nodes": graph.manifest.shard_nodes,
                "log_dir": str(graph.log_dir),
                "sources": sorted(status.sources),
                "problems": status.describe(),
            }
        )
        graph.close()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} named graph(s)")
    for column in ("name", "shards", "storage", "nodes", "log dir", "sources", "problems"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["name"],
            str(r["shards"]),
            r["storage"],
            ", ".join(r["nodes"]),
            r["log_dir"],
            ", ".join(r["sources"]),
            "; ".join(r["problems"]) or "none",
        )
    console.print(table)


@main.command()
@click.argument("name")
@click.pass_obj
def stop(settings: _Settings, name: str) -> None:
    """Stop the named graph NAME (its sources and shard actors; the logs stay)."""
    from chronoray.graph import GraphCluster

    graph = GraphCluster.attach(name, settings.config())
    graph.shutdown()
    console.print(f"stopped graph [bold]{name}[/]; its logs stay in {graph.log_dir}")


# -- network gateway ----------------------------------------------------------------------


def _gateway_setting(field: str, *decls: str, **kwargs: Any) -> Callable[[_F], _F]:
    """An option that sets the ``GatewaySettings`` field ``field``, read from the same
    env name (``CHRONORAY_GATEWAY_<FIELD>``) and, below both, the settings file's
    ``[gateway]`` table."""
    return click.option(
        *decls,
        field,
        envvar=env_name(field, "CHRONORAY_GATEWAY_"),
        show_envvar=True,
        default=None,
        show_default=False,
        **kwargs,
    )


@main.command()
@graph_option
@_gateway_setting("host", "--host", help="Address to listen on [default: 127.0.0.1].")
@_gateway_setting("port", "--port", type=click.IntRange(0, 65535), help="Port [default: 50051].")
@_gateway_setting(
    "auth", "--auth/--no-auth", help="Token authentication [default: on; --no-auth: off]."
)
@_gateway_setting(
    "token_file",
    "--token-file",
    type=_Path(dir_okay=False),
    help="File holding the token [default: ~/.chronoray/gateway-token, made if missing].",
)
@_gateway_setting(
    "tls_cert",
    "--tls-cert",
    type=_Path(exists=True, dir_okay=False),
    help="PEM certificate chain; with --tls-key the gateway speaks TLS only.",
)
@_gateway_setting(
    "tls_key", "--tls-key", type=_Path(exists=True, dir_okay=False), help="Its PEM key."
)
@_gateway_setting(
    "max_message_bytes", "--max-message-bytes", type=int, help="Largest message [16 MiB]."
)
@_gateway_setting(
    "rate_limit", "--rate-limit", type=float, help="Requests/s per client address [1000]."
)
@_gateway_setting(
    "output_dir",
    "--output-dir",
    help="Where snapshots and analyses asked for are written [chronoray-gateway].",
)
@_gateway_setting("grace", "--grace", type=float, help="Seconds calls get at shutdown [10].")
@click.option("--detach", is_flag=True, help="Run the gateway as a Ray actor of the graph.")
@click.option("--stop", "stop_actor", is_flag=True, help="Stop the graph's gateway actor.")
@click.pass_obj
def serve(
    settings: _Settings, graph_name: str | None, detach: bool, stop_actor: bool, **given: Any
) -> None:
    """Serve a running graph over gRPC (chronoray.v1: ingestion, queries, snapshots,
    subscriptions, analyses) until Ctrl-C or the graph stops; or, with --detach, from a
    Ray actor of the graph that lives as long as it does."""
    from chronoray import gateway

    if graph_name is None:
        raise click.UsageError("give --graph NAME (a running graph; see chronoray ls)")
    config = settings.config()
    if stop_actor:
        found = gateway.stop_gateway_actor(graph_name, config)
        console.print(f"stopped the gateway of {graph_name}" if found else "no gateway actor")
        return
    gateway_settings = gateway.GatewaySettings.load(settings.config_file, **given)
    if detach:
        line = gateway.start_gateway_actor(graph_name, gateway_settings, config)
        console.print(f"{line}, from a Ray actor (chronoray serve --graph {graph_name} --stop)")
        return
    served = gateway.serve(graph_name, gateway_settings, config, announce=console.print)
    counters = served.service.counters
    console.print(
        f"stopped: {counters.records:,} records in {counters.batches:,} batches acknowledged"
    )
    _note_logs()


# -- ingestion ----------------------------------------------------------------------------


def _columns(text: str | None) -> dict[str, str]:
    """``--props a,w=b``: property name -> column (a bare column is its own name)."""
    pairs = [part.strip() for part in (text or "").split(",") if part.strip()]
    return dict((p.split("=", 1) if "=" in p else (p, p)) for p in pairs)  # type: ignore[misc]


def spark_table_options(function: _F) -> _F:
    """``--spark FILE_OR_DIR`` and the columns that make an update of its rows."""
    options = [
        click.option(
            "--spark",
            "spark_path",
            type=_Path(exists=True, path_type=Path),
            default=None,
            help="Read this Parquet or CSV file or directory with Spark (in the cluster) and "
            "ingest its rows through the object store; instead of PATH.",
        ),
        click.option("--src", default=None, help="--spark: column of the edge's source."),
        click.option("--dst", default=None, help="--spark: column of the edge's target."),
        click.option("--time", "time_col", default=None, help="--spark: event time column."),
        click.option("--kind", default=None, help="--spark: column of update kinds."),
        click.option(
            "--props", default=None, help="--spark: property columns, comma-separated (NAME=COL)."
        ),
        click.option(
            "--ids",
            type=click.Choice(["int", "str"]),
            default="int",
            help="--spark: vertex ids as integers (text ids checked) or as text.",
        ),
        click.option(
            "--parts", type=int, default=None, help="--spark: source actors [default: shards]."
        ),
        click.option(
            "--header/--no-header",
            default=True,
            help="--spark csv: the first line names the columns (else _c0, _c1, ...).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@main.command()
@click.argument("paths", nargs=-1, type=_Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*_FORMATS, "parquet", "csv"]),
    default=None,
    help="PATH: snap or bitcoin-csv [default: snap]; --spark: parquet or csv [default: parquet].",
)
@spark_table_options
@shards_option
@graph_option
@log_dir_option(exists=False)
@click.option(
    "--on-error",
    type=click.Choice(["raise", "skip"]),
    default="raise",
    help="raise: stop at a malformed record (--spark: refuse the whole table); skip: count it "
    "and write it to --rejects.",
)
@click.option(
    "--rejects",
    type=_Path(path_type=Path),
    default=None,
    help="File for skipped records and late updates [default: LOG_DIR/rejects.tsv, or "
    "./rejects.tsv with --graph; --spark: a Parquet table, rejects.parquet].",
)
@click.option(
    "--sort",
    is_flag=True,
    help="Sort each file by time first (outside memory: files larger than memory are fine).",
)
@click.option(
    "--allowed-lateness",
    type=click.FloatRange(min=0),
    default=None,
    callback=_finite,
    metavar="SECONDS",
    help="Reorder updates up to SECONDS behind the latest time read (a watermark); later "
    "ones follow --late. Without it (or --sort) a file must be in time order.",
)
@click.option(
    "--late",
    type=click.Choice(["reject", "apply"]),
    default="reject",
    help="Updates later than the lateness: reject (count them, write them to --rejects) "
    "or apply (at the watermark; their own time is kept in the log).",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    callback=_finite,
    metavar="SECONDS",
    help="A source that reads nothing this long stops holding the watermark back [default: 10].",
)
@click.option(
    "--source",
    "--source-id",
    "source_id",
    default=None,
    metavar="NAME",
    help="Source name [default: the file's name]. Ingesting a file again under its name "
    "resumes it; a new NAME ingests another file of the same name as a new source.",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Start the source actor and return (named graphs; see chronoray ls).",
)
@server_options
@click.option(
    "--records-per-batch",
    type=click.IntRange(min=1),
    default=1000,
    help="--server: records per batch (each acknowledged once logged).",
)
def ingest(
    paths: tuple[Path, ...],
    fmt: str | None,
    spark_path: Path | None,
    shards: int | None,
    graph_name: str | None,
    log_dir: Path | None,
    on_error: str,
    rejects: Path | None,
    sort: bool,
    allowed_lateness: float | None,
    late: str,
    idle_timeout: float | None,
    source_id: str | None,
    detach: bool,
    server: str | None,
    token_file: Path | None,
    tls_ca: Path | None,
    records_per_batch: int,
    **table: Any,
) -> None:
    """Ingest edge files (PATHS; several are fed at once, merged by event time), or a
    table Spark reads (--spark), into a running graph (--graph) or the graph persisted in
    LOG_DIR (created if new), through source actors in the cluster; or an edge file
    through a gateway (--server), resuming after what the graph logged of this source
    already."""
    if bool(paths) == (spark_path is not None):
        raise click.UsageError("give edge files PATHS or --spark FILE_OR_DIR (one of them)")
    if detach and graph_name is None:
        raise click.UsageError("--detach needs --graph (a private graph stops with the command)")
    if source_id is not None and len(paths) > 1:
        raise click.UsageError("--source names one file")
    same = [p for p in paths if [q.name for q in paths].count(p.name) > 1]
    if same:
        raise click.UsageError(
            f"{' and '.join(map(str, same))} have the same source name {same[0].name}: ingest "
            "them one at a time, the second with --source NAME"
        )
    event_time = {"sort": sort, "allowed_lateness": allowed_lateness is not None}
    if spark_path is None:
        _file_options(fmt, table)
    else:
        _not_with("--spark", **event_time)
        fmt = _table_options(fmt, detach, table)
    if server is not None:
        _not_with(
            "--server", spark=spark_path, graph=graph_name, log_dir=log_dir, shards=shards,
            detach=detach, rejects=rejects,
        )  # fmt: skip
        _not_with("--server", **event_time)
        if on_error != "raise" or len(paths) > 1:
            raise click.UsageError("--server takes one PATH, and not --on-error skip")
        from chronoray.sources import open_source

        source = open_source(paths[0], fmt or "snap", name=source_id)  # type: ignore[arg-type]
        _ingest_through(server, _client(server, token_file, tls_ca), source, records_per_batch)
        return
    sets_aside = on_error == "skip" or (allowed_lateness is not None and late == "reject")
    if sets_aside and rejects is None:
        name = "rejects.tsv" if spark_path is None else "rejects.parquet"
        rejects = (log_dir or Path(".")) / name
    options = {
        "on_error": on_error,
        "rejects": rejects,
        "sort": sort,
        "allowed_lateness": allowed_lateness,
        "late": late,
        "idle_timeout": idle_timeout or 0.0,
    }
    new_dir = graph_name is None and log_dir is not None and not log_dir.exists()
    untouched = False
    try:
        with _graph(graph_name, log_dir, shards=shards, create=True) as graph:
            try:
                if spark_path is None:
                    summary = _ingest_files(graph, paths, fmt, source_id, detach, options)
                else:
                    summary = _ingest_table(
                        graph, spark_path, fmt, on_error, rejects, source_id, table
                    )
            except Exception:
                untouched = new_dir and _nothing_logged(graph)
                raise
            if summary is None:  # detached
                return
            stats = graph.stats()
    finally:  # a graph this command created and nothing went into: not left behind
        if untouched and log_dir is not None and not (rejects is not None and rejects.exists()):
            shutil.rmtree(log_dir, ignore_errors=True)
    console.print(summary, soft_wrap=True)  # lines for people: the terminal wraps them
    console.print(_stats_table(stats.as_dict()))


def _nothing_logged(graph: Any) -> bool:
    """Whether no shard of ``graph`` logged anything (``False`` if it cannot tell)."""
    try:
        return not any(s.worker_clock for s in graph.stats().shards)
    except Exception:
        return False


_TABLE_OPTIONS = {
    "src": "--src",
    "dst": "--dst",
    "time_col": "--time",
    "kind": "--kind",
    "props": "--props",
    "parts": "--parts",
}


def _file_options(fmt: str | None, table: dict[str, Any]) -> None:
    """Refuse table options for an edge file."""
    if fmt in ("parquet", "csv"):
        raise click.UsageError(f"--format {fmt} reads a table with Spark: give it with --spark")
    given = [option for key, option in _TABLE_OPTIONS.items() if table[key] is not None]
    if given:
        raise click.UsageError(f"{', '.join(given)}: options of --spark tables, not of PATH")


def _table_options(fmt: str | None, detach: bool, table: dict[str, Any]) -> str:
    """The table format (``parquet`` unless given); refuse what a table cannot do."""
    fmt = fmt or "parquet"
    if fmt not in ("parquet", "csv"):
        raise click.UsageError(f"--spark reads parquet or csv tables, not {fmt}")
    if detach:
        raise click.UsageError(
            "--detach cannot be used with --spark: the rows stay in this process's object "
            "store until they are ingested"
        )
    missing = [_TABLE_OPTIONS[key] for key in ("src", "dst", "time_col") if not table[key]]
    if missing:
        raise click.UsageError(f"--spark needs the columns {', '.join(missing)}")
    return fmt


def _ingest_files(
    graph: Any,
    paths: tuple[Path, ...],
    fmt: str | None,
    source_id: str | None,
    detach: bool,
    options: dict[str, Any],
) -> str | None:
    """Feed the edge files ``paths`` (several: at once, merged by event time); the
    summary lines (``None``: detached)."""
    from chronoray.sources import MalformedRecord, OutOfOrder, open_source

    sources = [open_source(p, fmt or "snap", name=source_id) for p in paths]  # type: ignore[arg-type]
    try:
        notes = _claim_files(graph, sources, options["sort"])
        if len(sources) == 1:
            reports = [
                graph.ingest(sources[0], progress=sys.stderr.isatty(), wait=not detach, **options)
            ]
        else:
            reports = graph.ingest_many(sources, wait=not detach, **options)
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
    if detach:
        for job in reports:
            console.print(f"source {job.name} feeding graph {graph.name}")
        return None
    lines = [_report_lines(report, options["rejects"], not options["sort"]) for report in reports]
    return "\n".join([*notes, *lines])


def _claim_files(graph: Any, sources: list[Any], sort: bool) -> list[str]:
    """Check every file against the one ingested before under its source name (refused
    with a one-line error if it holds other records) and record it; notes for people
    (``sort``: the files are fed sorted by time)."""
    from chronoray.source_files import check_files

    return check_files(graph, sources, sorted_files=sort)


def _report_lines(report: Any, rejects: Path | None, lines: bool = True) -> str:
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


def _ingest_table(
    graph: Any,
    path: Path,
    fmt: str,
    on_error: str,
    rejects: Path | None,
    source_id: str | None,
    table: dict[str, Any],
) -> str:
    """``ingest --spark``: Spark reads the table, checks, parts and orders its rows, and
    source actors feed the parts (see ``GraphCluster.ingest_spark``); the summary line."""
    from chronoray.sources import MalformedRecord
    from spark_bridge.ingest import read_table

    with console.status("Spark: reading the table (the first start takes ~10 s)"):
        frame = read_table(graph.spark(), str(path), fmt, table["header"])  # type: ignore[arg-type]
    try:
        with console.status("Spark: checking, parting and ordering the rows"):
            job = graph.ingest_spark(
                frame,
                src=table["src"],
                dst=table["dst"],
                time=table["time_col"],
                kind=table["kind"],
                props=_columns(table["props"]),
                source=source_id or path.name,
                ids=table["ids"],
                parts=table["parts"],
                on_error=on_error,
                rejects=rejects,
                wait=False,
            )
        report = job.wait(progress=sys.stderr.isatty())
    except MalformedRecord as exc:
        raise Failed(f"bad row at {exc}: nothing was ingested (see --on-error skip)") from exc
    graph.wait_idle()
    return (
        f"ingested {report.rows:,} rows of {path} in {len(report.parts)} parts in "
        f"{report.seconds:.1f} s ({report.rate:,.0f}/s; Spark {report.spark_seconds:.1f} s): "
        f"{sum(p.new for p in report.parts):,} new, {report.skipped:,} already in the graph; "
        f"rejected {report.rejected:,}"
        + (f" (written to {report.rejects})" if report.rejects else "")
    )


def _ingest_through(server: str, client: Any, source: Any, batch: int) -> None:
    """``ingest --server``: feed ``source`` through the gateway with a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from chronoray.ingest import count_lines
    from chronoray.sources import MalformedRecord

    total = count_lines(source.path) if hasattr(source, "path") else None
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with client, Progress(*columns, console=_err, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(f"ingest {source.name} via {server}", total=total)
        try:
            result = client.ingest(
                source,
                batch_size=batch,
                retry=30.0,
                on_ack=lambda ack: bar.update(task, completed=ack.through_offset),
            )
        except MalformedRecord as exc:
            raise Failed(
                f"malformed record at {exc}: everything before it was ingested, nothing after it"
            ) from exc
        stats = client.stats()
    console.print(
        f"ingested {result.sent - result.skipped:,} new records of {result.source} through "
        f"{server} in {result.seconds:.1f} s ({result.rate:,.0f}/s): {result.batches:,} "
        f"batches, each acknowledged once logged; resumed after offset "
        f"{result.resumed_after:,} ({result.skipped:,} records sent again were applied already)"
    )
    console.print(_stats_table(stats))


# -- queries ------------------------------------------------------------------------------


@main.command()
@graph_option
@log_dir_option()
@server_options
@json_option
def stats(
    graph_name: str | None,
    log_dir: Path | None,
    server: str | None,
    token_file: Path | None,
    tls_ca: Path | None,
    as_json: bool,
) -> None:
    """Vertex and edge totals, per shard, of a running graph (--graph, or --server through
    a gateway) or the one in LOG_DIR."""
    if server is not None:
        _not_with("--server", graph=graph_name, log_dir=log_dir)
        with _client(server, token_file, tls_ca) as client:
            result = client.stats()
        if as_json:
            click.echo(json.dumps(result, indent=2))
            return
        console.print(_stats_table(result))
        g = result["gateway"]
        console.print(
            f"gateway {server} (graph {result['graph']}): {g['ingest_streams']} ingestion "
            f"stream(s), {g['subscriptions']} subscription(s) open; {g['records']:,} records "
            f"in {g['batches']:,} batches acknowledged"
        )
        return
    with _graph(graph_name, log_dir) as graph:
        result = graph.stats().as_dict()
        problems = graph.status().describe() if graph_name else []
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
    else:
        console.print(_stats_table(result))
    for line in problems:
        _err.print(f"[yellow]{line}[/]")


@main.command()
@click.argument("vertex_id")
@graph_option
@log_dir_option()
@json_option
def vertex(vertex_id: str, graph_name: str | None, log_dir: Path | None, as_json: bool) -> None:
    """State and edges of one vertex."""
    from shards.core import VertexNotFound

    with _graph(graph_name, log_dir) as graph:
        try:
            found = graph.vertex(_vertex_id(vertex_id))
        except VertexNotFound as exc:
            raise Failed(f"{_error_line(exc)} in {graph_name or log_dir}") from exc
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
        for other, props in sorted(edges.items(), key=lambda kv: _id_order(kv[0]))[:50]:
            table.add_row(str(other), *(str(props.get(c, "")) for c in columns))
        console.print(table)


@main.command("snapshot")
@graph_option
@log_dir_option()
@cut_options
@click.option(
    "--out",
    type=_Path(path_type=Path),
    required=True,
    help="Folder for vertices.parquet and edges.parquet (created if missing).",
)
def snapshot_cmd(
    graph_name: str | None,
    log_dir: Path | None,
    at: float | None,
    clock: list[int] | None,
    window: tuple[float, float] | None,
    out: Path,
) -> None:
    """Write a consistent past graph as OUT/vertices.parquet and OUT/edges.parquet."""
    with _graph(graph_name, log_dir) as graph:
        snap = graph.snapshot(at, clock=clock, window=window or None)
        paths = snap.save_parquet(out)
    meta = snap.meta
    console.print(
        f"{snap!r} built in {meta.build_seconds:.2f} s, {meta.replayed:,} log entries replayed "
        f"(cut {meta.cut}); wrote {paths[0]} and {paths[1]}"
    )


@main.command()
@click.argument("algo", type=click.Choice(ANALYSIS_NAMES))
@graph_option
@log_dir_option()
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
    type=_Path(path_type=Path),
    required=True,
    help="Folder for ALGO.parquet and ALGO.png (created if missing).",
)
def analyze(
    algo: str,
    graph_name: str | None,
    log_dir: Path | None,
    at: float | None,
    clock: list[int] | None,
    window: tuple[float, float] | None,
    times: str | None,
    buckets: int,
    weight: str | None,
    alpha: float,
    top_k: int,
    engine: str,
    out: Path,
) -> None:
    """Run an analysis on a snapshot (vectorized kernels here, Ray models, or Spark through
    RayDP in this Ray cluster; --engine, by size unless told); print the top rows, the
    engine and why, write OUT/ALGO.parquet and OUT/ALGO.png."""
    params: dict[str, Any] = {}
    if algo == "pagerank":
        params = {"alpha": alpha, "weight": weight}
    elif weight is not None:
        raise click.UsageError("--weight is a pagerank option")
    try:
        cut_times = [float(t) for t in times.split(",")] if times else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--times") from None
    with _graph(graph_name, log_dir) as graph:
        with console.status(f"{algo}: snapshot, then the analysis (Spark's start takes ~10 s)"):
            result = graph.analyze(
                algo,
                at,
                clock=clock,
                window=window or None,
                times=cut_times,
                buckets=buckets,
                engine=engine,
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
    shown = {k: v for k, v in result.info.items() if v is not None and not k.startswith("engine")}
    facts = ", ".join(f"{k} {v}" for k, v in shown.items())
    console.print(f"{facts}; {result.engine} time {result.seconds:.2f} s")
    console.print(f"engine {result.engine}: {result.info['engine_reason']}")
    for path in paths:
        console.print(f"wrote {path}")


@main.command()
@click.argument("vertex_id")
@graph_option
@log_dir_option()
@click.option(
    "--from", "t0", type=EventTime(), default=None, help=f"Earliest event time: {_TIME_HELP}."
)
@click.option(
    "--to", "t1", type=EventTime(), default=None, help=f"Latest event time: {_TIME_HELP}."
)
@json_option(help="One JSON object per state.")
def history(
    vertex_id: str,
    graph_name: str | None,
    log_dir: Path | None,
    t0: float | None,
    t1: float | None,
    as_json: bool,
) -> None:
    """Every state of one vertex between two times, from its shard's log."""
    from shards.core import VertexNotFound

    with _graph(graph_name, log_dir) as graph:
        try:
            states = graph.history(_vertex_id(vertex_id), t0, t1)
        except VertexNotFound as exc:
            raise Failed(f"{_error_line(exc)} in {graph_name or log_dir}") from exc
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
@json_option(help="One JSON object per line.")
def inspect_log(
    log_dir: Path, shard: int, log_name: str, start: int | None, limit: int, as_json: bool
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


@main.command(
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> None:
    """Evaluation runs of a source checkout: WORKLOAD [--sizes ...] [--compare
    raphtory,networkx,spark] [--out DIR] (python -m bench; --help for all)."""
    sys.exit(run_checkout_module("bench", args, "chronoray bench"))


def run_checkout_module(module: str, args: Sequence[str], command: str) -> int:
    """Run ``python -m module args`` of the chronoray source checkout in the working
    directory (the benchmarks are a tool of the repository, not a part of the installed
    package: they use chronoray, chronoray does not import them); its exit code."""
    import subprocess

    if not (Path.cwd() / "bench" / "__main__.py").exists():
        raise click.ClickException(
            f"{command} runs from a chronoray source checkout: cd into one and run again"
        )
    return subprocess.run([sys.executable, "-m", module, *args], check=False).returncode


@main.command()
@click.option(
    "--out",
    type=_Path(path_type=Path),
    default=Path("chronoray-demo"),
    help="Where logs and pictures go (its logs are replaced).",
)
@click.option("--shards", type=click.IntRange(min=1), default=2, help="Shard actors of the graph.")
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
    _note_logs()


@main.command()
@click.option(
    "--out",
    type=_Path(path_type=Path),
    default=Path("chronoray-pipeline"),
    help="Where the graph's logs and the result go (its logs are replaced).",
)
@click.option(
    "--data",
    type=_Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Ratings CSV (SRC,DST,RATING,TIME) [default: the shipped Bitcoin OTC copy].",
)
@click.option(
    "--at",
    type=EventTime(),
    default=None,
    help=f"Time of the snapshot Spark analyses: {_TIME_HELP}.",
)
@click.option("--shards", type=click.IntRange(min=1), default=2, help="Shard actors of the graph.")
def pipeline(out: Path, data: Path | None, at: float | None, shards: int) -> None:
    """Spark as the data pipeline: read Bitcoin OTC with Spark, derive a column, ingest
    it with a live PageRank running, take a snapshot at T, analyse it in Spark, write
    OUT/trust.parquet -- one program, one Spark session."""
    from chronoray.datasets import bitcoinotc_path
    from chronoray.pipeline import AT, run_pipeline

    log_dir = out / "logs"
    if log_dir.exists():
        shutil.rmtree(log_dir)
    run_pipeline(data or bitcoinotc_path(), out, at=AT if at is None else at, shards=shards)
    _note_logs()


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
@click.argument("path", type=_Path(exists=True, dir_okay=False, path_type=Path))
@format_option
@graph_option
@log_dir_option(exists=False)
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
    graph_name: str | None,
    log_dir: Path | None,
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
    with _graph(graph_name, log_dir, shards=shards, create=True) as graph:
        source = open_source(path, fmt)  # type: ignore[arg-type]
        notes = _claim_files(graph, [source], sort=False)
        handle = graph.start_computation(computation)
        job = graph.ingest(source, wait=False)
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
        for line in [*notes, _report_lines(report, None)]:
            console.print(line, soft_wrap=True)
        console.print(f"[green]done[/]; final result of {handle.id}:")
        console.print(live_table(name, handle, report.updates, time.perf_counter() - started))
        handle.stop()


@main.command()
@graph_option
@log_dir_option(exists=False)
@click.option(
    "--ingest",
    "ingest_path",
    type=_Path(exists=True, dir_okay=False, path_type=Path),
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
    help="Replay from the log from this event time first [default: from the start, when "
    "nothing is ingested].",
)
@click.option("--limit", type=int, default=None, help="Stop after this many notifications.")
@click.option("--buffer", type=int, default=10_000, help="Per-shard buffer.")
@server_options
@json_option(help="One JSON object per line.")
def subscribe(
    graph_name: str | None,
    log_dir: Path | None,
    ingest_path: Path | None,
    fmt: str,
    types: tuple[str, ...],
    vertices: tuple[str, ...],
    predicate: str | None,
    since: float | None,
    limit: int | None,
    buffer: int,
    server: str | None,
    token_file: Path | None,
    tls_ca: Path | None,
    as_json: bool,
) -> None:
    """Print a notification stream of vertex updates: replayed from the logs (--since),
    and/or live while --ingest feeds a file (or, with --graph or --server, while others
    ingest)."""
    from chronoray.gateway.predicates import PREDICATES
    from chronoray.sources import open_source

    ids = [_vertex_id(v) for v in vertices] or None
    if predicate is not None and predicate not in PREDICATES:
        raise click.BadParameter(
            f"{predicate!r}; registered: {', '.join(sorted(PREDICATES))}", param_hint="--predicate"
        )
    if server is not None:
        _not_with("--server", graph=graph_name, log_dir=log_dir, ingest=ingest_path)
        with _client(server, token_file, tls_ca) as client:
            with client.subscribe(types, ids, predicate, since=since, buffer=buffer) as remote:
                for printed, item in enumerate(remote, start=1):
                    _print_notification(item, as_json)
                    if limit is not None and printed >= limit:
                        break
        return
    if ingest_path is None and since is None and graph_name is None:
        since = float("-inf")
    with _graph(graph_name, log_dir, create=True) as graph:
        sub = graph.subscribe(
            types=list(types) or None,
            ids=ids,
            predicate=None if predicate is None else PREDICATES[predicate],
            buffer=buffer,
            since=since,
        )
        job = None
        if ingest_path is not None:
            source = open_source(ingest_path, fmt)  # type: ignore[arg-type]
            for note in _claim_files(graph, [source], sort=False):
                _err.print(note, soft_wrap=True)
            job = graph.ingest(source, wait=False)
        printed = 0
        try:
            while limit is None or printed < limit:
                items = sub.poll(timeout=0.2)
                finished = job.done() if job is not None else graph_name is None
                if not items and finished:
                    graph.wait_idle()
                    items = sub.drain()
                    if not items:
                        break
                for item in items[: None if limit is None else limit - printed]:
                    _print_notification(item, as_json)
                    printed += 1
        finally:
            if job is not None:
                job.wait()
            sub.close()


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


def _stats_table(stats: dict[str, Any]) -> Table | Group:
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
    sources = stats.get("sources") or {}
    if not sources:
        return table
    per_source = Table(title="sources (last ingestion of each)")
    columns = ("source", "updates", "out of order", "max lateness s", "late rejected")
    for column in (*columns, "late applied"):
        per_source.add_column(column, justify="right")
    for name, c in sorted(sources.items()):
        per_source.add_row(
            name,
            f"{c['updates']:,}",
            f"{c['out_of_order']:,}",
            show_time(c["max_lateness"]),
            f"{c['late_rejected']:,}",
            f"{c['late_applied']:,}",
        )
    return Group(table, per_source)


if __name__ == "__main__":
    main()
