"""Notification streams (order, filters, bounded buffers, replay) and secondary indexes
on the in-process runtime."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from chronoray.testing import IndexedVertex, LocalRuntime
from ephemeral import Lagged, Notification
from tests.ephemeral.conftest import graph_of
from vertex import Update, VertexTypes


@pytest.fixture(scope="module")
def streamed(college_updates):
    """CollegeMsg (first 15,000 lines) ingested with a live subscription open from the
    start; the runtime stays open for replays."""
    rt = LocalRuntime(3)
    sub = rt.subscribe(buffer=1_000_000)
    updates = college_updates[:15_000]
    rt.ingest(updates)
    items = sub.drain()
    yield rt, items, updates
    rt.close()


def _by_shard(items: list[Any]) -> dict[int, list[Notification]]:
    out: dict[int, list[Notification]] = defaultdict(list)
    for n in items:
        out[n.shard].append(n)
    return dict(out)


def test_live_stream_has_every_execution_in_log_order_per_vertex(streamed):
    rt, items, _ = streamed
    assert all(isinstance(n, Notification) for n in items)
    assert len(items) == sum(core.worker_clock for core in rt.cores)  # no failed executions
    clocks: dict[Any, list[int]] = defaultdict(list)
    for n in items:
        clocks[n.vertex].append(n.clock)
    for vertex, seen in clocks.items():
        assert seen == list(range(1, rt.vertex(vertex)["clock"] + 1))
    for shard_items in _by_shard(items).values():
        assert [n.wc for n in shard_items] == sorted(n.wc for n in shard_items)
    first = next(n for n in items if n.old_state is None)
    assert first.state is not None and first.clock == 1


def test_replayed_stream_equals_the_live_one(streamed):
    rt, live, _ = streamed
    with rt.subscribe(since=float("-inf")) as replay:
        replayed = replay.drain()
    assert _by_shard(replayed) == _by_shard(live)
    t = sorted(n.time for n in live)[len(live) // 2]
    with rt.subscribe(since=t) as later:
        assert _by_shard(later.drain()) == _by_shard([n for n in live if n.time >= t])


def test_replay_from_a_checkpointed_log_equals_live(college_updates):
    rt = LocalRuntime(2, shard_checkpoint_interval=2000)
    sub = rt.subscribe()
    rt.ingest(college_updates[:8000])
    live = sub.drain()
    t = live[len(live) // 2].time
    with rt.subscribe(since=t) as replay:
        assert _by_shard(replay.drain()) == _by_shard([n for n in live if n.time >= t])
    assert all(core.checkpoints for core in rt.cores)
    rt.close()


def test_replay_then_live_without_gap_or_duplicate(college_updates):
    rt = LocalRuntime(2)
    everything = rt.subscribe()
    rt.ingest(college_updates[:3000], source="a")
    caught_up = rt.subscribe(since=float("-inf"))
    rt.ingest(college_updates[3000:6000], source="b")
    assert _by_shard(caught_up.drain()) == _by_shard(everything.drain())
    rt.close()


def test_filters_by_type_id_and_predicate(streamed):
    rt, live, _ = streamed
    vertex = live[0].vertex
    with rt.subscribe(ids=vertex, since=float("-inf")) as one:
        assert one.drain() == [n for n in live if n.vertex == vertex]
    with rt.subscribe(types="NoSuchType", since=float("-inf")) as none:
        assert none.drain() == []

    def hundred(old, new):
        return (
            old is not None and new is not None and old["sent"] < 100 <= new["sent"]
        )  # the thesis's "milestone" notification (listing 9.22)

    with rt.subscribe(predicate=hundred, since=float("-inf")) as milestones:
        got = milestones.drain()
    sent = Counter(u.vertex for u in streamed[2])
    assert sorted(n.vertex for n in got) == sorted(v for v, c in sent.items() if c >= 100)


def test_slow_consumer_is_told_how_much_it_missed(college_updates):
    rt = LocalRuntime(2)
    sub = rt.subscribe(buffer=50)
    rt.ingest(college_updates[:2000])
    items = sub.drain()
    lags = [i for i in items if isinstance(i, Lagged)]
    notes = [i for i in items if isinstance(i, Notification)]
    total = sum(core.worker_clock for core in rt.cores)
    assert len(notes) == 100 and len(lags) == 2  # 50 kept per shard, then one marker each
    assert len(notes) + sum(lag.missed for lag in lags) == total
    for shard in (0, 1):  # each shard: its first 50 updates, then the marker
        mine = [i for i in items if i.shard == shard]
        assert len(mine) == 51 and isinstance(mine[50], Lagged)
        assert [n.wc for n in mine[:50]] == list(range(1, 51))
    rt.ingest(college_updates[2000:2010], source="more")  # drained: recording resumed
    assert [i for i in sub.drain() if isinstance(i, Lagged)] == []
    assert sub.stats()["missed"] == total - 100
    sub.close()
    rt.close()


def check_indexes(rt: Any, updates: list[Update]) -> None:
    g = graph_of(updates)
    index = rt.index("out_degree")
    by_degree: dict[int, list[Any]] = defaultdict(list)
    for v, d in g.out_degree():
        by_degree[d].append(v)
    for d, ids in by_degree.items():
        assert index.lookup(d) == sorted(ids)
    assert index.lookup(10**6) == []
    assert index.range(5, 9) == [v for d in range(5, 10) for v in sorted(by_degree.get(d, []))]
    assert len(index) == g.number_of_nodes()
    sent = Counter(u.vertex for u in updates)
    odd = sorted(v for v in g if sent[v] % 2)
    assert rt.index("parity").lookup("odd") == odd
    hubs = sorted(v for v, d in g.in_degree() if d >= 50)
    assert sorted(rt.index("hub").range()) == hubs


def test_index_follows_every_change_and_survives_recovery(college_updates):
    rt = LocalRuntime(3, VertexTypes([IndexedVertex]))
    rt.ingest(college_updates[:10_000])
    check_indexes(rt, college_updates[:10_000])
    rt.ingest(college_updates[10_000:], source="rest")
    check_indexes(rt, college_updates[:10_000] + college_updates[10_000:])
    rt.crash(1)  # rebuilt from the vertices recovered from the log
    check_indexes(rt, college_updates)
    with pytest.raises(KeyError, match="no index 'nope'"):
        rt.index("nope")
    rt.close()
