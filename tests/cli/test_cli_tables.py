"""Tables that fit an 80-column terminal (issue 24, item 5): the tables of inspect-log,
history, analyze activity and stats stay readable -- a number or a date is never broken
or cut, a text wraps, and columns that do not fit are dropped by priority and named
under the table; ``--csv``/``--json`` give every column; times are ISO 8601 dates."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner
from rich.console import Console

from chronoray.cli import main, rendering
from chronoray.cli.rendering import Column, View, show_date, stats_views

WIDTH = 80
T0 = 1_082_040_961  # 2004-04-15T14:56:01Z, CollegeMsg's first time
LONG_SOURCE = "college-messages-of-the-spring-term-2004-export.txt"


def _render(view: View) -> str:
    out = Console(width=WIDTH, record=True, file=io.StringIO())
    out.print(view.table(WIDTH))
    return out.export_text()


def _column(text: str, index: int) -> list[str]:
    """The cells of column ``index`` of a rendered table, one per line of its body."""
    return [line.split("│")[index + 1].strip() for line in text.splitlines() if "│" in line]


def _readable(text: str) -> None:
    assert all(len(line) <= WIDTH for line in text.splitlines()), text
    assert "…" not in text, text  # rich cut nothing


def test_show_date():
    assert show_date(float(T0)) == "2004-04-15T14:56:01Z"
    assert show_date(7.0) == "7" and show_date(float("inf")) == "inf"


def test_columns_that_do_not_fit_are_dropped_by_priority_and_named():
    names = ["time", "vertices", "edges", "messages", "active_edges", "active_vertices"]
    columns = [Column(n, k, show=show_date if n == "time" else str) for k, n in enumerate(names)]
    rows = [[T0 + 86_400.0 * k, 1899, 20296, 59835, 1234, 567] for k in range(3)]
    text = _render(View("activity", columns, rows))
    _readable(text)
    header = next(line for line in text.splitlines() if "┃" in line)
    kept = [n for n in names if n in header]
    assert kept == names[: len(kept)] and len(kept) < len(names)  # the lowest priority went
    assert f"not shown at {WIDTH} columns: {', '.join(names[len(kept) :])}" in " ".join(
        text.split()
    )
    assert _column(text, 0) == [show_date(r[0]) for r in rows]  # dates whole


def test_a_long_text_wraps_and_numbers_stay_whole():
    stats = {
        "vertices": 1899,
        "edges": 20296,
        "shards": [],
        "sources": {
            LONG_SOURCE: {
                "updates": 59835,
                "out_of_order": 12,
                "max_lateness": 3.5,
                "late_rejected": 1,
                "late_applied": 0,
            }
        },
    }
    text = _render(stats_views(stats)[1])
    _readable(text)
    assert "".join(_column(text, 0)) == LONG_SOURCE  # wrapped over lines, nothing lost
    assert "59,835" in _column(text, 1)


@pytest.fixture(scope="module")
def graph(ray_session, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    data = folder / "edges.txt"
    data.write_text("".join(f"{i % 7} {i % 5 + 10} {T0 + 3600 * i}\n" for i in range(60)))
    log_dir = folder / "graph"
    done = _run("ingest", data, "--source", LONG_SOURCE, "--log-dir", log_dir)
    assert done.exit_code == 0, done.output
    return log_dir


def _run(*argv):
    return CliRunner().invoke(main, [str(a) for a in argv])


@pytest.fixture
def narrow(monkeypatch):
    monkeypatch.setattr(rendering.console, "width", WIDTH)


@pytest.mark.ray
@pytest.mark.parametrize(
    "argv",
    [
        ["stats"],
        ["history", "1"],
        ["inspect-log"],
        ["inspect-log", "--log", "clocks"],
        ["analyze", "activity", "--window", "2004-04-15", "2004-04-18", "--buckets", "4"],
    ],
    ids=["stats", "history", "inspect-log", "inspect-log-clocks", "analyze-activity"],
)
def test_tables_fit_80_columns_and_csv_json_have_every_column(graph, narrow, tmp_path, argv):
    extra = ["--out", tmp_path / "out", "--engine", "local"] if argv[0] == "analyze" else []
    shown = _run(*argv, "--log-dir", graph, *extra)
    assert shown.exit_code == 0, shown.output
    _readable(shown.stdout)
    as_csv = _run(*argv, "--log-dir", graph, *extra, "--csv")
    assert as_csv.exit_code == 0, as_csv.output
    header = next(csv.reader(io.StringIO(as_csv.stdout)))
    dropped = [line for line in shown.stdout.splitlines() if "not shown at" in line]
    text = " ".join(shown.stdout.split())
    for name in header:  # every column is in the table or named as not shown
        assert name in text, (name, shown.stdout)
    if len(header) > 6:
        assert dropped, shown.stdout
    as_json = _run(*argv, "--log-dir", graph, *extra, "--json")
    assert as_json.exit_code == 0, as_json.output
    lines = as_json.stdout.strip().splitlines()
    assert json.loads(as_json.stdout) if argv[0] in ("stats", "analyze") else json.loads(lines[0])


@pytest.mark.ray
def test_history_and_activity_show_dates(graph, narrow, tmp_path):
    history = _run("history", "1", "--log-dir", graph)
    assert history.exit_code == 0, history.output
    assert "2004-04-15T15:56:01Z" in history.stdout  # the edge of line 1, at T0 + 1 h
    window = ["--window", "2004-04-15", "2004-04-18", "--buckets", "3", "--engine", "local"]
    activity = _run("analyze", "activity", *window, "--out", tmp_path, "--log-dir", graph)
    assert activity.exit_code == 0, activity.output
    body = [line for line in activity.stdout.splitlines() if "│" in line]
    assert "2004-04-16T00:00:00Z" in _column("\n".join(body), 0)
    assert not [line for line in body if "e+09" in line]  # the title is the analysis's own


@pytest.mark.ray
def test_vertex_csv_lists_every_edge_with_its_direction(graph):
    result = _run("vertex", "1", "--log-dir", graph, "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    # vertex 1 (the lines i with i % 7 == 1) sends to i % 5 + 10 and receives nothing
    assert {r["direction"] for r in rows} == {"out"}
    targets = [int(r["vertex"]) for r in rows]
    expected = sorted({i % 5 + 10 for i in range(60) if i % 7 == 1})
    assert targets == expected
