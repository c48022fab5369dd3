"""Progress reporting for long work (ingestion, processing models): one owner of the bars.

A ``progress`` argument is ``False`` (quiet), ``True`` (a rich progress bar on the
terminal) or a callable that gets each reported value instead (tests, the CLI's own
screens). :func:`progress_reporter` turns it into a :class:`Reporter`: call it with each
value, then :meth:`~Reporter.close` (or use it as a context manager).

It lives in the lowest layer that reports progress so that ``chronoray``'s ingestion and
``snapshot.models`` draw the same bars.

>>> seen = []
>>> with progress_reporter(seen.append, "ingest", total=3) as report:
...     report(1); report(3)
>>> seen
[1, 3]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vertex.annotations import mark_module_api

__all__ = ["Progress", "Reporter", "progress_reporter"]

Progress = bool | Callable[[Any], None]
"""``False``: quiet; ``True``: a rich progress bar; a callable: called with every value."""


class Reporter:
    """Reports nothing; the base of the other reporters."""

    def __call__(self, value: Any) -> None:
        return None

    def close(self) -> None:
        return None

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Callback(Reporter):
    def __init__(self, callback: Callable[[Any], None]) -> None:
        self.callback = callback

    def __call__(self, value: Any) -> None:
        self.callback(value)


class _Bar(Reporter):
    def __init__(
        self,
        title: str,
        total: int | None,
        unit: str,
        completed: Callable[[Any], int],
        describe: Callable[[Any], str],
        console: Any,
    ) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.completed = completed
        self.describe = describe
        self.progress = Progress(
            TextColumn(f"[bold]{title}[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=console,
        )
        self.task = self.progress.add_task("", total=total)
        self.progress.start()

    def __call__(self, value: Any) -> None:
        self.progress.update(
            self.task, completed=self.completed(value), description=self.describe(value)
        )

    def close(self) -> None:
        self.progress.stop()


def progress_reporter(
    progress: Progress,
    title: str,
    total: int | None = None,
    *,
    unit: str = "",
    completed: Callable[[Any], int] = int,
    describe: Callable[[Any], str] = lambda value: "",
    console: Any = None,
) -> Reporter:
    """A reporter for ``progress``: quiet, a callback, or a bar titled ``title`` out of
    ``total`` (unknown: ``None``) whose position is ``completed(value)`` and whose note is
    ``describe(value)``, drawn on ``console`` (a ``rich`` console; ``None``: stdout's)."""
    if callable(progress):
        return _Callback(progress)
    if progress:
        return _Bar(title, total, unit, completed, describe, console)
    return Reporter()


mark_module_api(globals(), public=("Reporter", "progress_reporter"))
