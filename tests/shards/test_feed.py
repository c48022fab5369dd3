"""The Ray-free source feed: batches, prev, acks, resends, frontier, resume, and event
time (reordering behind the watermark, late updates, positions, stream edge halves)."""

from __future__ import annotations

import math
import random

import pytest

from shards.codec import K_IN_EDGE, K_UPDATE
from shards.coordinator import Frontiers
from shards.feed import OutOfOrder, SourceFeed
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
    assert all(shard_of(m[1], 3) == s for s, b in sent for _, m in b.items)


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
    assert f.close("b") == (math.inf, False) and f.held_back_by() is None


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


def _drain(feed: SourceFeed, updates: list[Update]) -> list[tuple[int, object]]:
    sent = [b for u in updates for b in feed.offer(u)] + feed.end()
    return [(p, m) for _, b in sent for p, m in b.items]


def test_an_ordered_source_keeps_its_offsets_as_positions_and_passes_straight_through():
    feed = SourceFeed("s", num_shards=1, batch_size=1, allowed_lateness=0)
    updates = _updates(5)
    assert [p for u in updates for _, b in feed.offer(u) for p, _ in b.items] == [1, 2, 3, 4, 5]
    assert feed.ordered and feed.counters()["out_of_order"] == 0


def test_bounded_disorder_is_released_in_time_order_behind_the_watermark():
    rng = random.Random(7)
    times = [float(t) for t in range(200)]
    shuffled = sorted(times, key=lambda t: t + rng.uniform(0, 10))  # displaced < 10 s
    updates = [Update.add_edge(1, 2, t).with_origin("s", i + 1) for i, t in enumerate(shuffled)]
    feed = SourceFeed("s", num_shards=1, batch_size=7, allowed_lateness=10)
    items = _drain(feed, updates)
    assert [m[4] for _, m in items] == times  # every update, in time order
    positions = [p for p, _ in items]
    assert positions == sorted(set(positions))  # increasing: a shard's channel order
    counters = feed.counters()
    assert counters["out_of_order"] > 0 and counters["late_rejected"] == 0
    assert counters["max_lateness"] == max(
        max(shuffled[:i]) - t for i, t in enumerate(shuffled) if i and t < max(shuffled[:i])
    )
    again = SourceFeed("s", num_shards=1, batch_size=3, allowed_lateness=10)
    assert _drain(again, updates) == items  # read again from its start: the same positions


def test_late_updates_are_refused_rejected_or_applied_at_the_watermark():
    updates = [
        Update.add_edge(1, 2, t).with_origin("s", i + 1) for i, t in enumerate([10, 20, 30, 12])
    ]
    strict = SourceFeed("s", num_shards=1, batch_size=10, where="f.txt")
    with pytest.raises(OutOfOrder, match=r"f.txt:4: time 12 goes back from 30"):
        _drain(strict, updates)
    rejected: list[tuple[int, float]] = []
    feed = SourceFeed(
        "s", 1, 10, allowed_lateness=5, on_late=lambda u, w: rejected.append((u.offset, w))
    )
    assert [m[4] for _, m in _drain(feed, updates)] == [10, 20, 30]
    assert rejected == [(4, 25)] and feed.counters()["late_rejected"] == 1
    applied = SourceFeed("s", 1, 10, allowed_lateness=5, late="apply")
    items = [m for _, m in _drain(applied, updates)]
    assert [m[4] for m in items] == [10, 20, 25, 30]  # in time order: the late one at W
    assert items[2][3][-1] == 12 and len(items[0][3]) == 4  # its own time travels with it
    assert applied.counters()["late_applied"] == 1


def test_a_floor_makes_updates_before_it_late():
    feed = SourceFeed("s", 1, 10, floor=100.0, where="b.txt")
    with pytest.raises(OutOfOrder, match="before 100, up to which the graph already holds"):
        _drain(feed, [Update.add_edge(1, 2, 50).with_origin("s", 1)])


def test_a_batch_going_back_is_found_before_any_of_it_is_offered():
    feed = SourceFeed("s", 1, 10, floor=100.0, where="g")
    batch = [Update.add_edge(1, 2, t).with_origin("s", i + 1) for i, t in enumerate([100, 120])]
    assert feed.out_of_order(batch) is None
    feed.offer(batch[0])
    back = [Update.add_edge(1, 2, t).with_origin("s", i + 2) for i, t in enumerate([130, 110])]
    refusal = feed.out_of_order(back)
    assert str(refusal).startswith("g:3: time 110 goes back from 130")
    assert feed.read == 1  # nothing taken; offering the batch raises the same
    with pytest.raises(OutOfOrder, match="g:3: time 110 goes back from 130"):
        _drain(feed, back)
    resumed = SourceFeed("s", 1, 10, [5], floor=100.0, where="g")  # 1..5 applied
    early = [Update.add_edge(1, 2, 50).with_origin("s", 5), Update.add_edge(1, 2, 40)]
    assert resumed.out_of_order(early[:1]) is None  # applied before: not weighed
    refusal = resumed.out_of_order([early[0], early[1].with_origin("s", 6)])
    assert "g:6: time 40 is before 100" in str(refusal)


