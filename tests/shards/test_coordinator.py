"""The pure source coordinator (events in, instructions out) and the shard's side of a
promise: a shard merges past a source only once it received everything that source's
promise was made after -- what keeps updates at their own time when a shard restarts."""

from __future__ import annotations

import math

from shards.coordinator import (
    AdvanceWatermark,
    FloorRead,
    Promise,
    ReadFloor,
    Recovered,
    Refuse,
    ReportProgress,
    Resend,
    SetFrontier,
    SetGate,
    ShardRestarted,
    SourceCoordinator,
    SourceEnded,
    SourceIdle,
    SourceOpened,
    SourceProgressed,
)
from shards.core import Batch, ShardCore
from vertex.records import Update


def _opened(c: SourceCoordinator, name: str, times: dict[str, float]) -> None:
    assert c.handle(SourceOpened(name))[-1] == ReadFloor(name)
    c.handle(FloorRead(name, (times,)))


def test_a_second_source_freezes_the_merge_until_its_floor_is_read():
    c = SourceCoordinator(1)
    _opened(c, "a", {})
    assert c.gate is None  # one source: its updates run as they come
    frozen = c.handle(SourceOpened("b"))
    assert frozen[0] == SetGate(
        {"src:a": Promise(-math.inf, (0,)), "src:b": Promise(-math.inf, (0,))}
    )
    released = c.handle(FloorRead("b", ({"src:a": 7.0, "src:b": 99.0},)))
    assert c.source_floor("b") == 7.0 and released[0].gate["src:b"].time == 7.0
    assert c.handle(SourceOpened("a")) == [Refuse("a", "source 'a' is already feeding this graph")]


def test_promises_only_go_up_and_the_gate_ends_with_the_second_source():
    c = SourceCoordinator(2)
    _opened(c, "a", {})
    _opened(c, "b", {})
    told = c.handle(SourceProgressed("a", 3.0, Promise(5.0, (4, 2)), reach=6.0))
    assert SetFrontier(-math.inf, False) not in told and c.gate["src:a"] == Promise(5.0, (4, 2))
    assert c.handle(SourceProgressed("a", 3.0, Promise(4.0, (1, 1)), reach=6.0)) == []  # late
    assert c.gate["src:a"] == Promise(5.0, (4, 2))
    ended = c.handle(SourceEnded("b"))
    assert SetGate(None) in ended and c.frontier == 3.0
    assert c.handle(SourceEnded("b")) == []


def test_an_idle_source_catches_up_with_the_others_promise_or_just_past_their_reach():
    c = SourceCoordinator(1)
    _opened(c, "a", {})
    _opened(c, "b", {})
    assert c.handle(SourceIdle("b")) == []  # a promises nothing yet
    c.handle(SourceProgressed("a", 1.0, Promise(8.0, (3,)), reach=9.0))
    assert c.handle(SourceIdle("b")) == [AdvanceWatermark("b", 8.0)]
    c.handle(SourceProgressed("a", 1.0, Promise(math.inf, (5,)), reach=9.0))  # sent all
    assert c.handle(SourceIdle("b")) == [AdvanceWatermark("b", math.nextafter(9.0, math.inf))]


def test_a_restarted_shard_gets_the_frontier_and_gate_and_every_source_resends():
    c = SourceCoordinator(3)
    _opened(c, "a", {})
    _opened(c, "b", {})
    told = c.handle(ShardRestarted(1, "new"))
    assert told[0] == SetFrontier(-math.inf, True, (1,)) and told[1] == SetGate(c.gate, (1,))
    assert told[2:] == [Resend("a", 1, "new"), Resend("b", 1, "new")]


def test_a_new_coordinator_takes_the_floors_back_and_waits_for_every_source_to_report():
    old = SourceCoordinator(2)
    _opened(old, "a", {})
    _opened(old, "b", {"src:a": 4.0})
    old.handle(SourceProgressed("a", 6.0, Promise(8.0, (3, 1)), reach=9.0))
    old.handle(SourceProgressed("b", 5.0, Promise(7.0, (2, 2)), reach=7.5))
    assert old.floors == {"a": -math.inf, "b": 4.0}
    c = SourceCoordinator(2)
    told = c.handle(Recovered(old.floors))
    frozen = {"src:a": Promise(-math.inf, (0, 0)), "src:b": Promise(4.0, (0, 0))}
    assert told == [
        SetFrontier(-math.inf, False),  # the shards keep theirs: never lowered without reset
        SetGate(frozen),
        ReportProgress("a"),
        ReportProgress("b"),
    ]
    assert c.source_floor("b") == 4.0 and c.frontier == -math.inf
    told = c.handle(SourceProgressed("a", 6.0, Promise(8.0, (3, 1)), reach=9.0))
    assert told == [SetGate({"src:a": Promise(8.0, (3, 1)), "src:b": frozen["src:b"]})]
    told = c.handle(SourceProgressed("b", 5.0, Promise(7.0, (2, 2)), reach=7.5))
    assert told[0] == SetFrontier(5.0, False) and c.gate == old.gate
    assert c.handle(ShardRestarted(0, "i"))[:2] == [
        SetFrontier(5.0, True, (0,)),
        SetGate(c.gate, (0,)),
    ]


def test_a_new_coordinator_of_a_graph_fed_by_one_source_or_none_lifts_the_gate():
    c = SourceCoordinator(1)
    assert c.handle(Recovered({})) == [SetFrontier(math.inf, False), SetGate(None)]
    c = SourceCoordinator(1)
    assert c.handle(Recovered({"a": 2.0})) == [
        SetFrontier(-math.inf, False),
        SetGate(None),
        ReportProgress("a"),
    ]


def _batch(source: str, first: int, times: list[float], prev: int) -> Batch:
    updates = [Update.add_edge(1, 2, t).with_origin(source, first + i) for i, t in enumerate(times)]
    return Batch.of_updates(updates, prev=prev)


def test_a_shard_merges_past_a_source_only_once_it_received_what_the_promise_counts_on():
    core = ShardCore(0, 1, None)
    # a sent positions 1..3 (times 1..3) and promises 10 after them; b promises 10 too
    core.set_gate({"src:a": Promise(10.0, (3,)), "src:b": Promise(10.0, (0,))})
    ran = core.handle(_batch("b", 1, [2.5, 4.0], prev=0))
    assert ran.executed == 0 and ran.received == 2 and ran.applied == 0  # a's 1..3 not here
    ran = core.handle(_batch("a", 1, [1.0, 2.0, 3.0], prev=0))
    assert ran.executed == 5 and core.times == {"src:a": 3.0, "src:b": 4.0}
    assert core.vertex(1)["state"]["last_ts"] == 4.0


def test_a_shard_that_lost_its_queue_waits_for_the_resend():
    core = ShardCore(0, 1, None)
    core.set_gate({"src:a": Promise(10.0, (2,)), "src:b": Promise(10.0, (0,))})
    core.received["src:a"] = 0  # what a restart leaves: nothing of a received
    assert core.handle(_batch("b", 1, [5.0], prev=0)).executed == 0
    resent = core.handle(_batch("a", 1, [1.0, 6.0], prev=0))
    assert resent.executed == 3 and core.applied == {"src:a": 2, "src:b": 1}
