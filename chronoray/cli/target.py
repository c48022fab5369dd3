"""The graph a command works on, chosen once per invocation: a :class:`Target`.

:class:`ClusterTarget` is a graph reached in the Ray cluster -- the running named graph
``--graph NAME``, or the one persisted in ``--log-dir DIR`` (reopened; created by the
commands that feed it). :class:`GatewayTarget` is a graph behind a gRPC gateway
(``--server HOST:PORT``, ``chronoray serve``) reached through
:class:`~chronoray.client.GatewayClient`. A command declares its target options with
:func:`target_options` and gets the chosen target as ``target``; an option of the command
that the chosen target cannot honour (``--shards`` through a gateway...) is refused there,
in one place, with one line naming it.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import click
from click.core import ParameterSource

from chronoray.cli.app import Settings
from chronoray.cli.errors import Failed, error_line
from chronoray.cli.feeding import IngestRequest, feed_files, feed_table, feed_through
from chronoray.cli.options import PathArg, log_dir_option
from chronoray.cli.rendering import note_driver_log

__all__ = [
    "AnalyzeRequest",
    "Analyzed",
    "ClusterTarget",
    "GatewayTarget",
    "SnapshotMade",
    "SubscribeRequest",
    "Target",
    "history_row",
    "target_options",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SubscribeRequest:
    """Which notifications ``chronoray subscribe`` prints: of vertex ``types``, of
    ``ids``, passing ``predicate`` (a registered name); replayed from ``since`` first;
    at most ``limit``; while ``ingest_path`` is fed (a graph in the cluster only)."""

    types: tuple[str, ...]
    ids: list[int | str] | None
    predicate: str | None
    since: float | None
    limit: int | None
    buffer: int
    ingest_path: Path | None = None
    fmt: str = "snap"


@dataclass(frozen=True)
class AnalyzeRequest:
    """What ``chronoray analyze`` runs: analysis ``name`` on one cut (``at``, ``clock``,
    ``window``, or now) or, a series analysis, at ``times`` (or ``buckets`` of
    ``window``); ``engine`` ``auto`` picks by size; ``top`` rows are shown; ``params`` go
    to the analysis (``None`` values are left out); files go to ``out``."""

    name: str
    at: float | None
    clock: list[int] | None
    window: tuple[float, float] | None
    times: list[float] | None
    buckets: int
    engine: str
    top: int
    params: dict[str, Any]
    out: Path | None


@dataclass(frozen=True)
class Analyzed:
    """An analysis as a command shows it, whichever target ran it: its cut in words, the
    ``top`` rows (a pandas DataFrame), its facts (``engine`` and ``engine_reason``
    among them), how long it took and the files written (``where`` they are)."""

    description: str
    top: Any
    info: dict[str, Any]
    seconds: float
    paths: list[str]
    where: str = ""

    @property
    def engine(self) -> str:
        """The engine that ran it (``local``, ``ray`` or ``spark``)."""
        return str(self.info.get("engine", "spark"))


@dataclass(frozen=True)
class SnapshotMade:
    """A snapshot a command wrote: its metadata (``GatewayClient.snapshot``'s keys: kind,
    at, window, cut, vertices, edges, build_seconds, replayed) and its two Parquet files
    (``where`` they are)."""

    meta: dict[str, Any]
    paths: list[str]
    where: str = ""

    def describe(self) -> str:
        """The snapshot in words, as ``repr(Snapshot)`` says it."""
        from snapshot.snapshot import Snapshot, SnapshotMeta

        m = self.meta
        window = None if m["window"] is None else tuple(m["window"])
        meta = SnapshotMeta(
            m["kind"], m["at"], window, cut=list(m["cut"]), vertices=m["vertices"],
            edges=m["edges"],
        )  # fmt: skip
        return repr(Snapshot([], [], meta))


class Target(Protocol):
    """What the commands that reach a graph either way (``stats``, ``ingest``,
    ``subscribe``, ``vertex``, ``history``, ``snapshot``, ``analyze``) ask of it. An
    unknown vertex is :class:`~chronoray.cli.errors.Failed` naming it and the graph."""

    where: str
    """The graph, in words (a name, a log directory, a gateway address)."""
    cannot: dict[str, str]
    """Parameter names of options this target cannot honour -> why (refused if given)."""

    def stats(self) -> tuple[dict[str, Any], list[str]]:
        """The graph's statistics (``GraphStats.as_dict()``'s shape) and lines about it
        for people (problems, the gateway's counters)."""
        ...

    def ingest(self, request: IngestRequest) -> tuple[list[str], dict[str, Any]] | None:
        """Feed what ``request`` says; the summary lines and the statistics afterwards
        (``None``: detached, still feeding)."""
        ...

    def notifications(self, request: SubscribeRequest) -> Iterator[Any]:
        """The notifications ``request`` asks for (``Notification`` or ``Lagged``)."""
        ...

    def vertex(self, vertex: int | str) -> dict[str, Any]:
        """Type, clock, time, state and edges of ``vertex`` now (``GraphCluster.vertex``'s
        shape)."""
        ...

    def history(
        self, vertex: int | str, t0: float | None, t1: float | None
    ) -> list[dict[str, Any]]:
        """Every state of ``vertex`` with time in ``[t0, t1]``, preceded by the one at
        ``t0`` (``wc`` 0), in :func:`history_row`'s shape."""
        ...

    def snapshot(
        self,
        at: float | None,
        clock: list[int] | None,
        window: tuple[float, float] | None,
        out: Path | None,
    ) -> SnapshotMade:
        """Build a snapshot of the cut and write it as Parquet (into ``out``)."""
        ...

    def analyze(self, request: AnalyzeRequest) -> Analyzed:
        """Run the analysis ``request`` says and write its files."""
        ...


def history_row(state: dict[str, Any]) -> dict[str, Any]:
    """One state of a vertex's history as commands show it, from either target: ``wc``
    (0: the state the vertex had at the start), ``clock``, ``time``, and ``deleted`` or
    ``type``, ``state`` and the edge counts ``out_edges``/``in_edges``."""
    row: dict[str, Any] = {"wc": state["wc"] or 0, "clock": state["clock"], "time": state["time"]}
    if state.get("deleted"):
        return row | {"deleted": True}
    out_edges, in_edges = state["out_edges"], state["in_edges"]
    return row | {
        "type": state["type"],
        "state": state["state"],
        "out_edges": out_edges if isinstance(out_edges, int) else len(out_edges),
        "in_edges": in_edges if isinstance(in_edges, int) else len(in_edges),
    }


def _needs_out(out: Path | None) -> Path:
    if out is None:
        raise click.UsageError("Missing option '--out' (the folder for the files)")
    return out


class ClusterTarget:
    """A graph in the Ray cluster: the running named graph ``graph_name``, or the one in
    ``log_dir``."""

    cannot = {"records_per_batch": "an option of a gateway's ingestion"}

    def __init__(self, settings: Settings, graph_name: str | None, log_dir: Path | None):
        self.settings = settings
        self.graph_name = graph_name
        self.log_dir = log_dir
        self.where = graph_name or str(log_dir)

    @contextmanager
    def open(
        self, *, shards: int | None = None, create: bool = False, reading: bool = False
    ) -> Iterator[Any]:
        """The graph (created if ``create`` and ``log_dir`` holds none); closing detaches
        from a named graph. After success the command's last line names the driver log.

        ``reading``: the command only reads the graph; a stopped graph in ``log_dir`` whose
        shard logs are all on this machine, with no Ray cluster asked for, is then reopened
        in this process (the same shards' code and answers as on Ray, without starting a
        Ray instance and its actors)."""
        from chronoray.graph import GraphCluster
        from chronoray.manifest import Manifest

        name, log_dir = self.graph_name, self.log_dir
        if name is not None and log_dir is not None:
            raise click.UsageError("give --graph or --log-dir, not both")
        if name is not None:
            graph = GraphCluster.attach(name, self.settings.config())
            if shards is not None and shards != graph.num_shards:
                held = graph.num_shards
                graph.close()
                raise click.UsageError(
                    f"graph {name} has {held} shards: give --shards {held} or leave it out"
                )
        elif log_dir is None:
            raise click.UsageError("give --graph NAME (a running graph) or --log-dir DIR")
        elif Manifest.exists(log_dir):
            held = Manifest.read(log_dir).num_shards
            if shards is not None and shards != held:
                raise click.UsageError(
                    f"{log_dir} holds a graph of {held} shards: give --shards {held} or leave "
                    "it out"
                )
            graph = GraphCluster.open(
                log_dir,
                config=self.settings.config(),
                num_shards=shards,
                runtime="local" if reading and self._here(log_dir) else "ray",
            )
        elif create:
            graph = GraphCluster(self.settings.config(log_dir=str(log_dir), num_shards=shards))
        else:
            raise click.UsageError(f"{log_dir} holds no chronoray graph")
        try:
            yield graph
        finally:
            graph.close()
        # only after success: a failure ends in its one error line
        click.get_current_context().call_on_close(note_driver_log)

    def _here(self, log_dir: Path) -> bool:
        """Whether the stopped graph in ``log_dir`` can be read in this process: no Ray
        cluster is asked for (``--address``, ``RAY_ADDRESS``) and its logs are all here."""
        import os

        from chronoray.stopped import readable_here

        asked = self.settings.config().ray_address or os.environ.get("RAY_ADDRESS")
        return not asked and readable_here(log_dir)

    def stats(self) -> tuple[dict[str, Any], list[str]]:
        with self.open(reading=True) as graph:
            stats = graph.stats().as_dict()
            problems = graph.status().describe() if self.graph_name else []
        return stats, problems

    def ingest(self, request: IngestRequest) -> tuple[list[str], dict[str, Any]] | None:
        if request.detach and self.graph_name is None:
            raise click.UsageError(
                "--detach needs --graph (a private graph stops with the command)"
            )
        log_dir = self.log_dir
        request = request.rejects_in(log_dir or Path("."))
        new_dir = self.graph_name is None and log_dir is not None and not log_dir.exists()
        untouched = False
        try:
            with self.open(shards=request.shards, create=True) as graph:
                try:
                    if request.table is None:
                        lines = feed_files(graph, request)
                    else:
                        lines = feed_table(graph, request)
                except Exception:
                    untouched = new_dir and _nothing_logged(graph)
                    raise
                if lines is None:  # detached
                    return None
                stats = graph.stats().as_dict()
        finally:  # a graph this command created and nothing went into: not left behind
            rejects = request.rejects
            if untouched and log_dir is not None and not (rejects and rejects.exists()):
                shutil.rmtree(log_dir, ignore_errors=True)
        return lines, stats

    def notifications(self, request: SubscribeRequest) -> Iterator[Any]:
        from chronoray.gateway.predicates import PREDICATES
        from chronoray.sources import open_source

        since = request.since
        if request.ingest_path is None and since is None and self.graph_name is None:
            since = float("-inf")
        with self.open(create=True) as graph:
            sub = graph.subscribe(
                types=list(request.types) or None,
                ids=request.ids,
                predicate=None if request.predicate is None else PREDICATES[request.predicate],
                buffer=request.buffer,
                since=since,
            )
            job = None
            if request.ingest_path is not None:
                source = open_source(request.ingest_path, request.fmt)  # type: ignore[arg-type]
                job = graph.ingest(source, wait=False)
                yield from graph.file_notes
            try:
                yield from _polled(graph, sub, job, request.limit, self.graph_name is None)
            finally:
                if job is not None:
                    job.wait()
                sub.close()

    def _found(self, find: Callable[[Any], Any]) -> Any:
        """What ``find(graph)`` returns, an unknown vertex said in one line."""
        from shards.core import VertexNotFound

        with self.open(reading=True) as graph:
            try:
                return find(graph)
            except VertexNotFound as exc:
                raise Failed(f"{error_line(exc)} in {self.where}") from exc

    def vertex(self, vertex: int | str) -> dict[str, Any]:
        return self._found(lambda graph: graph.vertex(vertex))  # type: ignore[no-any-return]

    def history(
        self, vertex: int | str, t0: float | None, t1: float | None
    ) -> list[dict[str, Any]]:
        states = self._found(lambda graph: graph.history(vertex, t0, t1))
        return [history_row(s) for s in states]

    def snapshot(
        self,
        at: float | None,
        clock: list[int] | None,
        window: tuple[float, float] | None,
        out: Path | None,
    ) -> SnapshotMade:
        out = _needs_out(out)
        snap, where = self._stopped_snapshot(at, clock, window), _FROM_LOGS
        if snap is None:
            with self.open() as graph:
                snap = graph.snapshot(at, clock=clock, window=window)
                paths = snap.save_parquet(out)
            where = ""
        else:
            paths = snap.save_parquet(out)
        m = snap.meta
        meta = {k: getattr(m, k) for k in _SNAPSHOT_META}
        return SnapshotMade(meta, [str(p) for p in paths], where)

    def _stopped_snapshot(
        self, at: float | None, clock: list[int] | None, window: tuple[float, float] | None
    ) -> Any:
        """The snapshot of a graph in ``log_dir`` that is not running, read from its logs
        here (``None``: ask the graph; why, if its logs alone cannot answer, on stderr)."""
        if self.graph_name is not None or self.log_dir is None:
            return None
        from chronoray.stopped import stopped_snapshot
        from vertex.arrow_pandas import pyarrow_with_pandas, pyarrow_without_pandas

        # this command's process hands pyarrow Python values only, until Ray is started
        pyarrow_without_pandas()
        snap, why = stopped_snapshot(self.log_dir, at, clock=clock, window=window)
        if snap is None:
            pyarrow_with_pandas()
            if why:
                click.echo(why, err=True)
        return snap

    def analyze(self, request: AnalyzeRequest) -> Analyzed:
        out = _needs_out(request.out)
        params = {k: v for k, v in request.params.items() if v is not None}
        with self.open() as graph:
            result = graph.analyze(
                request.name,
                request.at,
                clock=request.clock,
                window=request.window,
                times=request.times,
                buckets=request.buckets,
                engine=request.engine,
                **params,
            )
            paths = result.save(out)
            top = result.top(request.top)
        return Analyzed(
            result.describe(), top, dict(result.info), result.seconds, [str(p) for p in paths]
        )


_SNAPSHOT_META = ("kind", "at", "window", "cut", "vertices", "edges", "build_seconds", "replayed")
_FROM_LOGS = " (read from the logs: the graph is not running)"


def _polled(graph: Any, sub: Any, job: Any, limit: int | None, private: bool) -> Iterator[Any]:
    """A subscription's notifications until ``limit``, or until the feeding ``job`` (or,
    a ``private`` graph, the replay) is done and nothing is left."""
    given = 0
    while limit is None or given < limit:
        items = sub.poll(timeout=0.2)
        finished = job.done() if job is not None else private
        if not items and finished:
            graph.wait_idle()
            items = sub.drain()
            if not items:
                return
        for item in items[: None if limit is None else limit - given]:
            yield item
            given += 1


def _nothing_logged(graph: Any) -> bool:
    """Whether no shard of ``graph`` logged anything (``False`` if it cannot tell)."""
    try:
        return not any(s.worker_clock for s in graph.stats().shards)
    except Exception:
        return False


class GatewayTarget:
    """A graph behind the gateway ``server`` (``chronoray serve``): the gateway decides
    which graph, and feeds one edge file at a time, in order, without a rejects file."""

    cannot = {
        "graph_name": "the gateway decides the graph",
        "log_dir": "the gateway decides the graph",
        "shards": "the gateway decides the graph",
        "spark_path": "a gateway feeds edge files",
        "detach": "the command feeds the gateway itself",
        "rejects": "a gateway stops at a malformed record",
        "on_error": "a gateway stops at a malformed record",
        "sort": "a file fed through a gateway is in time order",
        "allowed_lateness": "a file fed through a gateway is in time order",
        "ingest_path": "ingest through the gateway with chronoray ingest --server",
        "out": "the gateway writes its files under its own --output-dir (their paths are printed)",
    }

    def __init__(self, server: str, token_file: Path | None, tls_ca: Path | None):
        self.server = server
        self.token_file = token_file
        self.tls_ca = tls_ca
        self.where = server

    def client(self) -> Any:
        """A :class:`~chronoray.client.GatewayClient` of the gateway (close it)."""
        from chronoray.client import GatewayClient

        return GatewayClient(self.server, token_file=self.token_file, tls_ca=self.tls_ca)

    def stats(self) -> tuple[dict[str, Any], list[str]]:
        with self.client() as client:
            stats = client.stats()
        g = stats["gateway"]
        line = (
            f"gateway {self.server} (graph {stats['graph']}): {g['ingest_streams']} ingestion "
            f"stream(s), {g['subscriptions']} subscription(s) open; {g['records']:,} records "
            f"in {g['batches']:,} batches acknowledged"
        )
        return stats, [line]

    def ingest(self, request: IngestRequest) -> tuple[list[str], dict[str, Any]] | None:
        if len(request.paths) != 1:
            raise click.UsageError("--server takes one PATH")
        with self.client() as client:
            lines = feed_through(client, self.server, request)
            return lines, client.stats()

    def notifications(self, request: SubscribeRequest) -> Iterator[Any]:
        with self.client() as client:
            with client.subscribe(
                request.types,
                request.ids,
                request.predicate,
                since=request.since,
                buffer=request.buffer,
            ) as remote:
                for given, item in enumerate(remote, start=1):
                    yield item
                    if request.limit is not None and given >= request.limit:
                        return

    def _asked(self, call: Callable[[Any], Any]) -> Any:
        """What ``call(client)`` returns; an unknown vertex said in one line, as a graph in
        the cluster says it."""
        from chronoray.errors import GatewayError

        with self.client() as client:
            try:
                return call(client)
            except GatewayError as exc:
                if exc.code != "NOT_FOUND":
                    raise
                raise Failed(f"{exc.details} in {self.where}") from exc

    def vertex(self, vertex: int | str) -> dict[str, Any]:
        return self._asked(lambda client: client.vertex(vertex))  # type: ignore[no-any-return]

    def history(
        self, vertex: int | str, t0: float | None, t1: float | None
    ) -> list[dict[str, Any]]:
        states = self._asked(lambda client: client.history(vertex, t0, t1))
        return [history_row(s) for s in states]

    def snapshot(
        self,
        at: float | None,
        clock: list[int] | None,
        window: tuple[float, float] | None,
        out: Path | None,
    ) -> SnapshotMade:
        files = self._asked(lambda client: client.snapshot(at, clock=clock, window=window))
        paths = [files.vertices_path, files.edges_path]
        return SnapshotMade(files.meta, paths, _ON_GATEWAY)

    def analyze(self, request: AnalyzeRequest) -> Analyzed:
        import pandas as pd

        params = {k: v for k, v in request.params.items() if v is not None}
        if request.engine != "auto":  # a gateway before the engine parameter: auto only
            params["engine"] = request.engine
        summary = self._asked(
            lambda client: client.analyze(
                request.name,
                request.at,
                clock=request.clock,
                window=request.window,
                times=request.times,
                buckets=request.buckets,
                top=request.top,
                **params,
            )
        )
        top = pd.DataFrame([list(row) for row in summary.top], columns=summary.columns)
        info = summary.info
        return Analyzed(summary.description, top, info, summary.seconds, summary.paths, _ON_GATEWAY)


_ON_GATEWAY = " (on the gateway's machine)"


def _refuse(ctx: click.Context, target: Target, where: str) -> None:
    """Refuse, in one usage line naming them, the options given on the command line that
    ``target`` cannot honour (a value from the environment is a standing default: it is
    left unused, not refused)."""
    given: list[str] = []
    why: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        typed = ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
        if name not in target.cannot or not typed:
            continue
        if ctx.params.get(name) in (None, False, (), param.default):
            continue
        given.append(param.opts[0])
        why += [] if target.cannot[name] in why else [target.cannot[name]]
    if given:
        raise click.UsageError(f"{', '.join(given)} cannot be used {where}: {'; '.join(why)}")


def target_options(*, server: bool = False, exists: bool = True) -> Callable[[F], F]:
    """``--graph`` and ``--log-dir`` (``exists``: the directory must exist), and with
    ``server`` the gateway's ``--server``, ``--token-file`` and ``--tls-ca``: the command
    gets the :class:`Target` they choose as ``target``."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def chosen(
            *args: Any,
            graph_name: str | None,
            log_dir: Path | None,
            server: str | None = None,
            token_file: Path | None = None,
            tls_ca: Path | None = None,
            **kwargs: Any,
        ) -> Any:
            ctx = click.get_current_context()
            target: Target
            if server is not None:
                target = GatewayTarget(server, token_file, tls_ca)
                _refuse(ctx, target, "with --server")
            else:
                target = ClusterTarget(ctx.find_object(Settings) or Settings(None, None),
                                       graph_name, log_dir)  # fmt: skip
                _refuse(ctx, target, "without --server")
            return command(*args, target=target, **kwargs)

        options = [
            click.option(
                "--graph",
                "graph_name",
                envvar="CHRONORAY_GRAPH",
                show_envvar=True,
                default=None,
                help="A running named graph (see chronoray ls); instead of --log-dir.",
            ),
            log_dir_option(exists=exists),
        ]
        if server:
            options += _server_options()
        decorated: Any = chosen
        for option in reversed(options):
            decorated = option(decorated)
        return decorated  # type: ignore[no-any-return]

    return decorate


def _server_options() -> list[Callable[[F], F]]:
    return [
        click.option(
            "--server",
            envvar="CHRONORAY_SERVER",
            show_envvar=True,
            default=None,
            metavar="HOST:PORT",
            help="A gateway (chronoray serve) in front of a running graph; instead of --graph.",
        ),
        click.option(
            "--token-file",
            type=PathArg(exists=True, dir_okay=False, path_type=Path),
            envvar="CHRONORAY_GATEWAY_TOKEN_FILE",
            show_envvar=True,
            default=None,
            help="--server: file holding the gateway's token  [default: "
            "CHRONORAY_GATEWAY_TOKEN, else ~/.chronoray/gateway-token]",
        ),
        click.option(
            "--tls-ca",
            type=PathArg(exists=True, dir_okay=False, path_type=Path),
            envvar="CHRONORAY_GATEWAY_TLS_CA",
            show_envvar=True,
            default=None,
            help="--server: PEM certificate(s) to trust; the gateway speaks TLS.",
        ),
    ]
