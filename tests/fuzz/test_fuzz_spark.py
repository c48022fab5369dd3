"""Fuzzing Parquet and CSV files through Spark into a graph (``read_table`` then
``GraphCluster.ingest_spark``, what ``chronoray ingest --spark`` runs): random small tables,
each good or with one defect -- a null id or time, NaN, infinite or negative times, text or
64-bit-overflowing ids, a missing column, an empty file, a truncated Parquet file or one
whose footer is garbage -- and always extra columns and rows out of time order allowed.

* a good file: the graph gains exactly the pairs an independent reading of the file
  (pandas / pyarrow, not Spark) gives;
* a bad one: one error of one line naming the file, and for a bad row its row number, the
  field and the value; nothing applied (the graph's edges unchanged, no source left open);
* a snapshot of a past time taken at the start reads the same after every example, and
  so does a snapshot of that time taken again.

One Spark session and one graph for the module; every defect once (explicit examples)
plus a few drawn with a fixed seed (``CHRONORAY_FUZZ=long``: the campaign, many more,
``CHRONORAY_FUZZ_SPARK_EXAMPLES`` of them)."""

from __future__ import annotations

import itertools
import json
import math
import os
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import chronoray as cr
from spark_bridge.ingest import TableUnreadable, read_table
from tests.fuzz.conftest import examples

# long: a Spark job per example, ~2 min (results: bench/results/long_tests.md); the default
# suite refuses bad Spark rows and files in tests/spark_bridge/test_spark_ingest.py
pytestmark = [pytest.mark.ray, pytest.mark.long]

COLUMNS = {"src": "src", "dst": "dst", "time": "time", "ids": "int"}
BAND = 10_000  # each example's times lie in a band above every earlier one's
HUGE = "99999999999999999999"  # past 64 bits

ROW_DEFECTS = {  # defect -> (field named in the reason, the value shown)
    "null_src": ("source id is null", None),
    "null_dst": ("target id is null", None),
    "null_time": ("time is null", None),
    "nan_time": ("time is not finite", "NaN"),
    "inf_time": ("time is not finite", "Infinity"),
    "neg_time": ("negative time", "-5"),
    "text_src": ("source id is not an integer", "x7"),
    "huge_dst": ("target id is out of the 64-bit range", HUGE),
}
FILE_DEFECTS = ["missing_time", "empty_file", "truncated", "bad_footer"]
GOOD = ["none", "extra_columns", "no_rows"]

ids = st.one_of(st.integers(0, 40), st.just(2**62))
rows = st.lists(st.tuples(ids, ids, st.integers(0, BAND - 1)), min_size=1, max_size=12)


class World:
    """The module's graph, what it must hold, and a past snapshot that must not change."""

    def __init__(self, graph: cr.GraphCluster, directory: Path) -> None:
        self.graph = graph
        self.directory = directory
        self.expected: Counter[tuple[int, int]] = Counter()
        self.examples = itertools.count(1)
        self.tried: Counter[str] = Counter()
        self.told: dict[str, str] = {}  # one refusal per kind, for the campaign's report
        seed = pd.DataFrame({"src": [1, 2, 3, 1], "dst": [2, 3, 1, 3], "time": [5, 10, 60, 90]})
        self.ingest_good(self.write("seed", "parquet", seed), "parquet", "seed")
        self.past_at = 50
        self.past = self.pairs_at(self.past_at)
        assert self.past == {(1, 2): 1, (2, 3): 1}
        self.past_snapshot = graph.snapshot(at=self.past_at)

    def write(self, name: str, fmt: str, frame: pd.DataFrame) -> Path:
        path = self.directory / f"{name}.{fmt}"
        if fmt == "parquet":
            pq.write_table(pa.table({c: _arrow(frame[c]) for c in frame.columns}), path)
        else:
            lines = [",".join(frame.columns)]
            lines += [",".join(_csv_field(v) for v in row) for row in frame.itertuples(index=False)]
            path.write_text("\n".join(lines) + "\n")
        return path

    def ingest_good(self, path: Path, fmt: str, source: str) -> None:
        frame = read_table(self.graph.spark(), str(path), fmt)
        report = self.graph.ingest_spark(frame, **COLUMNS, source=source)
        self.expected += oracle_pairs(path, fmt)
        assert report.rejected == 0 and report.rows == sum(oracle_pairs(path, fmt).values())

    def pairs(self) -> Counter[tuple[int, int]]:
        return Counter({(s, d): p["count"] for s, d, p in self.graph.edges()})

    def pairs_at(self, at: float) -> dict[tuple[int, int], int]:
        return _pairs(self.graph.snapshot(at=at).edges())


def _arrow(column: pd.Series) -> pa.Array:
    """A column as Arrow keeps it: a float NaN stays NaN (pandas would make it null)."""
    if column.dtype == "float64":
        return pa.array(column.to_numpy(), type=pa.float64(), from_pandas=False)
    return pa.array(column)


