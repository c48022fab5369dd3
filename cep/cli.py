"""``chronoray cep``: run DEBS 2016 Query 1 or 2 over the official files, or generate some.

Every option can also come from ``CHRONORAY_CEP_<COMMAND>_<OPTION>`` (see ``--help``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

__all__ = ["cep"]

_err = Console(stderr=True)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group(context_settings={"auto_envvar_prefix": "CHRONORAY_CEP", "show_default": True})
def cep() -> None:
    """Complex event processing with an embedded graph (GraphCEP): DEBS 2016 Q1 and Q2."""


def _run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--out", type=click.Path(path_type=Path), required=True, show_envvar=True,
                     help="Output file (the official format, one line per change)."),
        click.option("--instances", type=int, default=4, show_envvar=True,
                     help="Operator instances (Ray actors)."),
        click.option("--runtime", type=click.Choice(["ray", "local"]), default="ray",
                     show_envvar=True, help="ray: instances in parallel; local: in process."),
        click.option("--batch-size", type=int, default=5000, show_envvar=True,
                     help="Most events per batch handed to the instances."),
        click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=None,
                     show_envvar=True,
                     help="Offer the events at this many per second (batches then hold what "
                     "arrived meanwhile); default: all at once."),
        click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise",
                     show_envvar=True,
                     help="raise: stop at a malformed line; skip: count it, write it to "
                     "--rejects."),
        click.option("--rejects", type=click.Path(path_type=Path), default=None, show_envvar=True,
                     help="File for skipped lines [default: OUT.rejects.tsv]."),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


@cep.command()
@click.option("--posts", type=_FILE, required=True, show_envvar=True, help="posts.dat")
@click.option("--comments", type=_FILE, required=True, show_envvar=True, help="comments.dat")
@_run_options
def q1(posts: Path, comments: Path, **run: Any) -> None:
    """Query 1: the top-3 posts by decaying score, a line whenever they change."""
    from cep.readers import DebsFiles

    _run("q1", DebsFiles(posts=posts, comments=comments), {}, **run)


@cep.command()
@click.option("--comments", type=_FILE, required=True, show_envvar=True, help="comments.dat")
@click.option("--likes", type=_FILE, required=True, show_envvar=True, help="likes.dat")
@click.option("--friendships", type=_FILE, required=True, show_envvar=True,
              help="friendships.dat")  # fmt: skip
@click.option("--k", "k", type=click.IntRange(min=1), default=3, show_envvar=True,
              help="Comments per line.")  # fmt: skip
@click.option("--d", "d", type=click.IntRange(min=1), default=3600, show_envvar=True,
              help="Window: a comment counts for D seconds.")  # fmt: skip
@click.option("--community", type=click.Choice(["component", "clique"]), default="component",
              show_envvar=True,
              help="component: largest connected component of the likers (the official "
              "text); clique: maximum clique (GraphCEP).")  # fmt: skip
@click.option("--store", type=click.Choice(["memory", "log"]), default="memory",
              show_envvar=True,
              help="memory: each instance keeps the graph's present state in column "
              "tables; log: a chronoray graph logging every behavior to RocksDB (history; "
              "slow).")  # fmt: skip
@click.option("--shards", type=int, default=1, show_envvar=True,
              help="Shards of each instance's chronoray graph (--store log).")  # fmt: skip
@_run_options
def q2(
    comments: Path, likes: Path, friendships: Path, k: int, d: int, community: str, store: str,
    shards: int, **run: Any,
) -> None:  # fmt: skip
    """Query 2: the top-k comments by the community of friends who liked them within D s."""
    from cep.readers import DebsFiles

    files = DebsFiles(comments=comments, likes=likes, friendships=friendships)
    params = {"k": k, "d": d, "community": community, "store": store, "shards": shards}
    _run("q2", files, params, **run)


def _run(query: str, files: Any, params: dict[str, Any], **run: Any) -> None:
    import chronoray as cr
    from cep.debs import QUERY_FILES, run_query
    from chronoray.ingest import count_lines

    out: Path = run.pop("out")
    rejects = run.pop("rejects")
    if run["on_error"] == "skip" and rejects is None:
        rejects = out.with_name(out.name + ".rejects.tsv")
    total = sum(count_lines(Path(getattr(files, kind))) for kind in QUERY_FILES[query])
    bar = cr.progress_reporter(_err.is_terminal, f"cep {query}", total, unit="events", console=_err)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with out.open("w", encoding="utf-8", newline="\n") as f, bar:
            report, stats = run_query(
                query,  # type: ignore[arg-type]
                files,
                lambda line: f.write(line + "\n"),
                on_error=run.pop("on_error"),
                rejects=rejects,
                progress=bar,
                **params,
                **run,
            )
    except cr.MalformedRecord as exc:
        _err.print(f"[red]error:[/] malformed record at {exc}", soft_wrap=True)
        before = f"the lines for the events before it are in {out}; see --on-error skip"
        _err.print(before, soft_wrap=True)  # one line each, never wrapped inside a path
        sys.exit(2)
    table = Table(title=f"DEBS 2016 {query.upper()} -> {out}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("input events", f"{report.events:,}"),
        *((f"  {kind}", f"{stats.events[kind]:,}") for kind in QUERY_FILES[query]),
        ("rejected lines", f"{stats.rejected:,}" + (f" (in {rejects})" if stats.rejected else "")),
        ("output lines", f"{report.lines:,}"),
        ("instances", f"{report.instances} ({report.runtime})"),
        ("seconds", f"{report.seconds:.2f}"),
        ("events/s", f"{report.rate:,.0f}"),
        ("batches", f"{report.batches:,}"),
        ("latency per event, mean / p99",
         f"{report.latency_mean_ms:.2f} / {report.latency_p99_ms:.2f} ms"),
        ("latency per line, mean / p99",
         f"{report.line_latency_mean_ms:.2f} / {report.line_latency_p99_ms:.2f} ms"),
        ("driver: read + split", f"{report.split_seconds:.2f} s"),
        ("driver: waiting on instances", f"{report.wait_seconds:.2f} s"),
        ("driver: merge + write", f"{report.merge_seconds:.2f} s"),
        ("instances busy (sum)", f"{sum(s['busy_seconds'] for s in report.instance_stats):.2f} s"),
    ]  # fmt: skip
    for name, value in rows:
        table.add_row(name, value)
    Console().print(table)


@cep.command()
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--events", type=click.IntRange(min=1), default=100_000, show_envvar=True)
@click.option("--seed", type=int, default=0, show_envvar=True)
@click.option("--days", type=float, default=12.0, show_envvar=True)
def generate(out_dir: Path, events: int, seed: int, days: float) -> None:
    """Write a seeded DEBS-shaped stream (posts, comments, likes, friendships .dat)."""
    from cep.generator import generate as write_stream

    counts = write_stream(out_dir, events=events, seed=seed, days=days)
    Console().print(
        f"wrote {sum(counts.values()):,} events to {out_dir}: "
        + ", ".join(f"{n:,} {kind}" for kind, n in counts.items())
    )


@cep.command()
@click.option("--events", type=click.IntRange(min=100), default=1_548_000, show_envvar=True,
              help="Lines generated (the issue's shape: posts, comments, likes, friendships).")
@click.option("--instances", type=click.IntRange(min=1), default=4, show_envvar=True)
@click.option("--java-graphcep", default=None, show_envvar=True,
              help="Command line running GraphCEP's published solution, built outside this "
              "repository ({posts} {comments} {likes} {friendships} {k} {d} {out} {query} are "
              "filled in).")
@click.option("--java-wso2", default=None, show_envvar=True,
              help="The same for the WSO2 team's solution (Q2 component).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_envvar=True, help="Where cep.json and cep.md go.")
def bench(events: int, instances: int, java_graphcep: str | None, java_wso2: str | None,
          out: Path) -> None:  # fmt: skip
    """Generate an input, run Q1 and Q2 (both ranges) on chronoray, the plain reference and
    the Java solutions if given; write the throughput and per-event latency table."""
    from chronoray.cli import run_checkout_module

    argv = ["--events", str(events), "--instances", str(instances), "--out", str(out)]
    for option, value in (("--java-graphcep", java_graphcep), ("--java-wso2", java_wso2)):
        if value:
            argv += [option, value]
    sys.exit(run_checkout_module("bench.cep", argv, "chronoray cep bench"))
