"""``chronoray ingest`` of a file under a name used before (issue 24, item 1): another
file of the same name is refused in one line naming both files and changes nothing,
``--source NAME`` ingests it as a new source, and every report says what was new, what
was already in the graph and where a resume started."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from chronoray.cli import main

pytestmark = pytest.mark.ray


def _edges(n: int, shift: int = 0, start: int = 1) -> str:
    """A chain of ``n`` edges; ``shift`` moves its ids and times (later: not late)."""
    return "".join(f"{i + shift} {i + shift + 1} {i + shift}\n" for i in range(start, start + n))


def _ingest(log_dir, *argv):
    result = CliRunner().invoke(main, ["ingest", *map(str, argv), "--log-dir", str(log_dir)])
    return result


def _counts(log_dir) -> tuple[int, int, dict]:
    result = CliRunner().invoke(main, ["stats", "--log-dir", str(log_dir), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    return stats["vertices"], stats["edges"], stats["sources"]


def test_other_file_of_a_used_name_is_refused_then_ingested_under_a_new_name(ray_session, tmp_path):
    log_dir = tmp_path / "graph"
    first = tmp_path / "a" / "events.txt"
    first.parent.mkdir()
    first.write_text(_edges(40))
    done = _ingest(log_dir, first)
    assert done.exit_code == 0, done.output
    assert "ingested events.txt: 40 updates read" in done.stdout
    assert "40 new, 0 already in the graph (a new source)" in done.stdout
    before = _counts(log_dir)

    other = tmp_path / "b" / "events.txt"
    other.parent.mkdir()
    other.write_text(_edges(40, shift=1000))
    refused = _ingest(log_dir, other)
    assert refused.exit_code == 1, refused.output
    (line,) = refused.stderr.strip().splitlines()[:1]
    assert line.startswith("error: source 'events.txt' was ingested from ")
    assert str(first.resolve()) in line and str(other.resolve()) in line
    assert "--source NAME" in line and "Traceback" not in refused.output
    assert _counts(log_dir) == before

    renamed = _ingest(log_dir, other, "--source", "events-b")
    assert renamed.exit_code == 0, renamed.output
    assert "ingested events-b: 40 updates read" in renamed.stdout and "40 new" in renamed.stdout
    vertices, edges, sources = _counts(log_dir)
    assert (vertices, edges) == (before[0] + 41, before[1] + 40)
    assert {"events.txt", "events-b"} <= set(sources)


def test_reports_say_what_was_new_and_where_a_resume_started(ray_session, tmp_path):
    log_dir = tmp_path / "graph"
    data = tmp_path / "grow.txt"
    data.write_text(_edges(30))
    assert _ingest(log_dir, data).exit_code == 0
    again = _ingest(log_dir, data)
    assert again.exit_code == 0, again.output
    assert "0 new, 30 already in the graph (resumed after line 30)" in again.stdout

    data.write_text(_edges(30) + _edges(12, start=31))  # lines appended: the same source
    grown = _ingest(log_dir, data)
    assert grown.exit_code == 0, grown.output
    assert "the file grew from 30 to 42 lines" in grown.stdout
    assert "12 new, 30 already in the graph (resumed after line 30)" in grown.stdout
    assert _counts(log_dir)[:2] == (43, 42)
