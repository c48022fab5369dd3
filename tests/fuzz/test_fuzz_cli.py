"""Fuzzing the CLI's arguments: random options and values for the commands that read a
graph or a file. Bad arguments end with exit status 2 and an ``Error:`` line naming the
option -- never a traceback, and never after Ray was started."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import ray
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from chronoray.cli import main

COMMANDS = {
    "ingest": ["missing.txt"],
    "stats": [],
    "vertex": ["1"],
    "history": ["1"],
    "inspect-log": [],
    "snapshot": [],
}
SKIP = {"--server", "--graph", "--spark", "--token-file", "--tls-ca", "--help"}
values = st.one_of(
    st.sampled_from(["0", "-1", "nan", "inf", "x", "", "1e309", "3", "snap", "a,b", "--json"]),
    st.text(max_size=6),
    st.integers(-(2**64), 2**64).map(str),
)


def _options(command: str) -> list[str]:
    cmd = main.commands[command]
    return sorted(o for p in cmd.params for o in getattr(p, "opts", []) if o.startswith("--"))


class StartedRay(AssertionError):
    """The command reached Ray."""


@contextmanager
def _without_ray() -> Iterator[None]:
    """Ray looks not started, and starting it fails the test (the session's Ray may run
    for other tests: its being initialised says nothing about this command)."""

    def refuse(*args, **kwargs):
        raise StartedRay("the command started Ray")

    with (
        mock.patch.object(ray, "is_initialized", lambda: False),
        mock.patch.object(ray, "init", refuse),
    ):
        yield


def _invoke(argv: list[str]):
    with _without_ray():
        return CliRunner().invoke(main, argv)


def _assert_refused(result, argv) -> None:
    assert not isinstance(result.exception, StartedRay), f"{argv} started Ray"
    assert isinstance(result.exception, SystemExit), (argv, result.exception)
    assert result.exit_code == 2, (argv, result.exit_code, result.output)
    assert "Error:" in result.output and "Traceback" not in result.output, result.output


@given(data=st.data(), command=st.sampled_from(sorted(COMMANDS)))
def test_bad_arguments_are_usage_errors(tmp_path_factory, data, command):
    options = [o for o in _options(command) if o not in SKIP]
    picked = data.draw(st.lists(st.sampled_from(options), max_size=4))
    argv = [command, *COMMANDS[command], "--log-dir", "no-such-dir"]
    for option in picked:
        argv += [option, data.draw(values)]
    with CliRunner().isolated_filesystem(temp_dir=tmp_path_factory.mktemp("cli")):
        _assert_refused(_invoke(argv), argv)


NUMERIC = {
    "--shards": ["0", "-1", "x", "nan", "1.5"],
    "--allowed-lateness": ["-1", "nan", "x"],
    "--idle-timeout": ["0", "-1", "nan", "x"],
    "--records-per-batch": ["0", "-3", "x"],
    "--parts": ["0", "2"],
}


@given(option=st.sampled_from(sorted(NUMERIC)), data=st.data())
def test_a_bad_number_for_an_existing_file_is_refused_before_ray(tmp_path_factory, option, data):
    value = data.draw(st.sampled_from(NUMERIC[option]))
    with CliRunner().isolated_filesystem(temp_dir=tmp_path_factory.mktemp("cli")):
        with open("edges.txt", "w") as f:
            f.write("1 2 3\n2 3 4\n")
        argv = ["ingest", "edges.txt", "--log-dir", "g", option, value]
        result = _invoke(argv)
        _assert_refused(result, argv)
        assert option in result.output


def test_a_nul_in_a_path_is_a_usage_error(tmp_path):
    """Found by the long campaign: ``--log-dir $'\\0'`` ended in ``error: ValueError:
    embedded null byte`` (exit 1) instead of a usage error naming the option."""
    with CliRunner().isolated_filesystem(temp_dir=tmp_path):
        with open("edges.txt", "w") as f:
            f.write("1 2 3\n")
        for argv in (
            ["stats", "--log-dir", "\x00"],
            ["stats", "--log-dir", "g\x00h"],
            ["ingest", "edges.txt", "--log-dir", "g\x00"],
            ["ingest", "e\x00dges.txt", "--log-dir", "g"],
            ["--config", "c\x00.toml", "stats", "--log-dir", "g"],
        ):
            result = _invoke(argv)
            _assert_refused(result, argv)
            assert "NUL" in result.output, result.output
