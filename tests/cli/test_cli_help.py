"""Every option of every command -- plugin commands (``cep``) and their subcommands
included -- has help text, and every default is shown the one way: click's
``[default: ...]`` (``show_default``), or, for a default decided elsewhere (the graph, a
settings file), the same words at the end of the help (issue 24, item 5)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click

from chronoray.cli import main


def _walk(
    command: click.Command, name: str, parent: click.Context | None
) -> Iterator[tuple[str, click.Command, click.Context]]:
    ctx = click.Context(command, info_name=name, parent=parent, **command.context_settings)
    yield ctx.command_path, command, ctx
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            found = command.get_command(ctx, sub)
            assert found is not None, sub
            yield from _walk(found, sub, ctx)


def _options() -> list[tuple[str, click.Option, click.Context]]:
    return [
        (path, param, ctx)
        for path, command, ctx in _walk(main, "chronoray", None)
        for param in command.params
        if isinstance(param, click.Option)
    ]


def test_the_walk_reaches_plugin_subcommands():
    paths = {path for path, _, _ in _walk(main, "chronoray", None)}
    assert {"chronoray ingest", "chronoray cep q2", "chronoray cep generate"} <= paths


def test_every_option_of_every_command_has_help():
    missing = [(path, option.opts) for path, option, _ in _options() if not option.help]
    assert not missing


def test_every_default_is_shown_one_way():
    stated = re.compile(r"  \[default: [^\]]+\]$")
    wrong = []
    for path, option, ctx in _options():
        record = option.get_help_record(ctx)
        assert record is not None, (path, option.opts)
        text = option.help or ""
        shown_by_click = "[default: " in record[1].replace(text, "")
        if "[default:" in text:  # decided elsewhere: said at the end, click shows none
            if not stated.search(text) or shown_by_click:
                wrong.append((path, option.opts, text))
        elif not (option.required or option.is_flag or option.multiple) and option.get_default(
            ctx, call=False
        ) not in (None, False):
            if not shown_by_click:  # a plain default: click shows it
                wrong.append((path, option.opts, record[1]))
    assert not wrong, "\n".join(map(str, wrong))
