"""How the command line ends an error: in one line on stderr, without a traceback
(``chronoray --debug`` shows it). ``Error: ...`` and exit status 2 for a usage error,
``error: ...`` and 1 for a failure, 130 when interrupted."""

from __future__ import annotations

import os
import re
import signal
import threading
from typing import Any

import click

from chronoray.errors import USER_ERRORS

__all__ = ["Failed", "UsageLine", "error_line", "not_with", "one_line", "quiet_interrupts"]


class Failed(Exception):
    """A command could not do what was asked; its message is the one line shown."""


HELP_REQUESTED: type[click.UsageError] = getattr(
    click.exceptions, "NoArgsIsHelpError", type("_NeverRaised", (click.UsageError,), {})
)
"""What click raises when a group is called without a command (it then shows the help)."""


class UsageLine(click.ClickException):
    """A usage error shown as one line (exit status 2) instead of click's usage block."""

    exit_code = 2

    def __init__(self, usage: click.UsageError) -> None:
        where = usage.ctx.command_path if usage.ctx is not None else "chronoray"
        super().__init__(f"{usage.format_message()} (see {where} --help)")

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {one_line(self.format_message())}", err=True)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def one_line(text: str) -> str:
    """``text`` on one line: colour codes dropped, lines joined with "; "."""
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    return "; ".join(lines)


def error_line(exc: BaseException) -> str:
    """What an error says to people, in one line: the message of an error about what was
    asked (Ray's wrapping of an actor's error removed), else its type and first line."""
    from chronoray.sources import MalformedRecord, OutOfOrder

    cause = getattr(exc, "cause", None)  # Ray's RayTaskError: what the actor raised
    if isinstance(cause, BaseException):
        exc = cause
    if isinstance(exc, (*USER_ERRORS, Failed, MalformedRecord, OutOfOrder)):
        return one_line(str(exc))
    if type(exc).__name__ in ("VertexNotFound", "TableUnreadable"):
        return one_line(str(exc))
    first = next(iter(one_line(str(exc)).split("; ")), "")
    return f"{type(exc).__name__}: {first} (--debug shows the traceback)"


def not_with(option: str, **given: Any) -> None:
    """Refuse the options ``given`` a value next to ``option`` (``--spark``: Spark orders
    the rows itself), in one usage line naming them."""
    used = [f"--{name.replace('_', '-')}" for name, value in given.items() if value]
    if used:
        raise click.UsageError(f"{', '.join(used)} cannot be used with {option}")


def quiet_interrupts() -> None:
    """At exit, before Ray shuts down: a Ctrl-C meanwhile says so in one line instead of
    interrupting Ray's shutdown with a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _shutting_down)


def _shutting_down(signum: int, frame: Any) -> None:
    os.write(2, b"chronoray: shutting down Ray, a moment\n")
