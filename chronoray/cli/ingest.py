"""``chronoray ingest``: edge files, a table Spark reads, or an edge file through a
gateway; its many options become one :class:`~chronoray.cli.feeding.IngestRequest`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from chronoray.cli.app import main
from chronoray.cli.errors import not_with
from chronoray.cli.feeding import IngestRequest, SparkTable
from chronoray.cli.options import FORMATS, PathArg, finite, shards_option
from chronoray.cli.rendering import console, print_view, stats_views
from chronoray.cli.target import Target, target_options

__all__ = ["ingest"]

F = TypeVar("F", bound=Callable[..., Any])

_TABLE_OPTIONS = {
    "src": "--src",
    "dst": "--dst",
    "time_col": "--time",
    "kind": "--kind",
    "props": "--props",
    "parts": "--parts",
}


def spark_table_options(function: F) -> F:
    """``--spark FILE_OR_DIR`` and the columns that make an update of its rows."""
    options = [
        click.option(
            "--spark",
            "spark_path",
            type=PathArg(exists=True, path_type=Path),
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
            "--parts", type=int, default=None, help="--spark: source actors  [default: shards]"
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


def property_columns(text: str | None) -> dict[str, str]:
    """``--props a,w=b``: property name -> column (a bare column is its own name).

    >>> property_columns("a,w=b")
    {'a': 'a', 'w': 'b'}
    """
    pairs = [part.strip() for part in (text or "").split(",") if part.strip()]
    return dict((p.split("=", 1) if "=" in p else (p, p)) for p in pairs)  # type: ignore[misc]


@main.command()
@click.argument("paths", nargs=-1, type=PathArg(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*FORMATS, "parquet", "csv"]),
    default=None,
    help="PATH: snap or bitcoin-csv; --spark: parquet or csv  [default: snap, --spark: parquet]",
)
@spark_table_options
@shards_option
@target_options(server=True, exists=False)
@click.option(
    "--on-error",
    type=click.Choice(["raise", "skip"]),
    default="raise",
    help="raise: stop at a malformed record (--spark: refuse the whole table); skip: count it "
    "and write it to --rejects.",
)
@click.option(
    "--rejects",
    type=PathArg(path_type=Path),
    default=None,
    help="File for skipped records and late updates; --spark: a Parquet table  [default: "
    "LOG_DIR/rejects.tsv, or ./rejects.tsv with --graph; --spark: rejects.parquet]",
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
    callback=finite,
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
    callback=finite,
    metavar="SECONDS",
    help="A source that reads nothing this long stops holding the watermark back  [default: 10]",
)
@click.option(
    "--source",
    "--source-id",
    "source_id",
    default=None,
    metavar="NAME",
    help="Source name. Ingesting a file again under its name resumes it; a new NAME ingests "
    "another file of the same name as a new source  [default: the file's name]",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Start the source actor and return (named graphs; see chronoray ls).",
)
@click.option(
    "--records-per-batch",
    type=click.IntRange(min=1),
    default=1000,
    help="--server: records per batch (each acknowledged once logged).",
)
def ingest(target: Target, paths: tuple[Path, ...], spark_path: Path | None, **given: Any) -> None:
    """Ingest edge files (PATHS; several are fed at once, merged by event time), or a
    table Spark reads (--spark), into a running graph (--graph) or the graph persisted in
    LOG_DIR (created if new), through source actors in the cluster; or an edge file
    through a gateway (--server), resuming after what the graph logged of this source
    already."""
    request = ingest_request(paths, spark_path, given)
    done = target.ingest(request)
    if done is None:  # detached
        return
    lines, stats = done
    for line in lines:
        console.print(line, soft_wrap=True)  # lines for people: the terminal wraps them
    print_view(stats_views(stats))


def ingest_request(
    paths: tuple[Path, ...], spark_path: Path | None, given: dict[str, Any]
) -> IngestRequest:
    """The :class:`IngestRequest` the options ``given`` make, or a usage error."""
    if bool(paths) == (spark_path is not None):
        raise click.UsageError("give edge files PATHS or --spark FILE_OR_DIR (one of them)")
    if given["source_id"] is not None and len(paths) > 1:
        raise click.UsageError("--source names one file")
    same = [p for p in paths if [q.name for q in paths].count(p.name) > 1]
    if same:
        raise click.UsageError(
            f"{' and '.join(map(str, same))} have the same source name {same[0].name}: ingest "
            "them one at a time, the second with --source NAME"
        )
    table_keys = ("src", "dst", "time_col", "kind", "props", "ids", "parts", "header")
    columns = {key: given.pop(key) for key in table_keys}
    fmt = given.pop("fmt")
    table = None
    if spark_path is None:
        _file_options(fmt, columns)
    else:
        lateness = given["allowed_lateness"] is not None
        not_with("--spark", sort=given["sort"], allowed_lateness=lateness)
        table = _spark_table(spark_path, fmt, given["detach"], columns)
    return IngestRequest(paths=paths, fmt=fmt or "snap", table=table, **given)


def _file_options(fmt: str | None, columns: dict[str, Any]) -> None:
    """Refuse table options for an edge file."""
    if fmt in ("parquet", "csv"):
        raise click.UsageError(f"--format {fmt} reads a table with Spark: give it with --spark")
    given = [option for key, option in _TABLE_OPTIONS.items() if columns[key] is not None]
    if given:
        raise click.UsageError(f"{', '.join(given)}: options of --spark tables, not of PATH")


def _spark_table(path: Path, fmt: str | None, detach: bool, columns: dict[str, Any]) -> SparkTable:
    """The table ``--spark`` reads (``parquet`` unless told); refuse what a table cannot do."""
    fmt = fmt or "parquet"
    if fmt not in ("parquet", "csv"):
        raise click.UsageError(f"--spark reads parquet or csv tables, not {fmt}")
    if detach:
        raise click.UsageError(
            "--detach cannot be used with --spark: the rows stay in this process's object "
            "store until they are ingested"
        )
    missing = [_TABLE_OPTIONS[key] for key in ("src", "dst", "time_col") if not columns[key]]
    if missing:
        raise click.UsageError(f"--spark needs the columns {', '.join(missing)}")
    return SparkTable(
        path=path,
        fmt=fmt,
        src=columns["src"],
        dst=columns["dst"],
        time=columns["time_col"],
        kind=columns["kind"],
        props=property_columns(columns["props"]),
        ids=columns["ids"],
        parts=columns["parts"],
        header=columns["header"],
    )
