"""The Ray-free source feed: batches, prev, acks, resends, frontier and resume."""

from __future__ import annotations

import math

import pytest

from shards.feed import Frontiers, SourceFeed
from shards.local import LocalRuntime
from shards.routing import shard_of
from vertex.records import Update


def _updates(n: int, source: str = "s") -> list[Update]:
    return [
        Update.add_edge(i % 7, (i * 3) % 11, float(i)).with_origin(source, i)
        for i in range(1, n + 1)
    ]


def test_batches_chain_prev_per_shard_and_cover_every_update_once():
    feed = SourceFeed("s", num_shards=3, batch_size=4)
    sent = [b for u in _updates(50) for b in feed.offer(u)] + feed.flush()
    by_shard: dict[int, list[int]] = {}
    for shard, batch in sent:
        positions = [p for p, _ in batch.items]
        assert batch.prev == (by_shard[shard][-1] if shard in by_shard else 0)
        by_shard.setdefault(shard, []).extend(positions)
    assert sorted(p for ps in by_shard.values() for p in ps) == list(range(1, 51))
    assert all(shard_of(v, 3) == s for s, b in sent for _, (_, v, _, _, _) in b.items)


def test_frontier_and_acked_offset_follow_acknowledgements():
    feed = SourceFeed("s", num_shards=1, batch_size=2)
    sent = [b for u in _updates(5) for b in feed.offer(u)]
    assert feed.frontier == 1.0 and feed.acked_offset == 0
    feed.ack(0, sent[0][1].items[-1][0])
    assert feed.frontier == 3.0 and feed.acked_offset == 2
    assert not feed.applied_through(3.0, [2]) and feed.applied_through(2.0, [2])
    feed.flush()
    assert [b.prev for b in feed.unacked(0)] == [2, 4]  # resent in order after a restart
    feed.ack(0, 5)
    assert feed.idle and feed.frontier == 5.0 and feed.acked_offset == 5


def test_resume_skips_what_each_shard_applied_and_rejects_going_back():
    updates = _updates(40)
    applied = [0, 0]
    for u in updates[:25]:
        shard = shard_of(u.vertex, 2)
        applied[shard] = u.offset
    feed = SourceFeed("s", num_shards=2, batch_size=100, applied=applied)
    for u in updates:
        feed.offer(u)
    sent = feed.flush()
    resent = sorted(p for _, b in sent for p, _ in b.items)
    assert resent == [u.offset for u in updates if u.offset > applied[shard_of(u.vertex, 2)]]
    assert {b.prev for _, b in sent} <= set(applied)
    with pytest.raises(ValueError, match="strictly increase"):
        feed.offer(updates[3])


def test_frontiers_is_the_minimum_over_active_sources():
    f = Frontiers()
    assert f.value == math.inf
    f.open("a")
    f.update("a", 10.0)
    assert f.open("b") == (-math.inf, True)
    assert f.update("b", 20.0) == (10.0, False)
    assert f.close("a") == (20.0, False)
    assert f.close("b") == (math.inf, False) and f.sources == []


def test_local_runtime_resumes_a_source_without_doubling():
    rt = LocalRuntime(2, batch_size=3)
    updates = _updates(30)
    rt.ingest(updates[:17])
    rt.ingest(updates)  # the same source again: only the rest is applied
    counts = {pair: props["count"] for pair, props in rt.edges().items()}
    expected: dict[tuple[int, int], int] = {}
    for u in updates:
        expected[(u.vertex, u.dst)] = expected.get((u.vertex, u.dst), 0) + 1
    assert counts == expected
    rt.close()
