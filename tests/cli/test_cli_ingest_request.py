"""``chronoray ingest``'s options as one value (issue 24, item 6): what they set, and
where what they set aside goes."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from chronoray.cli.feeding import IngestRequest
from chronoray.cli.ingest import ingest_request

_NONE = {
    "src": None, "dst": None, "time_col": None, "kind": None, "props": None, "ids": "int",
    "parts": None, "header": True, "fmt": None, "shards": None, "source_id": None,
    "detach": False, "on_error": "raise", "rejects": None, "sort": False,
    "allowed_lateness": None, "late": "reject", "idle_timeout": None, "records_per_batch": 1000,
}  # fmt: skip


def _request(paths=(Path("a.txt"),), spark=None, **given) -> IngestRequest:
    return ingest_request(tuple(paths), spark, {**_NONE, **given})


def test_file_options_make_the_graphs_keywords():
    request = _request(allowed_lateness=5.0, late="apply", idle_timeout=2.0)
    assert request.fmt == "snap" and request.table is None
    assert request.options() == {
        "on_error": "raise",
        "rejects": None,
        "sort": False,
        "allowed_lateness": 5.0,
        "late": "apply",
        "idle_timeout": 2.0,
    }


def test_a_table_gets_its_columns(tmp_path):
    request = _request((), tmp_path, src="a", dst="b", time_col="t", props="w=weight,c")
    assert request.table is not None and request.table.fmt == "parquet"
    assert request.table.props == {"w": "weight", "c": "c"}


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"src": "a"}, "--src: options of --spark tables"),
        ({"fmt": "csv"}, "--format csv reads a table with Spark"),
        ({"source_id": "x", "paths": (Path("a.txt"), Path("b.txt"))}, "--source names one file"),
        ({"paths": (Path("x/a.txt"), Path("y/a.txt"))}, "have the same source name a.txt"),
        ({"paths": ()}, "give edge files PATHS or --spark"),
    ],
)
def test_mistakes_are_usage_errors(given, says):
    paths = given.pop("paths", (Path("a.txt"),))
    with pytest.raises(click.UsageError, match=says):
        _request(paths, **given)


def test_what_is_set_aside_goes_to_the_log_directory_unless_told(tmp_path):
    assert _request().rejects_in(tmp_path).rejects is None  # nothing set aside
    skipped = _request(on_error="skip").rejects_in(tmp_path)
    assert skipped.rejects == tmp_path / "rejects.tsv"
    late = _request(allowed_lateness=1.0).rejects_in(tmp_path)
    assert late.rejects == tmp_path / "rejects.tsv"
    told = _request(on_error="skip", rejects=Path("mine.tsv")).rejects_in(tmp_path)
    assert told.rejects == Path("mine.tsv")
    table = _request((), tmp_path, src="a", dst="b", time_col="t", on_error="skip")
    assert table.rejects_in(tmp_path).rejects == tmp_path / "rejects.parquet"
