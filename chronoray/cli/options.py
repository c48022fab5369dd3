"""Options shared by several commands, declared once: ``--log-dir``, ``--graph``, the
cut options, ``--shards``, ``--format``, the output options (``--json``, ``--csv``).

An option that sets a graph setting reads the same environment variable as
:class:`~chronoray.config.Config` (``CHRONORAY_LOG_DIR``, ``CHRONORAY_NUM_SHARDS``...;
``--help`` shows each). An option whose default is decided elsewhere (by the graph, a
settings file) says it in its help as ``[default: ...]``, the way click shows the others.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import click

from chronoray.config import env_name

__all__ = [
    "FORMATS",
    "AnalysisName",
    "PathArg",
    "TIME_HELP",
    "ClockVector",
    "EventTime",
    "Output",
    "cut_options",
    "finite",
    "format_option",
    "id_order",
    "log_dir_option",
    "output_options",
    "setting",
    "shards_option",
    "vertex_id",
]


class PathArg(click.Path):
    """``click.Path`` that refuses a NUL character as a usage error naming the option or
    argument (the operating system cannot take one: ``os.stat`` would raise ``ValueError``,
    found by the long fuzz campaign). Every path a command takes is one of these."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and "\x00" in os.fsdecode(value):
            self.fail(f"{value!r}: a path cannot hold a NUL character", param, ctx)
        return super().convert(value, param, ctx)


F = TypeVar("F", bound=Callable[..., Any])
FORMATS = ["snap", "bitcoin-csv"]
"""Formats of edge files (``--format``)."""
TIME_HELP = "a number in the data's time unit (Unix seconds for SNAP files) or an ISO 8601 date"


def vertex_id(text: str) -> int | str:
    """A vertex id as typed: an integer if it is one, else the text."""
    try:
        return int(text)
    except ValueError:
        return text


def id_order(vertex: Any) -> tuple[int, float, str]:
    """Sort key of vertex ids: numbers in numeric order, then text ids."""
    if isinstance(vertex, int | float) and not isinstance(vertex, bool):
        return 0, vertex, ""
    return 1, 0.0, str(vertex)


class AnalysisName(click.Choice[str]):
    """One of the registered analyses (:data:`chronoray.analysis.ANALYSIS_NAMES`), read on
    first use: the registry imports the algorithms (scipy, pandas, Ray), which every other
    command, ``--help`` and shell completion of command names then start without."""

    def __init__(self) -> None:  # no names yet: see ``choices``
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:
        from chronoray.analysis import ANALYSIS_NAMES

        return tuple(ANALYSIS_NAMES)

    @choices.setter
    def choices(self, value: object) -> None:
        raise AttributeError("the analyses' names come from their registry")


class EventTime(click.ParamType[float, Any]):
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


class ClockVector(click.ParamType[list[int], Any]):
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


def setting(field: str, *decls: str, **kwargs: Any) -> Callable[[F], F]:
    """An option that sets the ``Config`` field ``field``, read from the same env name."""
    return click.option(*decls, envvar=env_name(field), show_envvar=True, **kwargs)


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse NaN, which passes click's range checks (every comparison with it is false)."""
    if value is not None and math.isnan(value):
        raise click.BadParameter("nan is not a number of seconds")
    return value


def log_dir_option(
    *,
    required: bool = False,
    exists: bool = True,
    help: str = "Log directory of a graph (reopened from its logs; one not running).",
) -> Callable[[F], F]:
    """``--log-dir``: a graph's log directory (by default, of a graph that is not running)."""
    return setting(
        "log_dir",
        "--log-dir",
        type=PathArg(exists=exists, file_okay=False, path_type=Path),
        required=required,
        default=None,
        help=help,
    )


Output = Literal["table", "json", "csv"]
"""How a table command prints: a table for people, JSON, or CSV."""


def output_options(
    *,
    json_help: str = "Print JSON instead of a table.",
    csv_help: str = "Print the table as CSV (every column, values in full).",
) -> Callable[[F], F]:
    """``--json`` and ``--csv`` (one of them): the command gets ``output`` (an
    :data:`Output`) instead."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def chosen(*args: Any, as_json: bool, as_csv: bool, **kwargs: Any) -> Any:
            if as_json and as_csv:
                raise click.UsageError("--json and --csv: give one of them")
            output: Output = "json" if as_json else "csv" if as_csv else "table"
            return command(*args, output=output, **kwargs)

        decorated = click.option("--csv", "as_csv", is_flag=True, help=csv_help)(chosen)
        return cast(F, click.option("--json", "as_json", is_flag=True, help=json_help)(decorated))

    return decorate


shards_option = setting(
    "num_shards",
    "--shards",
    type=click.IntRange(min=1),
    default=None,
    help="Shard actors  [default: 2 for a new graph, the graph's own count for an existing one]",
)
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="snap",
    help="snap: SRC DST TIME lines; bitcoin-csv: SRC,DST,RATING,TIME lines.",
)


def cut_options(function: F) -> F:
    """``--at``, ``--clock`` and ``--window``: which consistent cut of the graph."""
    function = click.option(
        "--window",
        nargs=2,
        type=EventTime(),
        default=None,
        help=f"T0 T1: changes in [T0, T1]; each {TIME_HELP}.",
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
        help=f"Event time of the cut: {TIME_HELP}, e.g. 2004-08-01T00:00:00Z.",
    )(one_cut)  # type: ignore[return-value]
