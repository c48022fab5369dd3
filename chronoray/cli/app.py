"""The ``chronoray`` group: its own options (``--config``, ``--address``, ``--debug``),
the settings every command reads, the one-line error handling, and plugin commands."""

from __future__ import annotations

import atexit
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from chronoray.cli.errors import HELP_REQUESTED, UsageLine, error_line, quiet_interrupts
from chronoray.cli.options import PathArg, setting
from chronoray.cli.runlog import begin_run_log
from chronoray.config import Config

__all__ = ["PLUGIN_GROUP", "CommandGroup", "Settings", "main"]

PLUGIN_GROUP = "chronoray.commands"
"""Entry-point group of commands other packages add (``cep``): loaded only when used, so
``chronoray`` imports none of the packages built on it."""


@dataclass
class Settings:
    """What the group's options set, for every command (``ctx.obj``)."""

    config_file: Path | None
    address: str | None

    def config(self, **overrides: Any) -> Config:
        """The graph settings: defaults < ``--config`` file < environment < options."""
        try:
            return Config.load(self.config_file, ray_address=self.address, **overrides)
        except ValueError as exc:  # a setting out of range (option, file or environment)
            raise click.UsageError(str(exc)) from None


class CommandGroup(click.Group):
    """Ends every error in one line on stderr -- ``Error:`` and exit status 2 for a usage
    error, ``error:`` and 1 for a failure, 130 when interrupted; the traceback only with
    ``--debug`` -- and adds plugin commands."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, HELP_REQUESTED):
            raise
        except click.UsageError as exc:
            if ctx.params.get("debug"):
                raise
            raise UsageLine(exc) from None
        except click.ClickException:
            raise
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"error: {error_line(exc)}", err=True)  # one line, never wrapped
            sys.exit(1)
        finally:
            atexit.unregister(quiet_interrupts)  # registered last: runs before Ray's own
            atexit.register(quiet_interrupts)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except HELP_REQUESTED:  # no command given: click shows the help
            raise
        except click.UsageError as exc:  # the group's own options
            raise UsageLine(exc) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *(ep.name for ep in _plugins())})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        found = [ep for ep in _plugins() if ep.name == cmd_name]
        loaded: click.Command | None = found[0].load() if found else None
        return loaded


def _plugins() -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=PLUGIN_GROUP))


@click.group(cls=CommandGroup, context_settings={"show_default": True})
@click.version_option(package_name="chronoray", help="Show the version and exit.")
@click.option(
    "--config",
    "config_file",
    type=PathArg(exists=True, dir_okay=False, path_type=Path),
    envvar="CHRONORAY_CONFIG",
    show_envvar=True,
    default=None,
    help="TOML file of settings (table [chronoray]; [gateway] for serve, [cep] for cep); "
    "the environment and options override it.",
)
@setting(
    "ray_address",
    "--address",
    default=None,
    help="Ray cluster to join  [default: RAY_ADDRESS if set (in a Ray job), else a local one]",
)
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
@click.pass_context
def main(ctx: click.Context, config_file: Path | None, address: str | None, debug: bool) -> None:
    """chronoray: live, history-aware graph processing on Ray."""
    ctx.obj = Settings(config_file, address)
    begin_run_log()
