"""The graph a command works on is chosen once per invocation (issue 24, item 6): an
option the chosen target cannot honour is refused in one line naming it, before any
graph or gateway is reached."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from chronoray.cli import main

# no gateway listens on port 1: a refusal must come before any connection is tried
_SERVER = "127.0.0.1:1"


@pytest.fixture
def edges(tmp_path):
    path = tmp_path / "edges.txt"
    path.write_text("1 2 10\n2 3 20\n")
    (tmp_path / "more.txt").write_text("3 4 30\n")
    return path


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["stats", "--server", _SERVER, "--graph", "g"], "--graph cannot be used with --server"),
        (["ingest", "{edges}", "--server", _SERVER, "--shards", "3"], "--shards cannot be used"),
        (
            ["ingest", "{edges}", "--server", _SERVER, "--sort", "--on-error", "skip"],
            "--on-error, --sort cannot be used with --server",
        ),
        (["ingest", "{edges}", "{tmp}/more.txt", "--server", _SERVER], "--server takes one PATH"),
        (["subscribe", "--server", _SERVER, "--ingest", "{edges}"], "--ingest cannot be used"),
        (
            ["ingest", "{edges}", "--log-dir", "{tmp}/g", "--records-per-batch", "5"],
            "--records-per-batch cannot be used without --server",
        ),
        (
            ["snapshot", "--server", _SERVER, "--out", "{tmp}/g"],
            "--out cannot be used with --server: the gateway writes its files under its own",
        ),
        (["analyze", "wcc", "--server", _SERVER, "--out", "{tmp}/g"], "--out cannot be used"),
        (["snapshot", "--graph", "g"], "Missing option '--out'"),
        (["analyze", "wcc", "--log-dir", "{tmp}"], "Missing option '--out'"),
    ],
)
def test_an_option_the_target_cannot_honour_is_one_line(edges, tmp_path, argv, says):
    argv = [a.format(edges=edges, tmp=tmp_path) for a in argv]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and says in line, line
    assert not (tmp_path / "g").exists()