def test_stream_edges_reach_both_endpoints_at_the_same_position():
    feed = SourceFeed("s", num_shards=2, batch_size=100, halves=True)
    updates = [Update.add_edge(v, v + 1, float(v)).with_origin("s", v) for v in range(1, 21)]
    sent = [b for u in updates for b in feed.offer(u)] + feed.end()
    seen: dict[int, set[int]] = {}
    for shard, batch in sent:
        assert batch.halves
        for position, (kind, vid, sender, _, _) in batch.items:
            assert shard_of(vid, 2) == shard
            seen.setdefault(position, set()).add(kind)
            if kind == K_IN_EDGE:
                assert (sender, vid) == (position, position + 1)
    assert seen == {p: {K_UPDATE, K_IN_EDGE} for p in range(1, 21)}


def test_a_vertex_removal_is_a_barrier_for_what_follows():
    feed = SourceFeed("s", num_shards=2, batch_size=100, halves=True)
    updates = [
        Update.add_edge(1, 2, 1.0).with_origin("s", 1),
        Update.remove_vertex(1, 2.0).with_origin("s", 2),
        Update.add_edge(1, 2, 3.0).with_origin("s", 3),
    ]
    first = feed.offer(updates[0]) + feed.offer(updates[1])
    assert feed.barrier == 2.0  # everything up to the removal leaves now ...
    assert sorted(p for _, b in first for p, _ in b.items) == [1, 1, 2]
    assert feed.offer(updates[2]) == []  # ... and nothing after it until it is passed
    assert sorted(p for _, b in feed.pass_barrier() + feed.end() for p, _ in b.items) == [3, 3]


def test_resume_skips_each_half_its_shard_applied():
    updates = [Update.add_edge(v, v + 1, float(v)).with_origin("s", v) for v in range(1, 41)]
    applied = [0, 0]
    for u in updates[:25]:
        applied[shard_of(u.vertex, 2)] = u.offset
    feed = SourceFeed("s", num_shards=2, batch_size=100, applied=applied, halves=True)
    sent = [b for u in updates for b in feed.offer(u)] + feed.end()
    for shard, batch in sent:
        assert all(p > applied[shard] for p, _ in batch.items)
    halves = {(p, m[0]) for _, b in sent for p, m in b.items}
    expected = {
        (u.offset, kind)
        for u in updates
        for kind, v in ((K_UPDATE, u.vertex), (K_IN_EDGE, u.dst))
        if u.offset > applied[shard_of(v, 2)]
    }
    assert halves == expected


def test_with_linger_buffers_leave_once_something_waited_that_long():
    feed = SourceFeed("s", num_shards=2, batch_size=100, linger=0.5)
    updates = _updates(6)
    assert [b for u in updates[:3] for b in feed.offer(u)] == []
    assert feed.due(10.0) == [] and feed.due(10.4) == []  # the wait starts at the first call
    assert feed.offer(updates[3]) == [] and feed.due(10.45) == []
    sent = feed.due(10.5)
    assert sorted(p for _, b in sent for p, _ in b.items) == [1, 2, 3, 4]
    assert feed.due(99.0) == []  # nothing waits: a new wait starts with the next update
    feed.offer(updates[4])
    assert feed.due(100.0) == [] and [p for _, b in feed.due(100.5) for p, _ in b.items] == [5]


def test_without_linger_a_batch_waits_until_full_and_linger_is_checked():
    feed = SourceFeed("s", num_shards=1, batch_size=100)
    assert [b for u in _updates(5) for b in feed.offer(u)] == []
    assert feed.due(0.0) == feed.due(1e9) == []
    assert [b for u in _updates(3) for b in SourceFeed("s", 1, 100, linger=0).offer(u)] == []
    with pytest.raises(ValueError, match="linger"):
        SourceFeed("s", num_shards=1, batch_size=10, linger=-1.0)


def test_local_runtime_sends_what_waited_its_linger_while_the_source_has_nothing_to_read():
    now = [0.0]
    seen: list[int] = []

    def run(linger: float | None) -> None:
        rt = LocalRuntime(1, batch_size=100, linger=linger, clock=lambda: now[0])

        def source():
            yield from _updates(3)
            now[0] += 5.0
            yield None  # nothing to read now; the linger passed meanwhile
            seen.append(rt.cores[0].worker_clock)
            yield from _updates(6)[3:]

        rt.ingest(source())
        assert len(rt.edges()) == 6
        rt.close()

    run(1.0)
    run(None)
    assert seen == [6, 0]  # both halves of the 3 edges were logged, or nothing
