"""Output for people: tables that fit the terminal, times as ISO 8601 dates, and the same
tables as JSON or CSV for programs.

A table is a :class:`View`: columns with a priority and rows of values. Printed for
people (:func:`show`) it fits the console's width: a text column wraps rather than being
cut, a number or a date is never broken, and when even that does not fit, columns are
dropped lowest priority first and named in the table's caption. ``--csv`` prints every
column with its values in full, ``--json`` the command's own JSON.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import click
from rich.console import Console, Group, RenderableType
from rich.table import Table

from shards.watermark import show_date, show_time

__all__ = [
    "Column",
    "View",
    "console",
    "err_console",
    "note_driver_log",
    "print_view",
    "short",
    "show_date",
    "stats_views",
]

console = Console()
err_console = Console(stderr=True)

"""Event times in this range (1973-03 to 2099-12, as Unix seconds) are shown as dates;
others -- a data set's own small counters -- as the numbers they are."""


def short(value: Any, width: int = 60) -> str:
    """``value`` as text of at most ``width`` characters (cut with an ellipsis)."""
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class Column:
    """A column of a :class:`View`. ``priority``: lower is kept longer when the terminal is
    too narrow (``0``: never dropped); ``wrap``: a text that may wrap over lines (else,
    as numbers and dates, it is never broken); ``show``: a value as shown in the table
    (CSV gets the value itself)."""

    name: str
    priority: int = 0
    wrap: bool = False
    justify: Literal["left", "right"] = "right"
    show: Callable[[Any], str] = str


READABLE = 16
"""Narrowest width a wrapping column is given (or its widest cell, if narrower)."""


@dataclass
class View:
    """A table: a title, columns and rows of values (one per column)."""

    title: str
    columns: Sequence[Column]
    rows: Sequence[Sequence[Any]] = field(default_factory=list)

    def cells(self) -> list[list[str]]:
        """The rows as shown in the table."""
        return [[c.show(v) for c, v in zip(self.columns, row, strict=True)] for row in self.rows]

    def fit(self, width: int) -> tuple[list[int], list[int]]:
        """Which columns fit in ``width`` characters, by index, and which are dropped."""
        cells = self.cells()
        need = []
        for k, column in enumerate(self.columns):
            natural = max([len(column.name), *(len(row[k]) for row in cells)])
            words = max((len(w) for w in column.name.split()), default=1)
            need.append(min(natural, max(READABLE, words)) if column.wrap else natural)
        kept: list[int] = []
        used = 1  # the left border
        order = sorted(range(len(self.columns)), key=lambda k: self.columns[k].priority)
        for k in order:
            extra = need[k] + 3  # padding on both sides and a border
            if used + extra <= width or self.columns[k].priority == 0 or not kept:
                kept.append(k)
                used += extra
        dropped = [k for k in range(len(self.columns)) if k not in kept]
        return sorted(kept), dropped

    def table(self, width: int) -> Table:
        """The table for a terminal ``width`` characters wide."""
        kept, dropped = self.fit(width)
        cells = self.cells()
        caption = None
        if dropped:
            names = ", ".join(self.columns[k].name for k in dropped)
            caption = f"not shown at {width} columns: {names} (--csv or --json show them)"
        table = Table(title=self.title, caption=caption)
        for k in kept:
            column = self.columns[k]
            natural = max([len(column.name), *(len(row[k]) for row in cells)])
            table.add_column(
                column.name,
                justify=column.justify,
                overflow="fold",
                no_wrap=not column.wrap,
                min_width=min(natural, READABLE) if column.wrap else natural,
            )
        for row in cells:
            table.add_row(*(row[k] for k in kept))
        return table

    def csv(self) -> str:
        """Every column, values in full, as CSV (a header line first)."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow([c.name for c in self.columns])
        for row in self.rows:
            writer.writerow(["" if v is None else v for v in row])
        return text.getvalue()


def print_view(
    views: View | Sequence[View],
    output: str = "table",
    data: Any = None,
    *,
    lines: bool = False,
) -> None:
    """Print ``views`` as ``output`` says: tables fitting the console, CSV (several views
    separated by a blank line), or ``data`` as JSON (``lines``: one JSON value per line
    of the list ``data``)."""
    several = [views] if isinstance(views, View) else list(views)
    if output == "json":
        if lines:
            for item in data:
                click.echo(json.dumps(item, default=str))
        else:
            click.echo(json.dumps(data, indent=2, default=str))
    elif output == "csv":
        click.echo("\n".join(view.csv() for view in several), nl=False)
    else:
        renderables: list[RenderableType] = [view.table(console.width) for view in several]
        console.print(Group(*renderables))


def stats_views(stats: dict[str, Any]) -> list[View]:
    """The tables of a graph's statistics: per shard, and per source (if any)."""
    count = "{:,}".format
    shards = View(
        f"graph: {stats['vertices']:,} vertices, {stats['edges']:,} edges",
        [
            Column("shard"),
            Column("vertices", show=count),
            Column("edges", show=count),
            Column("worker clock", show=count),
            Column("errors"),
            Column("restarted"),
        ],
        [
            [
                s["shard"],
                s["vertices"],
                s["edges"],
                s["worker_clock"],
                s["errors"],
                s.get("restarted", False),
            ]
            for s in stats["shards"]
        ],
    )
    sources = stats.get("sources") or {}
    if not sources:
        return [shards]
    per_source = View(
        "sources (last ingestion of each)",
        [
            Column("source", wrap=True, justify="left"),
            Column("updates", show=count),
            Column("out of order", 2, show=count),
            Column("max lateness s", 3, show=show_time),
            Column("late rejected", 1, show=count),
            Column("late applied", 1, show=count),
        ],
        [
            [
                name,
                c["updates"],
                c["out_of_order"],
                c["max_lateness"],
                c["late_rejected"],
                c["late_applied"],
            ]
            for name, c in sorted(sources.items())
        ],
    )
    return [shards, per_source]


def note_driver_log() -> None:
    """Name the file Ray's and Spark's own log lines of this run went to (a command's last
    line, on stderr, never wrapped: the path stays one piece to copy)."""
    from chronoray.connect import driver_log_path

    err_console.print(
        f"[dim]Ray's and Spark's own log lines: {driver_log_path()}[/]", soft_wrap=True
    )
