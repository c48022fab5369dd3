"""``chronoray cep``: run DEBS 2016 Query 1 or 2 over the official files, or generate some.

The run settings of ``q1`` and ``q2`` (:class:`CepSettings`: instances, runtime, batch
size, rate, error policy, and q2's k, d, community, store, shards) follow chronoray's
settings scheme (:mod:`chronoray.config`): defaults < the ``[cep]`` table of the
``chronoray --config`` file < ``CHRONORAY_CEP_<SETTING>`` variables < options. ``--help``
shows each variable and default.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from chronoray.cli.options import Output, PathArg, output_options
from chronoray.cli.rendering import Column, View, print_view
from chronoray.config import env_name, load_settings, read_settings_file

__all__ = ["CepSettings", "cep"]

F = TypeVar("F", bound=Callable[..., Any])
ENV_PREFIX = "CHRONORAY_CEP_"
_err = Console(stderr=True)
_FILE = PathArg(exists=True, dir_okay=False, path_type=Path)
_CHOICES = {
    "runtime": ("ray", "local"),
    "on_error": ("raise", "skip"),
    "community": ("component", "clique"),
    "store": ("memory", "log"),
}


@dataclass(frozen=True)
class CepSettings:
    """How ``chronoray cep q1``/``q2`` run (q1 uses the first five)."""

    instances: int = 4
    """Operator instances (Ray actors with ``runtime="ray"``)."""
    runtime: str = "ray"
    """``"ray"``: instances in parallel; ``"local"``: in this process."""
    batch_size: int = 5000
    """Most events per batch handed to the instances."""
    rate: float | None = None
    """Offer the events at this many per second (``None``: all at once)."""
    on_error: str = "raise"
    """A malformed line stops the run (``"raise"``) or is counted and set aside (``"skip"``)."""
    k: int = 3
    """Q2: comments per output line."""
    d: int = 3600
    """Q2: a comment counts for ``d`` seconds."""
    community: str = "component"
    """Q2: ``"component"`` (largest connected component of the likers, the official text)
    or ``"clique"`` (maximum clique, GraphCEP)."""
    store: str = "memory"
    """Q2: ``"memory"`` (column tables of the present) or ``"log"`` (a chronoray graph
    logging every behavior)."""
    shards: int = 1
    """Q2: shards of each instance's chronoray graph (``store="log"``)."""

    def __post_init__(self) -> None:
        for name in ("instances", "batch_size", "k", "d", "shards"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.rate is not None and not self.rate > 0:
            raise ValueError(f"rate must be > 0 events/s, got {self.rate}")
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> CepSettings:
        """Defaults < the ``[cep]`` table of the TOML file ``path`` < ``CHRONORAY_CEP_*``
        variables < ``overrides`` that are not ``None``."""
        return load_settings(cls, read_settings_file(path).get("cep", {}), ENV_PREFIX, overrides)

    def of(self, *names: str) -> dict[str, Any]:
        """The settings ``names`` as keywords."""
        return {name: getattr(self, name) for name in names}


_DEFAULTS = CepSettings()


def cep_setting(field: str, *decls: str, help: str, **kwargs: Any) -> Callable[[F], F]:
    """An option setting the :class:`CepSettings` field ``field``: its environment
    variable (``CHRONORAY_CEP_<FIELD>``) and default shown in ``--help``; the value
    comes from :meth:`CepSettings.load` (option, else variable, else settings file)."""
    default = getattr(_DEFAULTS, field)
    shown = "none" if default is None else default
    return click.option(
        *decls,
        field,
        envvar=env_name(field, ENV_PREFIX),
        show_envvar=True,
        default=None,
        show_default=False,
        help=f"{help}  [default: {shown}]",
        **kwargs,
    )


def _settings(given: dict[str, Any]) -> CepSettings:
    """The :class:`CepSettings` of this run: ``given`` by options over the rest."""
    from chronoray.cli import Settings

    found = click.get_current_context().find_object(Settings)
    try:
        return CepSettings.load(found.config_file if found else None, **given)
    except ValueError as exc:  # out of range, from the file, the environment or an option
        raise click.UsageError(str(exc)) from None


@click.group(context_settings={"show_default": True})
def cep() -> None:
    """Complex event processing with an embedded graph (GraphCEP): DEBS 2016 Q1 and Q2."""


def _run_options(f: F) -> F:
    options = [
        click.option("--out", type=PathArg(path_type=Path), required=True,
                     help="Output file (the official format, one line per change)."),
        cep_setting("instances", "--instances", type=click.IntRange(min=1),
                    help="Operator instances (Ray actors)."),
        cep_setting("runtime", "--runtime", type=click.Choice(_CHOICES["runtime"]),
                    help="ray: instances in parallel; local: in process."),
        cep_setting("batch_size", "--batch-size", type=click.IntRange(min=1),
                    help="Most events per batch handed to the instances."),
        cep_setting("rate", "--rate", type=click.FloatRange(min=0, min_open=True),
                    help="Offer the events at this many per second (batches then hold what "
                    "arrived meanwhile); none: all at once."),
        cep_setting("on_error", "--on-error", type=click.Choice(_CHOICES["on_error"]),
                    help="raise: stop at a malformed line; skip: count it, write it to "
                    "--rejects."),
        click.option("--rejects", type=PathArg(path_type=Path), default=None,
                     help="File for skipped lines  [default: OUT.rejects.tsv]"),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return output_options(
        json_help="Print JSON: the query, OUT and the measures (numbers whole).",
        csv_help="Print the measures as CSV (measure,value; numbers whole).",
    )(f)


_RUN = ("instances", "runtime", "batch_size", "rate", "on_error")


@cep.command()
@click.option("--posts", type=_FILE, required=True, help="posts.dat of the DEBS 2016 data.")
@click.option("--comments", type=_FILE, required=True, help="comments.dat of the data.")
@_run_options
def q1(
    posts: Path, comments: Path, out: Path, rejects: Path | None, output: Output, **given: Any
) -> None:
    """Query 1: the top-3 posts by decaying score, a line whenever they change."""
    from cep.readers import DebsFiles

    settings = _settings(given)
    _run("q1", DebsFiles(posts=posts, comments=comments), {}, settings, out, rejects, output)


@cep.command()
@click.option("--comments", type=_FILE, required=True, help="comments.dat of the DEBS 2016 data.")
@click.option("--likes", type=_FILE, required=True, help="likes.dat of the data.")
@click.option("--friendships", type=_FILE, required=True, help="friendships.dat of the data.")
@cep_setting("k", "--k", type=click.IntRange(min=1), help="Comments per line.")
@cep_setting("d", "--d", type=click.IntRange(min=1), help="Window: a comment counts for D seconds.")
@cep_setting("community", "--community", type=click.Choice(_CHOICES["community"]),
             help="component: largest connected component of the likers (the official "
             "text); clique: maximum clique (GraphCEP).")  # fmt: skip
@cep_setting("store", "--store", type=click.Choice(_CHOICES["store"]),
             help="memory: each instance keeps the graph's present state in column "
             "tables; log: a chronoray graph logging every behavior to RocksDB (history; "
             "slow).")  # fmt: skip
@cep_setting("shards", "--shards", type=click.IntRange(min=1),
             help="Shards of each instance's chronoray graph (--store log).")  # fmt: skip
@_run_options
def q2(
    comments: Path,
    likes: Path,
    friendships: Path,
    out: Path,
    rejects: Path | None,
    output: Output,
    **given: Any,
) -> None:
    """Query 2: the top-k comments by the community of friends who liked them within D s."""
    from cep.readers import DebsFiles

    settings = _settings(given)
    files = DebsFiles(comments=comments, likes=likes, friendships=friendships)
    params = settings.of("k", "d", "community", "store", "shards")
    _run("q2", files, params, settings, out, rejects, output)


def _run(
    query: str,
    files: Any,
    params: dict[str, Any],
    settings: CepSettings,
    out: Path,
    rejects: Path | None,
    output: Output = "table",
) -> None:
    import chronoray as cr
    from cep.debs import QUERY_FILES, run_query
    from chronoray.ingest import count_lines

    if settings.on_error == "skip" and rejects is None:
        rejects = out.with_name(out.name + ".rejects.tsv")
    total = sum(count_lines(Path(getattr(files, kind))) for kind in QUERY_FILES[query])
    bar = cr.progress_reporter(_err.is_terminal, f"cep {query}", total, unit="events", console=_err)
    out.parent.mkdir(parents=True, exist_ok=True)
    run = settings.of("instances", "runtime", "batch_size", "rate")
    try:
        with out.open("w", encoding="utf-8", newline="\n") as f, bar:
            report, stats = run_query(
                query,  # type: ignore[arg-type]
                files,
                lambda line: f.write(line + "\n"),
                on_error=settings.on_error,  # type: ignore[arg-type]
                rejects=None if rejects is None else str(rejects),
                progress=bar,
                **params,
                **run,
            )
    except cr.MalformedRecord as exc:
        _err.print(f"[red]error:[/] malformed record at {exc}", soft_wrap=True)
        before = f"the lines for the events before it are in {out}; see --on-error skip"
        _err.print(before, soft_wrap=True)  # one line each, never wrapped inside a path
        sys.exit(2)
    view = report_view(query, out, report, stats, rejects)
    data = {"query": query, "out": str(out), "measures": {m: v for m, v in view.rows}}
    print_view(view, output, data)


def report_view(query: str, out: Path, report: Any, stats: Any, rejects: Path | None) -> View:
    """What a query run measured, as a two-column :class:`View` (measure, value): values
    are numbers (CSV and JSON keep them whole; the table shows ``1,234`` and ``0.12``)."""
    from cep.debs import QUERY_FILES

    busy = sum(s["busy_seconds"] for s in report.instance_stats)
    rows: list[tuple[str, Any]] = [
        ("input events", report.events),
        *((f"  {kind}", stats.events[kind]) for kind in QUERY_FILES[query]),
        ("rejected lines", stats.rejected),
        *([("rejected lines file", str(rejects))] if stats.rejected else []),
        ("output lines", report.lines),
        ("instances", report.instances),
        ("runtime", report.runtime),
        ("seconds", report.seconds),
        ("events/s", report.rate),
        ("batches", report.batches),
        ("latency per event, mean ms", report.latency_mean_ms),
        ("latency per event, p99 ms", report.latency_p99_ms),
        ("latency per line, mean ms", report.line_latency_mean_ms),
        ("latency per line, p99 ms", report.line_latency_p99_ms),
        ("driver: read + split s", report.split_seconds),
        ("driver: waiting on instances s", report.wait_seconds),
        ("driver: merge + write s", report.merge_seconds),
        ("instances busy (sum) s", busy),
    ]
    columns = [Column("measure", justify="left"), Column("value", show=_shown)]
    return View(f"DEBS 2016 {query.upper()} -> {out}", columns, [list(r) for r in rows])


def _shown(value: Any) -> str:
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.2f}"


@cep.command()
@click.argument("out_dir", type=PathArg(file_okay=False, path_type=Path))
@click.option("--events", type=click.IntRange(min=1), default=100_000,
              help="Events (lines) written over the four files.")  # fmt: skip
@click.option("--seed", type=int, default=0, help="Seed of the random stream (same seed, "
              "same files).")  # fmt: skip
@click.option("--days", type=float, default=12.0, help="Days of event time the stream spans.")
def generate(out_dir: Path, events: int, seed: int, days: float) -> None:
    """Write a seeded DEBS-shaped stream (posts, comments, likes, friendships .dat)."""
    from cep.generator import generate as write_stream

    counts = write_stream(out_dir, events=events, seed=seed, days=days)
    Console().print(
        f"wrote {sum(counts.values()):,} events to {out_dir}: "
        + ", ".join(f"{n:,} {kind}" for kind, n in counts.items())
    )


@cep.command()
@click.option(
    "--events",
    type=click.IntRange(min=100),
    default=1_548_000,
    help="Lines generated (the issue's shape: posts, comments, likes, friendships).",
)
@cep_setting("instances", "--instances", type=click.IntRange(min=1),
             help="Operator instances of the chronoray runs.")  # fmt: skip
@click.option(
    "--java-graphcep",
    default=None,
    help="Command line running GraphCEP's published solution, built outside this "
    "repository ({posts} {comments} {likes} {friendships} {k} {d} {out} {query} are "
    "filled in)  [default: not run]",
)
@click.option(
    "--java-wso2",
    default=None,
    help="The same for the WSO2 team's solution (Q2 component)  [default: not run]",
)
@click.option(
    "--out",
    type=PathArg(file_okay=False, path_type=Path),
    default=Path("."),
    help="Where cep.json and cep.md go.",
)
def bench(events: int, instances: int | None, java_graphcep: str | None, java_wso2: str | None,
          out: Path) -> None:  # fmt: skip
    """Generate an input, run Q1 and Q2 (both ranges) on chronoray, the plain reference and
    the Java solutions if given; write the throughput and per-event latency table."""
    from chronoray.cli import run_checkout_module

    settings = _settings({"instances": instances})
    argv = ["--events", str(events), "--instances", str(settings.instances), "--out", str(out)]
    for option, value in (("--java-graphcep", java_graphcep), ("--java-wso2", java_wso2)):
        if value:
            argv += [option, value]
    sys.exit(run_checkout_module("bench.cep", argv, "chronoray cep bench"))
