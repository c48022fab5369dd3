"""The columnar file reading (``batches()``: Arrow kernels over chunks of lines) means
exactly what the row reading (``records()``) means, on random files mixing good lines,
near misses and garbage, on chunk boundaries that cut lines, and on the real data files:
the same updates (values and their Python types), the same malformed records (file, line,
text, reason), in the same order; and the same first line going back in time."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronoray.sources as sources
from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import BitcoinCsvSource, MalformedRecord, SnapEdgeSource
from tests.fuzz.test_fuzz_sources import csv_lines, snap_lines
from vertex.columns import UpdateBatch
from vertex.records import Update

FORMATS = {"snap": (SnapEdgeSource, snap_lines), "csv": (BitcoinCsvSource, csv_lines)}


def _outcome(item: Update | MalformedRecord) -> tuple[Any, ...]:
    if isinstance(item, MalformedRecord):
        return ("malformed", item.source, item.line, item.text, item.reason)
    props = dict(item.props)
    return (item.kind, item.vertex, item.dst, item.ts, type(item.ts), props, item.offset)


def _by_rows(source: SnapEdgeSource | BitcoinCsvSource) -> list[tuple[Any, ...]]:
    return [_outcome(r) for r in source.records()]


def _by_columns(source: SnapEdgeSource | BitcoinCsvSource) -> list[tuple[Any, ...]]:
    out = []
    for item in source.batches():
        if isinstance(item, UpdateBatch):
            assert item.source == source.name and len(item) > 0
            out += [_outcome(u) for u in item.updates()]
        else:
            out.append(_outcome(item))
    return out


def _disorder_by_rows(
    source: SnapEdgeSource | BitcoinCsvSource, floor: float, applied: int
) -> tuple[Any, ...] | None:
    """The rule, line by line: a time below the largest before it, or (past line
    ``applied``) below ``floor``."""
    latest, below = -math.inf, False
    crossed = False
    for record in source.records():
        if isinstance(record, MalformedRecord):
            continue
        if record.offset > applied and not crossed:
            crossed = True
            if latest < floor:
                latest, below = floor, True
        if record.ts < latest:
            return (record.offset, record.ts, latest, below)
        latest, below = record.ts, False
    return None


def _disorder(source: SnapEdgeSource | BitcoinCsvSource, floor: float, applied: int) -> Any:
    found = source.first_disorder(floor, applied)
    return None if found is None else (found.line, found.ts, found.previous, found.floor)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@given(data=st.data(), chunk=st.sampled_from([7, 64, 1 << 22]), newline=st.booleans())
def test_columns_mean_what_rows_mean_on_random_files(
    tmp_path_factory: pytest.TempPathFactory,
    fmt: str,
    data: st.DataObject,
    chunk: int,
    newline: bool,
) -> None:
    cls, lines = FORMATS[fmt]
    text = "\n".join(data.draw(st.lists(lines, max_size=40))) + ("\n" if newline else "")
    path = tmp_path_factory.mktemp("cols") / "stream.txt"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    old = sources._CHUNK_BYTES
    sources._CHUNK_BYTES = chunk  # lines cut by chunk ends
    try:
        source = cls(path)
        assert _by_columns(source) == _by_rows(source)
        floor = data.draw(st.sampled_from([-math.inf, 0, 5, 1e9]))
        applied = data.draw(st.integers(0, 45))
        assert _disorder(source, floor, applied) == _disorder_by_rows(source, floor, applied)
    finally:
        sources._CHUNK_BYTES = old


@pytest.mark.parametrize(
    "cls, path", [(SnapEdgeSource, collegemsg_path), (BitcoinCsvSource, bitcoinotc_path)]
)
def test_columns_mean_what_rows_mean_on_the_real_files(cls: Any, path: Any) -> None:
    source = cls(path())
    rows = _by_rows(source)
    assert len(rows) > 30_000
    assert _by_columns(source) == rows
    assert source.first_disorder() is None


def test_a_chunk_the_kernels_cannot_take_is_read_row_by_row(tmp_path: Path) -> None:
    """Invalid UTF-8 and an id beyond int64 in a chunk: that chunk goes row by row,
    with the same outcomes (the big id is a valid Python int id)."""
    path = tmp_path / "odd.txt"
    path.write_bytes(b"1 2 3\n99999999999999999999 1 7\n\xff 1 2\n4 5 8\n")
    source = SnapEdgeSource(path)
    outcomes = _by_columns(source)
    assert outcomes == _by_rows(source)
    assert [o[1] for o in outcomes if o[0] != "malformed"] == [1, 99999999999999999999, 4]
    assert [o[2] for o in outcomes if o[0] == "malformed"] == [3]
