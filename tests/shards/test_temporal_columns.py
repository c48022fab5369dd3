"""Column runs of stream ``add_edge`` halves run through the temporal columns
(:mod:`shards.temporal`) log and leave exactly what the row path does, entry for entry:
the same clocks, times, state changes (keys, key order, value types) and edge records,
the same created vertices, the same vertices, edge count, latest time and checkpoints,
and a shard rebuilt from the log is the same shard. Generated streams mix what the
columns take with what they leave to the row path -- vertices of another class, edges
with properties -- with reads of the records between runs (which write the columns back
or drop them), small checkpoint intervals, times out of order, repeated pairs and self
loops, in int and float time."""

from __future__ import annotations

import itertools
import pickle
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shards.core
from shards.codec import (
    EdgeRun,
    EventBlock,
    TemporalEntries,
    decode_events,
    encode_events,
    owner_message,
    target_message,
    update_messages,
)
from shards.core import Batch, ShardCore
from shards.logstore import LogName, MemoryLogStore
from vertex import TemporalVertex, Vertex
from vertex.model import VertexTypes
from vertex.records import Update

_names = itertools.count()


pytestmark = pytest.mark.usefixtures("temporal_columns_at_once")


@contextmanager
def _rows_only() -> Any:
    """The row path alone: no run fits the columns."""
    saved = vars(shards.core)["fits"]
    setattr(shards.core, "fits", lambda _: False)  # noqa: B010 (not exported)
    try:
        yield
    finally:
        setattr(shards.core, "fits", saved)  # noqa: B010


def _run(edges: list[tuple[int, int, Any]], first: int, float_time: bool) -> EdgeRun:
    """Both halves of each edge update at positions ``first``, ``first + 1``, ..."""
    n = len(edges)
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    ts = np.array([e[2] for e in edges], np.float64 if float_time else np.int64)
    rows = np.repeat(np.arange(n), 2)
    half = np.tile(np.array([0, 1], np.int8), n)
    return EdgeRun(
        np.arange(first, first + n)[rows],
        half,
        np.where(half == 0, src[rows], dst[rows]),
        np.where(half == 0, dst[rows], src[rows]),
        ts[rows],
        None,
    )


def _types() -> VertexTypes:
    return VertexTypes([TemporalVertex, Vertex])


def _apply(steps: list[Any], float_time: bool) -> tuple[ShardCore, MemoryLogStore, list[Any]]:
    store = MemoryLogStore(f"temporal-columns-{next(_names)}")
    core = ShardCore(0, 1, store, _types(), shard_checkpoint_interval=13)
    position = 0
    seen: list[Any] = []  # what reads between runs saw
    for kind, value in steps:
        if kind == "vertex":  # a vertex of the plain class, as a row item
            update = Update.add_vertex(value, 0, "Vertex").with_origin("s", position + 1)
            core.handle(Batch("src:s", position, update_messages([update]), None, None, True))
            position += 1
        elif kind == "weighted":  # an edge with a property, as row items (both halves)
            src, dst, t = value
            ts = float(t) if float_time else t
            update = Update.add_edge(src, dst, ts, w=1).with_origin("s", position + 1)
            halves = [owner_message(update, ts), target_message(update, ts)]
            items = [(position + 1, message) for message in halves]
            core.handle(Batch("src:s", position, items, None, None, True))
            position += 1
        elif kind == "read":  # a query (writes the columns back, keeps them)
            try:
                seen.append(core.vertex(value))
            except shards.core.VertexNotFound:
                seen.append(None)
            seen.append(core.stats().edges)
        elif kind == "views":  # views of the live records (drops the columns)
            seen.append(
                sorted((v.vertex_id, dict(v.state), v.out_degree) for v in core.vertex_views())
            )
        else:
            run = _run(value, position + 1, float_time)
            core.handle(Batch("src:s", position, [], None, None, True, run))
            position += len(value)
    return core, store, seen


def _outcome(core: ShardCore, store: MemoryLogStore, seen: list[Any]) -> Any:
    fields = ("first", "vertex", "clock", "time", "state", "edge", "ins", "created")
    blocks = [decode_events(v) for _, v in store.scan(LogName.EVENTS, 1)]
    events = [[getattr(b, f) for f in fields] for b in blocks]
    types = [[(type(t), type(s)) for t, s in zip(b.time, b.state, strict=True)] for b in blocks]
    stats = core.stats()
    live = _vertices(core)
    checkpoints = [k for k, _ in store.scan(LogName.CHECKPOINTS, 1)]
    return events, types, live, stats.vertices, stats.edges, core.max_time, checkpoints, seen


def _vertices(core: ShardCore) -> dict[Any, Any]:
    """Every vertex, with its state's key order and value types (pickled)."""
    return {v: (r.snapshot(), pickle.dumps(r.state)) for v, r in core.vertices.items()}


_edge = st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 30))
_step = st.one_of(
    st.tuples(st.just("run"), st.lists(_edge, min_size=1, max_size=40)),
    st.tuples(st.just("vertex"), st.integers(0, 9)),
    st.tuples(st.just("weighted"), _edge),
    st.tuples(st.just("read"), st.integers(0, 9)),
    st.tuples(st.just("views"), st.none()),
)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(_step, min_size=1, max_size=10), float_time=st.booleans())
def test_the_columns_log_and_leave_what_the_row_path_does(
    steps: list[Any], float_time: bool
) -> None:
    with _rows_only():
        want = _outcome(*_apply(steps, float_time))
    core, store, seen = _apply(steps, float_time)
    assert _outcome(core, store, seen) == want
    rebuilt = ShardCore(0, 1, store, _types())  # recovery decodes the entries as columns
    assert _vertices(rebuilt) == want[2]
    assert rebuilt.worker_clock == core.worker_clock and rebuilt.edge_count == core.edge_count


