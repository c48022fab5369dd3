"""Resuming a notification stream from its position (in-process runtime): a stream cut
anywhere and resumed -- live, mid-replay, after more updates, from a checkpointed log --
delivers exactly what an uninterrupted one did, nothing missed, nothing repeated."""

from __future__ import annotations

import pytest

from chronoray.testing import LocalRuntime
from ephemeral import Notification, StreamPosition


def _keys(items):
    """Per shard, the notifications delivered (states included), in delivery order
    (shards interleave)."""
    out: dict[int, list[Notification]] = {}
    for n in items:
        assert isinstance(n, Notification)
        out.setdefault(n.shard, []).append(n)
    return out


def _cut_and_resume(rt, first_items, position, **filters):
    """What a stream resumed at ``position`` delivers (all of it, drained)."""
    with rt.subscribe(resume=position, **filters) as resumed:
        return first_items + resumed.drain()


@pytest.mark.parametrize("checkpoints", [100_000, 700])
def test_a_live_stream_resumed_after_more_updates_misses_and_repeats_nothing(
    college_updates, checkpoints
):
    rt = LocalRuntime(2, shard_checkpoint_interval=checkpoints)
    rt.ingest(college_updates[:2000], source="a")
    whole = rt.subscribe()
    cut = rt.subscribe()
    rt.ingest(college_updates[2000:4000], source="b")
    taken = cut.poll(max_items=300)  # a prefix of every shard's stream
    position = cut.position
    cut.close()
    rt.ingest(college_updates[4000:6000], source="c")
    assert _keys(_cut_and_resume(rt, taken, position)) == _keys(whole.drain())
    assert all(core.checkpoints for core in rt.cores) == (checkpoints == 700)
    rt.close()


def test_a_replaying_stream_resumed_mid_replay_keeps_its_since(college_updates):
    rt = LocalRuntime(3, shard_checkpoint_interval=1000)
    rt.ingest(college_updates[:5000], source="a")
    t = college_updates[2500].ts
    whole = rt.subscribe(since=t, types="TemporalVertex")
    cut = rt.subscribe(since=t, types="TemporalVertex")
    taken = cut.poll(max_items=100)  # inside the replay of each shard
    position = cut.position
    assert position.since == t and all(
        a < s for a, s in zip(position.after, position.start, strict=True)
    )
    cut.close()
    rt.ingest(college_updates[5000:6000], source="b")
    resumed = _cut_and_resume(rt, taken, position, types="TemporalVertex")
    expected = whole.drain()
    assert _keys(resumed) == _keys(expected)
    assert all(n.time >= t for n in resumed if n.wc <= position.start[n.shard])
    rt.close()


def test_a_position_ahead_of_the_log_is_refused(college_updates):
    rt = LocalRuntime(2)
    rt.ingest(college_updates[:100], source="a")
    clocks = tuple(core.worker_clock for core in rt.cores)
    with pytest.raises(ValueError, match="ahead of shard"):
        rt.subscribe(resume=StreamPosition(clocks, (clocks[0] + 5, clocks[1])))
    with pytest.raises(ValueError, match="a stream position of 3 shards"):
        rt.subscribe(resume=StreamPosition((0, 0, 0), (0, 0, 0)))
    rt.close()