def _csv_field(value: object) -> str:
    """A CSV field as Spark reads it back: empty for null, ``NaN``/``Infinity`` spelled out."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return str(value)


def _pairs(edges: pa.Table) -> dict[tuple[int, int], int]:
    table = edges.to_pydict()
    return dict(zip(zip(table["src"], table["dst"], strict=True), table["count"], strict=True))


def oracle_pairs(path: Path, fmt: str) -> Counter[tuple[int, int]]:
    """``(src, dst)`` counts of a good file, read without Spark."""
    frame = pq.read_table(path).to_pandas() if fmt == "parquet" else pd.read_csv(path)
    return Counter((int(s), int(d)) for s, d in zip(frame["src"], frame["dst"], strict=True))


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz-spark")
    with cr.GraphCluster(num_shards=2, log_dir=str(directory / "graph")) as graph:
        world = World(graph, directory)
        yield world
    report = os.environ.get("CHRONORAY_FUZZ_SPARK_REPORT")
    if report:  # the campaign's counts: inputs tried per format and defect
        counts = {"tried": dict(sorted(world.tried.items())), "told": world.told}
        Path(report).write_text(json.dumps(counts, indent=1))


def _table(rows: list[tuple[int, int, int]], base: int, defect: str, at: int) -> pd.DataFrame:
    """The example's rows (times in its band) with ``defect`` put into row ``at``."""
    frame = pd.DataFrame(
        {
            "src": pd.array([s for s, _, _ in rows], dtype="Int64"),
            "dst": pd.array([d for _, d, _ in rows], dtype="Int64"),
            "time": pd.array([base + t for _, _, t in rows], dtype="Int64"),
        }
    )
    if defect in ("null_src", "null_dst", "null_time"):
        frame.loc[at, defect.removeprefix("null_")] = pd.NA
    elif defect in ("nan_time", "inf_time"):
        frame["time"] = frame["time"].astype("float64")
        frame.loc[at, "time"] = math.nan if defect == "nan_time" else math.inf
    elif defect == "neg_time":
        frame.loc[at, "time"] = -5
    elif defect in ("text_src", "huge_dst"):
        column = "src" if defect == "text_src" else "dst"
        frame[column] = frame[column].astype("string")
        frame.loc[at, column] = "x7" if defect == "text_src" else HUGE
    elif defect == "extra_columns":
        frame.insert(1, "note", [f"n{i}" for i in range(len(frame))])
        frame["weight"] = 0.5
    elif defect == "missing_time":
        frame = frame.drop(columns="time")
    elif defect == "no_rows":
        frame = frame.iloc[0:0]
    return frame


def _damage(path: Path, defect: str, cut: float) -> None:
    data = path.read_bytes()
    if defect == "empty_file":
        path.write_bytes(b"")
    elif defect == "truncated":
        path.write_bytes(data[: max(1, int(len(data) * cut))])
    elif defect == "bad_footer":
        path.write_bytes(data[:-8] + b"\x00\xff\x00\xffJUNK")


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text and "\tat " not in text, text
    return text


def _refused(world: World, path: Path, fmt: str, source: str) -> BaseException:
    with pytest.raises((cr.MalformedRecord, TableUnreadable, ValueError)) as refused:
        frame = read_table(world.graph.spark(), str(path), fmt)
        world.graph.ingest_spark(frame, **COLUMNS, source=source)
    return refused.value


ALL = [*GOOD, *ROW_DEFECTS, *FILE_DEFECTS]
SOME_ROWS = [(3, 4, 70), (2**62, 1, 9), (1, 2, 5), (3, 4, 70)]  # out of time order, a repeat


def _each_defect_once(test):
    """Every defect (and good kind) once as an explicit example, formats alternating:
    the default suite covers them all whatever hypothesis draws."""
    for i, defect in enumerate(ALL):
        fmt = "parquet" if i % 2 or defect in ("truncated", "bad_footer", "nan_time") else "csv"
        test = example(fmt=fmt, rows=SOME_ROWS, defect=defect, where=i, cut=0.5)(test)
    return test


# the campaign (CHRONORAY_FUZZ=long) can set its own count: each example is a Spark job
@pytest.mark.timeout(3600)  # ~20 Spark jobs: minutes on a loaded machine
@settings(max_examples=int(os.environ.get("CHRONORAY_FUZZ_SPARK_EXAMPLES", examples(1))))
@_each_defect_once
@given(
    fmt=st.sampled_from(["parquet", "csv"]),
    rows=rows,
    defect=st.sampled_from(ALL),
    where=st.integers(0, 11),
    cut=st.floats(0.05, 0.95),
)
def test_parquet_and_csv_files_through_spark(world, fmt, rows, defect, where, cut):
    if fmt == "csv" and defect in ("truncated", "bad_footer"):
        defect = "empty_file"  # a CSV file has no footer: any prefix is a CSV file
    k = next(world.examples)
    world.tried[f"{fmt} {defect}"] += 1
    at = where % len(rows)
    source = f"fuzz{k}"
    path = world.write(source, fmt, _table(rows, k * BAND, defect, at))
    _damage(path, defect, cut)
    before = world.pairs()
    if defect in GOOD:
        world.ingest_good(path, fmt, source)
        assert world.pairs() == world.expected
    else:
        error = _refused(world, path, fmt, source)
        message = _one_line(error)
        world.told.setdefault(f"{fmt} {defect}", f"{type(error).__name__}: {message}")
        assert str(path) in message, message
        if defect in ROW_DEFECTS:
            reason, value = ROW_DEFECTS[defect]
            assert isinstance(error, cr.MalformedRecord), message
            assert error.line == at + 1 and reason in error.reason, message
            assert value is None or value in message, message
            assert "nothing ingested" in message
        elif defect == "missing_time":
            assert "no column 'time'" in message, message
        else:
            assert isinstance(error, TableUnreadable), message
        assert world.pairs() == before == world.expected  # nothing half-applied
        assert not world.graph.status().sources, world.graph.status().sources
    assert _pairs(world.past_snapshot.edges()) == world.past
    assert world.pairs_at(world.past_at) == world.past
