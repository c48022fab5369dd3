"""Several sources' column runs merged by event time in numpy (``ShardCore._merge_columns``)
mean exactly what the row merge means: fed the same batches and gates, a shard that takes
them as columns and one that takes their items run the same entries in the same order
(``(time, channel)``, ties included), hold the same rows back behind a promise, and end
with the same vertices, clocks, applied positions and decoded logs -- the merged runs
logged once with their channels (format 6). Runs that cannot merge as columns (one source
with properties, one without) fall back to the row merge."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shards.codec import Channels, EdgeRun, decode_commands, encode_commands
from shards.coordinator import Promise
from shards.core import Batch, ShardCore
from shards.feed import SourceFeed
from shards.logstore import LogName, LogStore, MemoryLogStore
from shards.replay import read_commands
from tests.shards.log_helpers import logged_events
from vertex.columns import UpdateBatch

pytestmark = pytest.mark.usefixtures("temporal_columns_at_once")


def _source(name: str, seed: int, n: int, weights: bool) -> list[Batch]:
    """``n`` updates of source ``name`` (times that tie often) as the feed's column
    batches for a one-shard graph."""
    rng = np.random.default_rng(seed)
    src = rng.integers(1, 12, n)
    dst = rng.integers(1, 12, n)
    ts = np.cumsum(rng.integers(0, 3, n))
    props = {"w": pa.array(rng.integers(0, 9, n))} if weights else None
    batch = UpdateBatch.edges(name, src, dst, ts, np.arange(1, n + 1), props)
    feed = SourceFeed(name, 1, int(rng.integers(3, 40)), halves=True)
    sent = []
    for i in range(0, n, 25):
        got = feed.offer_columns(batch.slice(i, min(i + 25, n)))
        assert got is not None
        sent += got
    sent += feed.end()
    assert all(b.columns is not None for _, b in sent)
    return [b for _, b in sent]


def _as_items(batch: Batch) -> Batch:
    assert batch.columns is not None
    return Batch(batch.channel, batch.prev, batch.columns.items(), None, None, batch.halves)


def _entries(store: LogStore) -> Any:
    """The events log's entries and the commands log's (worker clocks included)."""
    return logged_events(store), list(read_commands(store))


def _state(core: ShardCore) -> Any:
    return (
        core.worker_clock,
        core.applied,
        core.times,
        core.edge_count,
        {v: r.snapshot() for v, r in core.vertices.items()},
    )


def _merged_runs(store: LogStore) -> int:
    """Runs logged merged from several channels (a tuple of channel names)."""
    import pickle

    return sum(
        type(channel) is tuple
        for _, value in store.scan(LogName.COMMANDS, 1)
        for channel, _ in pickle.loads(value[:-4])["runs"]
    )


_STORES = count()


@contextmanager
def _fed_both(
    sources: dict[str, list[Batch]], schedule: list[int], promise_lag: list[int]
) -> Iterator[tuple[ShardCore, ShardCore, list[tuple[int, int]]]]:
    """:func:`_feed_both`, the cores' stores closed after."""
    columns, rows, outcomes = _feed_both(sources, schedule, promise_lag)
    try:
        yield columns, rows, outcomes
    finally:
        for core in (columns, rows):
            core.store.close()  # type: ignore[union-attr]


