"""A replay applies the built-in temporal class's entries logged as columns a span at a
time, from the columns (``LogReplay._apply_logged``), and leaves exactly what applying
them entry by entry leaves: the same vertices in the same order, states with the same
keys in the same order and values of the same types, the same edge records, clocks,
times and counters -- at any time cut (inside a span too), any bound, with and without
shard checkpoints and incoming edges, and in a shard's recovery."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shards.replay
from shards.codec import (
    TEMPORAL_CREATED,
    ColumnsBlock,
    EventBlock,
    TemporalEntries,
    decode_events,
    encode_events,
)
from shards.core import Batch, ShardCore
from shards.logstore import LogName, MemoryLogStore
from shards.records import VertexRecord
from shards.replay import LogReplay
from tests.shards import test_temporal_columns
from tests.shards.test_temporal_columns import _apply, _run, _step, _types

pytestmark = pytest.mark.usefixtures("temporal_columns_at_once")

# pytest imports that module under another name too, with its own count of store names:
# this copy names its stores apart
test_temporal_columns._names = itertools.count(10**9)


class _NoColumns:
    """Stands for :class:`ColumnsBlock` in :mod:`shards.replay` while the row path runs:
    no block is one, so every entry is applied as a row."""


@contextmanager
def _entry_by_entry() -> Iterator[None]:
    saved = shards.replay.ColumnsBlock
    shards.replay.ColumnsBlock = _NoColumns  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        shards.replay.ColumnsBlock = saved  # type: ignore[misc]


@contextmanager
def _from_columns(span_rows: int = shards.replay.SPAN_ROWS) -> Iterator[None]:
    """The bulk path (applying at most ``span_rows`` entries at once), checked to never
    make a block's per-entry columns."""

    def refuse(self: ColumnsBlock) -> None:
        raise AssertionError("a replay made the per-entry columns")

    saved = ColumnsBlock._make, shards.replay.SPAN_ROWS
    ColumnsBlock._make = refuse  # type: ignore[method-assign]
    shards.replay.SPAN_ROWS = span_rows
    try:
        yield
    finally:
        ColumnsBlock._make, shards.replay.SPAN_ROWS = saved  # type: ignore[method-assign]


