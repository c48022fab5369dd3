"""Output for people (issue 24, item 5): ids in numeric order, ``--at`` as an ISO 8601
date beside a number, and help text on every option."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from chronoray.cli import EventTime, main


def test_every_option_has_help_text():
    missing = [
        (name, option.opts)
        for name, command in [("chronoray", main), *main.commands.items()]
        for option in command.params
        if isinstance(option, click.Option) and not option.help
    ]
    assert not missing


def test_time_help_says_the_unit():
    at = next(p for p in main.commands["snapshot"].params if p.name == "at")
    assert "Unix seconds" in (at.help or "") and "ISO 8601" in (at.help or "")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2004-08-01T00:00:00Z", 1091318400.0),
        ("2004-08-01T02:00:00+02:00", 1091318400.0),
        ("2004-08-01", 1091318400.0),
        ("1091318400", 1091318400.0),
        ("12.5", 12.5),
    ],
)
def test_event_times_are_numbers_or_iso_dates(text, seconds):
    assert EventTime().convert(text, None, None) == seconds


@pytest.mark.parametrize("text", ["yesterday", "nan", "2004-13-01", "inf"])
def test_other_times_are_usage_errors(text):
    result = CliRunner().invoke(main, ["snapshot", "--at", text, "--out", "o", "--log-dir", "."])
    assert result.exit_code == 2 and "--at" in result.stderr


@pytest.mark.ray
def test_vertex_lists_ids_in_numeric_order_and_at_takes_a_date(ray_session, tmp_path):
    data = tmp_path / "edges.txt"
    data.write_text("1 100 1\n1 2 2\n1 10 3\n")
    graph = str(tmp_path / "graph")
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(data), "--log-dir", graph]).exit_code == 0
    shown = runner.invoke(main, ["vertex", "1", "--log-dir", graph])
    assert shown.exit_code == 0, shown.output
    rows = [line.split("│")[1].strip() for line in shown.stdout.splitlines() if "│" in line]
    assert [r for r in rows if r.isdigit()] == ["2", "10", "100"]
    by_date = runner.invoke(
        main,
        [
            "snapshot",
            "--at",
            "1970-01-01T00:00:02Z",
            "--out",
            str(tmp_path / "s"),
            "--log-dir",
            graph,
        ],
    )
    assert by_date.exit_code == 0, by_date.output
    assert "2 edges" in by_date.stdout and "time 2.0" in by_date.stdout


@pytest.mark.ray
def test_live_piped_prints_its_table_once_and_reports_what_was_new(ray_session, tmp_path):
    data = tmp_path / "edges.txt"
    data.write_text("".join(f"{i} {i + 1} {i}\n" for i in range(1, 41)))
    argv = ["live", str(data), "--log-dir", str(tmp_path / "graph"), "--refresh", "0.05"]
    first = CliRunner().invoke(main, argv)
    assert first.exit_code == 0, first.output
    assert first.stdout.count("live degrees:") == 1
    assert "40 new, 0 already in the graph (a new source)" in first.stdout
    again = CliRunner().invoke(main, argv)
    assert again.exit_code == 0, again.output
    assert "0 new, 40 already in the graph (resumed after line 40)" in again.stdout


@pytest.mark.ray
def test_live_prints_its_final_result_as_csv_or_json_and_nothing_else(ray_session, tmp_path):
    data = tmp_path / "edges.txt"
    data.write_text("".join(f"{i} {i + 1} {i}\n" for i in range(1, 41)))  # a path of 41
    argv = ["live", str(data), "--refresh", "0.05"]
    as_csv = CliRunner().invoke(main, [*argv, "--log-dir", str(tmp_path / "a"), "--csv"])
    assert as_csv.exit_code == 0, as_csv.output
    lines = as_csv.stdout.splitlines()
    assert lines[0] == "degree,vertices (out),vertices (in)"
    # every vertex but the last has one out-edge, every one but the first one in-edge
    assert sorted(lines[1:]) == ["0,1,1", "1,40,40"]
    assert "40 new" in as_csv.stderr  # the ingest report, off stdout
    as_json = CliRunner().invoke(main, [*argv, "--log-dir", str(tmp_path / "b"), "--json"])
    assert as_json.exit_code == 0, as_json.output
    result = json.loads(as_json.stdout)
    assert result["columns"] == ["degree", "vertices (out)", "vertices (in)"]
    assert sorted(result["rows"]) == [[0, 1, 1], [1, 40, 40]]
    assert result["title"].startswith("live degrees: 40 updates")
