"""``SourceFeed.offer_columns`` sends exactly what ``offer`` sends for the same updates one
by one: the same batches (shard, prev, items, halves) in the same order, the same state
after (positions, watermark, counters, what stays buffered); and where it cannot take a
batch whole it takes nothing and says so (``None``), so the caller offers the rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shards.feed import SourceFeed
from shards.routing import shard_of, shards_of
from vertex.columns import UpdateBatch
from vertex.records import Update


def _batch(rows: list[tuple[int, int, float, int]], weights: bool) -> UpdateBatch:
    src, dst, ts, off = (np.array(c) for c in zip(*rows, strict=True))
    props = {"weight": np.arange(len(rows)) % 7 - 3} if weights else None
    return UpdateBatch.edges("s", src, dst, ts, off, props)


def _sent(out: list[Any]) -> list[tuple[Any, ...]]:
    return [(shard, b.channel, b.prev, b.rows(), b.halves) for shard, b in out]


def _state(feed: SourceFeed) -> tuple[Any, ...]:
    return (
        feed.read,
        feed.released,
        feed.skipped,
        feed.batches,
        feed.watermark,
        feed.max_ts,
        feed.frontier,
        feed.acked_offset,
        feed.acked_updates,
        [b.items() for b in feed._buffers],
        feed.promise(),
    )


streams = st.lists(
    st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(0, 3)), max_size=120
)


@settings(max_examples=150, deadline=None)  # timing is not what it checks
@given(
    rows=streams,
    shards=st.integers(1, 5),
    size=st.integers(1, 9),
    halves=st.booleans(),
    weights=st.booleans(),
    cuts=st.lists(st.integers(1, 40), max_size=10),
    gaps=st.integers(1, 3),
)
def test_columns_send_what_rows_send(
    rows: list[tuple[int, int, int]],
    shards: int,
    size: int,
    halves: bool,
    weights: bool,
    cuts: list[int],
    gaps: int,
) -> None:
    time, stream = 0, []
    for i, (src, dst, step) in enumerate(rows):
        time += step
        stream.append((src, dst, float(time), 1 + i * gaps))
    by_rows = SourceFeed("s", shards, size, halves=halves)
    by_cols = SourceFeed("s", shards, size, halves=halves)
    sent_rows: list[Any] = []
    sent_cols: list[Any] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        part = stream[start : start + cut]
        start += len(part)
        if not part:
            continue
        batch = _batch(part, weights)
        for update in batch.updates():
            sent_rows += _sent(by_rows.offer(update))
        out = by_cols.offer_columns(batch)
        assert out is not None
        sent_cols += _sent(out)
        assert _state(by_cols) == _state(by_rows)
    assert sent_cols == sent_rows
    assert _sent(by_cols.end()) == _sent(by_rows.end())


def _refused(feed: SourceFeed, batch: UpdateBatch) -> None:
    before = _state(feed)
    assert feed.offer_columns(batch) is None
    assert _state(feed) == before


def test_what_the_columns_leave_to_the_rows() -> None:
    rows = [(1, 2, 10.0, 1), (2, 3, 11.0, 2)]
    feed = SourceFeed("s", 2, 10)
    _refused(feed, _batch([(1, 2, 10.0, 1), (2, 3, 9.0, 2)], False))  # back in time
    _refused(feed, _batch([(1, 2, 10.0, 2), (2, 3, 11.0, 2)], False))  # offsets repeat
    _refused(SourceFeed("s", 2, 10, allowed_lateness=5), _batch(rows, False))
    _refused(SourceFeed("s", 2, 10, applied=[0, 2]), _batch(rows, False))  # a resume
    _refused(SourceFeed("s", 2, 10, floor=10.5), _batch(rows, False))  # below the floor
    _refused(SourceFeed("other", 2, 10), _batch(rows, False))
    assert feed.offer_columns(_batch(rows, False)) == []
    _refused(feed, _batch([(1, 2, 12.0, 2)], False))  # offset not after the last
    _refused(feed, _batch([(1, 2, 10.5, 3)], False))  # before the watermark
    assert feed.offer(Update.add_edge(5, 6, 11.0).with_origin("s", 3)) == []


def test_a_resumed_source_goes_columnar_past_what_its_shards_applied() -> None:
    feed = SourceFeed("s", 2, 10, applied=[2, 1])
    assert feed.offer_columns(_batch([(1, 2, 10.0, 3), (2, 3, 11.0, 4)], False)) == []
    assert feed.read == 2 and not feed.skipped


@pytest.mark.parametrize("num_shards", [1, 2, 3, 8])
def test_shards_of_agrees_with_shard_of(num_shards: int) -> None:
    rng = np.random.default_rng(7)
    ids = rng.integers(-(2**63), 2**63 - 1, 20_000, dtype=np.int64, endpoint=True)
    ids = np.concatenate((ids, np.array([0, -1, 1, 2**63 - 1, -(2**63)], np.int64)))
    assert shards_of(ids, num_shards).tolist() == [shard_of(int(v), num_shards) for v in ids]


def test_an_update_batch_means_its_updates() -> None:
    batch = _batch([(1, 2, 10.0, 4), (3, 1, 12.5, 9)], True)
    assert list(batch.updates()) == [
        Update.add_edge(1, 2, 10.0, weight=-3).with_origin("s", 4),
        Update.add_edge(3, 1, 12.5, weight=-2).with_origin("s", 9),
    ]
    assert [len(batch.slice(1)), len(UpdateBatch.concat([batch, batch]))] == [1, 4]
    assert not math.isnan(batch.column("time")[0])


def test_null_properties_and_vertex_types_in_an_update_batch() -> None:
    import pyarrow as pa

    from vertex.columns import kind_column
    from vertex.records import UpdateKind

    codes = [0, 2, 2, 4]  # add_vertex, add_edge, add_edge, remove_edge (UpdateKind order)
    assert [list(UpdateKind)[c] for c in codes] == [
        UpdateKind.ADD_VERTEX,
        UpdateKind.ADD_EDGE,
        UpdateKind.ADD_EDGE,
        UpdateKind.REMOVE_EDGE,
    ]
    props = pa.array([{"w": 1, "tag": "a"}, {"w": None, "tag": "b"}, {"w": 3, "tag": None}, None])
    table = pa.RecordBatch.from_pydict(
        {
            "kind": kind_column(np.array(codes, np.int8)),
            "vertex": pa.array([1, 1, 2, 1], pa.int64()),
            "dst": pa.array([None, 2, 1, 2], pa.int64()),
            "time": pa.array([5, 6, 7, 8], pa.int64()),
            "offset": pa.array([1, 2, 3, 4], pa.int64()),
            "props": props,
            "vertex_type": pa.array(["Person", None, None, None]),
        }
    )
    batch = UpdateBatch("s", table)
    assert list(batch.updates()) == [
        Update.add_vertex(1, 5, "Person", w=1, tag="a").with_origin("s", 1),
        Update.add_edge(1, 2, 6, tag="b").with_origin("s", 2),  # a null value: no such property
        Update.add_edge(2, 1, 7, w=3).with_origin("s", 3),
        Update.remove_edge(1, 2, 8).with_origin("s", 4),  # a null slot: no properties
    ]
    assert not batch.only_edges_added
    assert [u.offset for u in batch.after(2).updates()] == [3, 4]
    assert batch.after(0) is batch and len(batch.after(4)) == 0


def test_columns_with_a_null_property_send_what_rows_send() -> None:
    import pyarrow as pa

    batch = UpdateBatch.edges(
        "s",
        np.array([1, 2, 3]),
        np.array([2, 3, 1]),
        np.array([10, 11, 12]),
        np.array([1, 2, 3]),
        {"weight": pa.array([4, None, 6])},
    )
    by_rows, by_columns = SourceFeed("s", 3, 2, halves=True), SourceFeed("s", 3, 2, halves=True)
    rows = [b for u in batch.updates() for b in by_rows.offer(u)]
    assert _sent(by_columns.offer_columns(batch) or []) == _sent(rows) != []
    assert _state(by_columns) == _state(by_rows)


def test_another_thread_never_sees_columns_acknowledged_before_they_are() -> None:
    """Progress and the frontier are read from other threads while a batch is routed: at
    every point of ``offer_columns`` its updates are not counted acknowledged and the
    frontier is not past them (the Spark source-kill test found the opposite order)."""
    seen: list[tuple[int, float]] = []

    class Watched(SourceFeed):
        def _columns_out(self, *args: Any) -> Any:
            seen.append((self.acked_updates, self.frontier))  # before the items are buffered
            out = super()._columns_out(*args)
            seen.append((self.acked_updates, self.frontier))  # buffered and sealed
            return out

    feed = Watched("s", 2, 3, halves=True)
    feed.offer_columns(_batch([(1, 2, 10.0, 1), (2, 3, 11.0, 2), (3, 1, 12.0, 3)], False))
    assert seen and all(acked == 0 and frontier <= 10.0 for acked, frontier in seen)
    assert (feed.read, feed.acked_updates, feed.watermark) == (3, 0, 12.0)
