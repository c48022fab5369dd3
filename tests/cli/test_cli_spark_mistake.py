"""``ingest --spark`` of rows older than what the graph holds (issue 24, item 3): one
line, exit status 1, and no phantom source in ``stats`` afterwards."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from chronoray.cli import main

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.long]  # ~60 s: Spark in a new process


def _stats(log_dir) -> dict:
    result = CliRunner().invoke(main, ["stats", "--log-dir", str(log_dir), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_spark_rows_older_than_the_graph_are_one_line_and_no_phantom_source(spark, tmp_path):
    newer = tmp_path / "newer.txt"
    newer.write_text("".join(f"{i} {i + 1} {1000 + i}\n" for i in range(1, 21)))
    log_dir = tmp_path / "g"
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(newer), "--log-dir", str(log_dir)]).exit_code == 0
    before = _stats(log_dir)
    older = tmp_path / "older.csv"
    older.write_text("a,b,t\n" + "".join(f"{i},{i + 50},{i}\n" for i in range(1, 9)))
    argv = ["ingest", "--spark", str(older), "--format", "csv", "--src", "a", "--dst", "b"]
    result = runner.invoke(main, [*argv, "--time", "t", "--log-dir", str(log_dir)])
    assert result.exit_code == 1, result.output
    said = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith("error: "), result.stderr
    assert "before" in said[0] and "Traceback" not in result.output
    after = _stats(log_dir)
    assert sorted(after["sources"]) == sorted(before["sources"]) == ["newer.txt"]
    assert (after["vertices"], after["edges"]) == (before["vertices"], before["edges"])