def test_a_stream_on_the_columns_logs_its_entries_as_columns() -> None:
    """A long stream of existing and new vertices: nearly every entry is logged as
    columns, new vertices created by the pass (the first one by the row path, which
    makes its class's plan), and the events log is smaller than the row path's."""
    rng = np.random.default_rng(5)
    edges = [
        (int(a), int(b), int(t))
        for a, b, t in zip(
            rng.zipf(1.5, 3_000) % 500,
            rng.integers(0, 500, 3_000),
            np.sort(rng.integers(0, 10**6, 3_000)),
            strict=True,
        )
    ]
    steps = [("run", edges[i : i + 300]) for i in range(0, len(edges), 300)]
    with _rows_only():
        rows, rows_store, _ = _apply(steps, False)
    core, store, _ = _apply(steps, False)
    logged = [pickle.loads(v[:-4]) for _, v in store.scan(LogName.EVENTS, 1)]
    as_columns = sum(c for value in logged for _, c in value.get("temporal", ([], b""))[0])
    assert as_columns >= 0.95 * core.worker_clock
    created = sum(len(decode_events(v).created) for _, v in store.scan(LogName.EVENTS, 1))
    assert created == len(core.vertices) == len(rows.vertices)
    size = sum(len(v) for _, v in store.scan(LogName.EVENTS, 1))
    assert size < 0.7 * sum(len(v) for _, v in rows_store.scan(LogName.EVENTS, 1))


def test_entries_as_columns_decode_in_their_spans() -> None:
    """Placeholders in a block's columns are left out when encoded and the columns'
    entries put back in their spans, with the vertices they created."""
    ints = (np.array(v, np.int64) for v in ([1, 2, 1], [2, 1, 3]))
    entries = TemporalEntries(
        *ints,
        np.array([0, 1, 0], np.int8),
        np.array([1, 1, 2], np.int64),  # clock
        np.array([5, 5, 6], np.int64),  # time
        np.array([1, 1, 2], np.int64),  # degree
        np.array([1, 1, 2], np.int64),  # counter
        np.array([15, 15, 1 | 4], np.int8),  # created, new edge, first and last time
        np.array([5, 5, 6], np.int64),  # touch
        np.array([1, 1, 1], np.int64),  # edge count
        np.array([5, 5, 6], np.int64),
        np.array([5, 5, 6], np.int64),
    )
    hole = (None,) * 6
    row = (7, 3, 4, {"x": 1}, None, None)
    columns = zip(row, hole, hole, row, hole, strict=True)
    block = EventBlock(10, *(tuple(c) for c in columns), [0])  # type: ignore[arg-type]
    data = encode_events(block, {}, [(1, 2), (4, 1)], entries, "TemporalVertex")
    decoded = decode_events(data)
    assert decoded.vertex == (7, 1, 2, 7, 1)
    assert decoded.clock == (3, 1, 1, 3, 2)
    assert decoded.created == {1: "TemporalVertex", 2: "TemporalVertex"}
    assert decoded.state[1] == {
        "out_degree": 1,
        "in_degree": 0,
        "sent": 1,
        "received": 0,
        "first_ts": 5,
        "last_ts": 5,
    }
    assert decoded.state[4] == {"out_degree": 2, "sent": 2, "last_ts": 6}
    assert decoded.edge[4] == (3, {"count": 1, "first_ts": 6, "last_ts": 6})
    assert decoded.ins[2] == (1, {"count": 1, "first_ts": 5, "last_ts": 5})  # type: ignore[index]
    assert decode_events(data, in_edges=False).ins is None


@pytest.mark.parametrize("float_time", [False, True])
def test_reads_between_runs_see_current_vertices(float_time: bool) -> None:
    steps = [
        ("run", [(1, 2, 5), (2, 1, 6)]),
        ("read", 1),
        ("run", [(1, 2, 7), (1, 3, 4)]),
        ("views", None),
        ("run", [(3, 1, 9)]),
        ("read", 3),
    ]
    with _rows_only():
        want = _outcome(*_apply(steps, float_time))
    got = _outcome(*_apply(steps, float_time))
    assert got == want
    assert got[-1][0]["state"] == {
        "out_degree": 1,
        "in_degree": 1,
        "sent": 1,
        "received": 1,
        "first_ts": 5 if not float_time else 5.0,
        "last_ts": 6 if not float_time else 6.0,
    }


def test_a_shard_makes_its_columns_after_rows_run_the_row_way() -> None:
    """A small graph never makes the columns (nor imports numba for them); past
    ``TEMPORAL_AFTER`` rows a shard makes them, and the log means the same either way."""
    edges = [(i % 7, (i * 3) % 11, i) for i in range(20)]
    steps = [("run", edges), ("run", edges), ("run", edges)]
    saved = shards.core.TEMPORAL_AFTER
    shards.core.TEMPORAL_AFTER = 80  # rows: 40 per run (both halves on the one shard): the third
    try:
        core, store, seen = _apply(steps, False)
    finally:
        shards.core.TEMPORAL_AFTER = saved
    logged = [pickle.loads(v[:-4]) for _, v in store.scan(LogName.EVENTS, 1)]
    assert ["temporal" in value for value in logged] == [False, False, True]
    with _rows_only():
        assert _outcome(*_apply(steps, False)) == _outcome(core, store, seen)