def _shape(value: Any) -> Any:
    """A value with its dicts' key order and every scalar's type spelled out."""
    if isinstance(value, dict):
        return [(_shape(k), _shape(v)) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return [type(value).__name__, *map(_shape, value)]
    return (type(value).__name__, value)


def _record(record: VertexRecord) -> Any:
    return _shape(
        [record.type_name, record.state, record.out_edges, record.in_edges, record.clock]
    ) + [_shape(record.time)]


def _replayed(replay: LogReplay) -> Any:
    vertices = replay.run()
    return (
        [(_shape(v), _record(r)) for v, r in vertices.items()],
        replay.applied,
        replay.last_applied,
        replay.decoded,
        replay.start,
    )


def _both(
    store: MemoryLogStore, span_rows: int = shards.replay.SPAN_ROWS, **cut: Any
) -> tuple[Any, Any]:
    with _entry_by_entry():
        rows = _replayed(LogReplay(store, **cut))
    with _from_columns(span_rows):
        bulk = _replayed(LogReplay(store, **cut))
    return rows, bulk


def _times(store: MemoryLogStore) -> list[Any]:
    """Every entry time of the log, and one between each two and beyond them."""
    times = sorted({t for _, v in store.scan(LogName.EVENTS, 1) for t in decode_events(v).time})
    between = [(a + b) / 2 for a, b in zip(times, times[1:], strict=False)]
    return [-1, *times, *between, times[-1] + 1, math.inf] if times else [math.inf]


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(_step, min_size=1, max_size=10),
    float_time=st.booleans(),
    in_edges=st.booleans(),
    checkpoint=st.booleans(),
    fractions=st.lists(st.floats(0, 1), min_size=1, max_size=4),
    span_rows=st.sampled_from([1, 7, shards.replay.SPAN_ROWS]),
)
def test_spans_apply_at_once_as_entry_by_entry(
    steps: list[Any],
    float_time: bool,
    in_edges: bool,
    checkpoint: bool,
    fractions: list[float],
    span_rows: int,
) -> None:
    """Spans of several blocks applied together too (at most ``span_rows`` entries)."""
    core, store, _ = _apply(steps, float_time)
    last = core.worker_clock
    flags = {"in_edges": in_edges, "checkpoint": checkpoint, "span_rows": span_rows}
    for at in _times(store):
        rows, bulk = _both(store, at=at, **flags)
        assert bulk == rows, f"cut at {at}"
    for bound in {round(f * last) for f in fractions} | {last // 2, last - 1}:
        for at in (None, _times(store)[len(_times(store)) // 2]):
            rows, bulk = _both(store, bound=bound, at=at, **flags)
            assert bulk == rows, f"bound {bound}, cut at {at}"
    with _from_columns():
        rebuilt = ShardCore(0, 1, store, _types())
    assert [(v, _record(r)) for v, r in rebuilt.vertices.items()] == [
        (v, _record(r)) for v, r in core.vertices.items()
    ]
    assert rebuilt.edge_count == core.edge_count and rebuilt.max_time == core.max_time


def test_a_block_of_rows_and_spans_replays_both_in_order() -> None:
    """Rows of a plain vertex amid a run's spans (the pass leaves its rows to the row
    path) and reads between runs: the block's rows go through the row loop between the
    spans, each vertex's entries in order."""
    steps = [
        ("vertex", 3),
        ("run", [(1, 2, 5), (3, 1, 6), (1, 3, 7), (2, 1, 7), (3, 2, 8), (1, 2, 9)]),
        ("read", 1),
        ("run", [(2, 3, 9), (3, 3, 10), (4, 1, 11), (1, 4, 12)]),
    ]
    core, store, _ = _apply(steps, False)
    blocks = [decode_events(v) for _, v in store.scan(LogName.EVENTS, 1)]
    mixed = [
        b for b in blocks if isinstance(b, ColumnsBlock) and len(b.logged_entries) < len(b.vertex)
    ]
    assert mixed, "no block holds both rows and spans"
    for at in _times(store):
        for in_edges in (False, True):
            rows, bulk = _both(store, at=at, in_edges=in_edges, checkpoint=False)
            assert bulk == rows
    with _from_columns():
        rebuilt = ShardCore(0, 1, store, _types())
    assert {v: _record(r) for v, r in rebuilt.vertices.items()} == {
        v: _record(r) for v, r in core.vertices.items()
    }


def test_spans_of_int_and_float_times_keep_their_types() -> None:
    """Runs of a source in int time and one in float time: each span's times keep their
    type when consecutive spans are applied together."""
    store = MemoryLogStore("bulk-int-and-float")
    core = ShardCore(0, 1, store, _types())
    position = 0
    # the float run's vertices are new: int times would keep them out of the columns
    for edges, float_time in (([(1, 2, 5), (2, 3, 6)], False), ([(4, 5, 7), (5, 6, 8)], True)):
        run = _run(edges, position + 1, float_time)
        core.handle(Batch("src:s", position, [], None, None, True, run))
        position += len(edges)
    assert [type(r.time) for r in core.vertices.values()] == [int] * 3 + [float] * 3
    blocks = [decode_events(v) for _, v in store.scan(LogName.EVENTS, 1)]
    assert [isinstance(b, ColumnsBlock) for b in blocks] == [True, True]
    for at in _times(store):
        rows, bulk = _both(store, at=at, checkpoint=False)
        assert bulk == rows
    store.close()
    MemoryLogStore.destroy("bulk-int-and-float")


# -- the effects of any entries, not only those a shard logs ---------------------------------


@st.composite
def _entries(draw: Any) -> tuple[TemporalEntries, dict[int, dict[str, Any]], bool]:
    """Entries of up to 6 vertices with any flags (each vertex created at its first entry
    or existing with some of the state keys), in int or float time."""
    float_time = draw(st.booleans())
    n = draw(st.integers(1, 40))
    vertex = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    created = draw(st.sets(st.integers(0, 5)))
    keys = ["out_degree", "in_degree", "sent", "received", "first_ts", "last_ts"]
    existing = {
        v: {k: 0 for k in draw(st.permutations(keys))[: draw(st.integers(0, 6))]}
        for v in set(vertex) - created
    }
    flags = []
    seen: set[int] = set()
    for v in vertex:
        f = draw(st.integers(0, 7))
        if v in created and v not in seen:
            f |= TEMPORAL_CREATED
        seen.add(v)
        flags.append(f)
    numbers = st.lists(st.integers(0, 9), min_size=n, max_size=n)
    time_type = np.float64 if float_time else np.int64
    entries = TemporalEntries(
        np.array(vertex, np.int64),
        np.array(draw(numbers), np.int64),  # other
        np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), np.int8),
        np.arange(1, n + 1, dtype=np.int64),  # clock
        np.array(sorted(draw(numbers)), time_type),
        *(np.array(draw(numbers), np.int64) for _ in range(2)),  # degree, counter
        np.array(flags, np.int8),
        np.array(draw(numbers), time_type),  # touch
        np.array(draw(numbers), np.int64),  # count
        *(np.array(draw(numbers), time_type) for _ in range(2)),
    )
    return entries, existing, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(case=_entries())
def test_the_effects_of_any_entries_are_theirs_one_by_one(case: Any) -> None:
    """Key order where the keys new to a state are first set out of their usual order,
    incoming edges, created vertices: whatever the flags say."""
    entries, existing, in_edges = case
    n = len(entries)
    block = EventBlock(1, *([None] * n for _ in range(6)), [0])  # type: ignore[arg-type]
    data = encode_events(block, {}, [(0, n)], entries, "TemporalVertex")

    def replayed(bulk: bool) -> Any:
        store = MemoryLogStore(f"effects-{bulk}")
        replay = LogReplay(store, checkpoint=False, in_edges=in_edges)
        replay.bound = n
        replay.vertices = {
            v: VertexRecord("TemporalVertex", dict(state), {}, {}) for v, state in existing.items()
        }
        with _from_columns() if bulk else _entry_by_entry():
            replay.apply(decode_events(data, in_edges))
        store.close()
        MemoryLogStore.destroy(f"effects-{bulk}")
        return [(v, _record(r)) for v, r in replay.vertices.items()], replay.applied

    assert replayed(True) == replayed(False)


def test_a_block_reads_its_rows_without_making_the_columns() -> None:
    """The messages a block's rows sent (edge notices refer to the edge the entry set) and
    a stretch of its rows as a block of their own read the rows alone, and say what the
    block with every column made says."""
    entries = TemporalEntries(
        *(np.array(v, np.int64) for v in ([1, 2, 1], [2, 1, 3])),
        np.array([0, 1, 0], np.int8),
        *(np.array(v, np.int64) for v in ([1, 1, 2], [5, 5, 6], [1, 1, 2], [1, 1, 2])),
        np.array([15, 15, 1 | 4], np.int8),
        *(np.array(v, np.int64) for v in ([5, 5, 6], [1, 1, 1], [5, 5, 6], [5, 5, 6])),
    )
    hole = (None,) * 6
    notice = {"w": 1}
    first = (7, 3, 4, {"x": 1}, (8, notice), None)
    second = (8, 1, 4, None, None, (7, {"w": 1}))
    third = (7, 4, 7, None, None, None)
    columns = zip(first, hole, hole, second, hole, third, strict=True)
    block = EventBlock(10, *(tuple(c) for c in columns), [0, 0])  # type: ignore[arg-type]
    block.created = {0: "Vertex"}
    sends = {0: ((1, 2, 8, notice),), 3: ((0, 1, 2, {"m": 1}),), 5: ((1, 1, 9, {"m": 2}),)}
    data = encode_events(block, sends, [(1, 2), (4, 1)], entries, "TemporalVertex")
    with _from_columns():
        lazy = decode_events(data)
        messages = list(lazy.messages())
        segments = {i: lazy.segment(i, i + 1) for i in (0, 3, 5)}
        with pytest.raises(ValueError, match="not all rows"):
            lazy.segment(2, 4)  # entry 2 is logged as columns
    made = decode_events(data)
    assert messages == list(made.messages()) and len(messages) == 3
    assert messages[0][3] == (2, 8, 7, notice, 4)  # the notice's payload: the edge's props
    fields = ("vertex", "clock", "time", "state", "edge", "ins")
    for i, segment in segments.items():
        assert segment.first == made.first + i
        assert [getattr(segment, f)[0] for f in fields] == [getattr(made, f)[i] for f in fields]
        assert segment.created == ({0: "Vertex"} if i == 0 else {})