def _feed_both(
    sources: dict[str, list[Batch]], schedule: list[int], promise_lag: list[int]
) -> tuple[ShardCore, ShardCore, list[tuple[int, int]]]:
    """Deliver the sources' batches in ``schedule``'s order (an index into the sources
    with batches left) to a core taking columns and one taking items, under a gate from
    the start (as when the sources open together), each delivery followed by a new gate:
    a source promises the first time of its next batch (or less, by ``promise_lag``),
    counting on what it delivered; the gate is lifted at the end."""
    n = next(_STORES)
    columns, rows = (ShardCore(0, 1, MemoryLogStore(f"merge-{n}-{k}")) for k in ("c", "r"))
    channels = sorted(f"src:{name}" for name in sources)
    left = {f"src:{name}": list(batches) for name, batches in sources.items()}
    delivered = dict.fromkeys(channels, 0)
    first = {c: Promise(left[c][0].columns.time[0].item(), (0,)) for c in channels}  # type: ignore[union-attr]
    columns.set_gate(first)
    rows.set_gate(first)
    outcomes = []
    step = 0
    while any(left.values()):
        open_ = [c for c in channels if left[c]]
        channel = open_[schedule[step % len(schedule)] % len(open_)]
        batch = left[channel].pop(0)
        got = columns.handle(batch), rows.handle(_as_items(batch))
        outcomes.append((got[0].executed, got[1].executed))
        delivered[channel] = batch.columns.last_position  # type: ignore[union-attr]
        gate = {}
        for k, c in enumerate(channels):
            lag = promise_lag[(step + k) % len(promise_lag)]
            floor = left[c][0].columns.time[0].item() - lag if left[c] else math.inf  # type: ignore[union-attr]
            gate[c] = Promise(floor, (delivered[c],))
        got = columns.set_gate(gate), rows.set_gate(gate)
        outcomes.append((got[0].executed, got[1].executed))
        step += 1
    got = columns.set_gate(None), rows.set_gate(None)
    outcomes.append((got[0].executed, got[1].executed))
    return columns, rows, outcomes


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seeds=st.lists(st.integers(0, 10_000), min_size=2, max_size=3),
    sizes=st.lists(st.integers(1, 200), min_size=3, max_size=3),
    schedule=st.lists(st.integers(0, 5), min_size=1, max_size=12),
    promise_lag=st.lists(st.integers(0, 3), min_size=1, max_size=5),
    weights=st.booleans(),
)
def test_column_merge_runs_what_the_row_merge_runs(
    seeds: list[int], sizes: list[int], schedule: list[int], promise_lag: list[int], weights: bool
) -> None:
    sources = {
        name: _source(name, seed, size, weights)
        for name, seed, size in zip("bac", seeds, sizes, strict=False)
    }
    with _fed_both(sources, schedule, promise_lag) as (columns, rows, outcomes):
        assert [c for c, _ in outcomes] == [r for _, r in outcomes]
        assert _state(columns) == _state(rows)
        assert _entries(columns.store) == _entries(rows.store)  # type: ignore[arg-type]
        assert columns.stats().queued == rows.stats().queued == 0


def test_interleaved_sources_merge_as_columns_and_log_their_channels() -> None:
    sources = {name: _source(name, seed, 300, False) for name, seed in (("a", 1), ("b", 2))}
    with _fed_both(sources, [0, 1], [0]) as (columns, rows, _):
        assert _entries(columns.store) == _entries(rows.store)  # type: ignore[arg-type]
        assert _merged_runs(columns.store) > 0 and _merged_runs(rows.store) == 0  # type: ignore[arg-type]
        commands = _entries(columns.store)[1]  # type: ignore[arg-type]
    assert {e.channel for e in commands} == {"src:a", "src:b"}
    keys = [(e.ts, e.channel) for e in commands]
    assert keys == sorted(keys)  # merged by (time, channel), each channel in its order


def test_runs_of_other_kinds_fall_back_to_the_row_merge() -> None:
    sources = {"a": _source("a", 1, 120, True), "b": _source("b", 2, 120, False)}
    with _fed_both(sources, [0, 1, 1], [1]) as (columns, rows, outcomes):
        assert [c for c, _ in outcomes] == [r for _, r in outcomes]
        assert _entries(columns.store) == _entries(rows.store)  # type: ignore[arg-type]
        assert _merged_runs(columns.store) == 0  # type: ignore[arg-type]


def test_a_merged_run_is_logged_once_with_its_channels() -> None:
    run = EdgeRun(
        np.array([1, 1, 1, 2]),
        np.array([0, 0, 1, 0], np.int8),
        np.array([3, 5, 4, 3]),
        np.array([4, 6, 3, 9]),
        np.array([10, 10, 10, 11]),
        None,
    )
    channels = Channels(("src:a", "src:b"), np.array([0, 1, 0, 0]))
    assert channels.last_rows() == [("src:a", 3), ("src:b", 1)]
    entries = decode_commands(encode_commands(7, [(channels, run)]))
    assert [(e.wc, e.channel, e.position, e.vertex) for e in entries] == [
        (7, "src:a", 1, 3),
        (8, "src:b", 1, 5),
        (9, "src:a", 1, 4),
        (10, "src:a", 2, 3),
    ]
    singles = [("src:a", run.take(np.array([0]))), ("src:b", run.take(np.array([1])))]
    singles.append(("src:a", run.take(np.array([2, 3]))))
    assert [e[1:] for e in entries] == [e[1:] for e in decode_commands(encode_commands(7, singles))]
