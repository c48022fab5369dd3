"""Every ordinary mistake ends in one line on stderr, without a traceback, with exit
status 2 for a usage error and 1 for a failure, and leaves the graph as it was (issue 24,
item 3). ``--debug`` shows the traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from chronoray.cli import main

pytestmark = pytest.mark.ray

# (id, command line, exit status, what the line says); {graph}: a graph of 2 shards,
# {data}: the file it was fed from, {dir}: a folder of test files (see ``setting``)
MISTAKES = [
    ("shards-zero", "ingest {data} --shards 0 --log-dir {graph}", 2, "0 is not in the range"),
    ("shards-not-the-graphs", "ingest {data} --shards 3 --log-dir {graph}", 2, "of 2 shards"),
    ("two-cuts", "snapshot --at 5 --clock 1,2 --out {dir}/o --log-dir {graph}", 2, "one cut"),
    ("no-graph", "stats --log-dir {dir}", 2, "holds no chronoray graph"),
    ("two-files-one-name", "ingest {data} {dir}/other/a.txt --log-dir {graph}", 2, "--source"),
    ("no-such-command", "frobnicate --log-dir {graph}", 2, "No such command"),
    ("no-config-file", "--config {dir}/missing.toml stats --log-dir {graph}", 2, "missing.toml"),
    ("missing-file", "ingest {dir}/missing.txt --log-dir {graph}", 2, "does not exist"),
    ("shard-not-there", "inspect-log --log-dir {graph} --shard 7", 2, "shard-7 does not exist"),
    ("unknown-vertex", "vertex 424242 --log-dir {graph}", 1, "vertex 424242 not found in"),
    ("unknown-vertex-history", "history 424242 --log-dir {graph}", 1, "vertex 424242 not found"),
    ("other-file-same-name", "ingest {dir}/other/a.txt --log-dir {graph}", 1, "--source NAME"),
    ("goes-back", "ingest {dir}/unsorted.txt --log-dir {graph}", 1, "nothing of this file"),
    ("malformed", "ingest {dir}/bad.txt --log-dir {graph}", 1, "malformed record at"),
    (
        "format-mismatch",
        "ingest {dir}/late.txt --format bitcoin-csv --log-dir {graph}",
        1,
        "expected 4 comma-separated fields",
    ),
]


@pytest.fixture(scope="module")
def setting(ray_session, tmp_path_factory) -> dict[str, str]:
    """A graph of 2 shards fed from ``a.txt``, and the files the mistakes use."""
    folder = tmp_path_factory.mktemp("mistakes")
    data = folder / "a.txt"
    data.write_text("".join(f"{i} {i + 1} {i * 10}\n" for i in range(1, 31)))
    (folder / "other").mkdir()
    (folder / "other" / "a.txt").write_text("7 8 400\n8 9 401\n")
    (folder / "unsorted.txt").write_text("1 2 1000\n2 3 900\n")
    (folder / "bad.txt").write_text("x y 1000\n1 2 1001\n")
    (folder / "late.txt").write_text("1 2 1000\n")
    graph = folder / "graph"
    done = _run(f"ingest {data} --shards 2 --log-dir {graph}")
    assert done.exit_code == 0, done.output
    return {"graph": str(graph), "data": str(data), "dir": str(folder)}


def _run(command: str):
    return CliRunner().invoke(main, command.split())


def _state(graph: str) -> tuple:
    """What a mistake must not change, read from the stopped graph's logs in this process
    (no Ray): per shard its last worker clock and what it applied per source (its
    cursor), and the graph at the cut "now" (vertex and edge totals)."""
    from chronoray.stopped import StoppedLogs
    from chronoray.travel import TimeTravel
    from shards.replay import read_cursor

    with StoppedLogs(graph) as logs:
        cursors = [read_cursor(store) for store in logs.stores]
        applied = [sorted({} if c is None else c.applied.items()) for c in cursors]
        now = TimeTravel(logs).snapshot()
        return logs.clocks(), applied, now.meta.vertices, now.meta.edges


@pytest.mark.parametrize(
    ("command", "status", "says"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_a_mistake_ends_in_one_line(setting, command, status, says):
    before = _state(setting["graph"])  # the same for every case unless one failed
    result = _run(command.format(**setting))
    assert result.exit_code == status, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    prefix = "Error: " if status == 2 else "error: "
    assert lines[0].startswith(prefix) and says in lines[0], lines[0]
    assert "Traceback" not in result.output and "\x1b[" not in result.output
    assert _state(setting["graph"]) == before


def test_a_failed_ingest_into_a_new_log_dir_leaves_nothing_behind(setting, tmp_path):
    new = tmp_path / "new-graph"
    result = _run(f"ingest {setting['dir']}/late.txt --format bitcoin-csv --log-dir {new}")
    assert result.exit_code == 1 and "malformed record" in result.stderr
    assert not new.exists()


def test_debug_shows_the_traceback(setting):
    from chronoray.cli import Failed

    result = _run(f"--debug vertex 424242 --log-dir {setting['graph']}")
    assert result.exit_code == 1 and isinstance(result.exception, Failed)
    assert "VertexNotFound" in type(result.exception.__cause__).__name__
