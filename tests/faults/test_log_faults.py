"""The fault-injecting log store on the in-process runtime: every operation of a real
RocksDB log failing once, tearing, or going slow; the shard stops loudly, recovers from
its log, and the graph ends exact (nothing acknowledged lost, nothing applied twice)."""

from __future__ import annotations

import pytest

from chronoray.testing import LocalRuntime
from shards.core import ShardFailed
from shards.faults import Fault, FaultPlan, FaultyLogStore, InjectedFault, SimulatedCrash
from shards.logstore import LogName, RocksLogStore
from tests.faults.fault_helpers import edge_counts, expected_counts


@pytest.fixture(scope="module")
def updates(college_updates):
    """The first 4,000 lines of CollegeMsg."""
    return college_updates[:4000]


def _runtime(tmp_path, plan: FaultPlan, **options) -> LocalRuntime:
    """Two shards over RocksDB logs behind ``plan``; if the runtime cannot be built, the
    logs it opened are closed (a crashed process would release their locks too)."""
    opened: list[FaultyLogStore] = []

    def factory(k: int) -> FaultyLogStore:
        store = FaultyLogStore(lambda: RocksLogStore(tmp_path / f"shard-{k}"), plan, k)
        opened.append(store)
        return store

    try:
        return LocalRuntime(2, store_factory=factory, batch_size=250, **options)
    except BaseException:
        for store in opened:
            store.close()
        raise


def _last_clock(tmp_path, shard: int) -> int:
    with RocksLogStore(tmp_path / f"shard-{shard}", read_only=True) as store:
        return store.last_seq(LogName.EVENTS)


@pytest.mark.parametrize("op", ["append", "checkpoint"])
def test_failing_write_stops_the_shard_which_recovers_exactly(tmp_path, updates, op):
    plan = FaultPlan([Fault(op, shard=1, at=3)])
    rt = _runtime(tmp_path, plan, shard_checkpoint_interval=500)
    with pytest.raises(ShardFailed, match=f"shard 1: log write failed: shard 1: injected {op}"):
        rt.ingest(updates, "college")
    logged = _last_clock(tmp_path, 1)
    # the stopped shard goes on with nothing: a retry is refused until it is rebuilt
    with pytest.raises(ShardFailed, match="shard 1"):
        rt.ingest(updates, "college")
    assert _last_clock(tmp_path, 1) == logged  # nothing logged after the failure
    rt.crash(1)
    rt.crash(0)
    rt.ingest(updates, "college")  # the source resends; applied positions skip the rest
    assert edge_counts(rt) == expected_counts(updates)
    assert [(i, k, o) for i, k, o in plan.fired()] == [(0, 1, op)]
    rt.close()


def test_torn_write_drops_the_batch_and_the_process(tmp_path, updates):
    plan = FaultPlan([Fault("append", kind="torn", shard=0, at=5)])
    rt = _runtime(tmp_path, plan)
    with pytest.raises(SimulatedCrash, match="shard 0: torn append"):
        rt.ingest(updates, "college")
    rt.close()  # the whole "process" is gone: reopen every shard from its log
    rt = _runtime(tmp_path, plan)
    rt.ingest(updates, "college")
    assert edge_counts(rt) == expected_counts(updates)
    rt.close()


def test_slow_writes_change_nothing(tmp_path, updates):
    plan = FaultPlan([Fault("append", kind="slow", at=2, every=3, times=4, delay=0.01)])
    rt = _runtime(tmp_path, plan)
    rt.ingest(updates, "college")
    assert edge_counts(rt) == expected_counts(updates)
    assert len(plan.fired()) == 4
    rt.close()


def test_failing_open_and_scan_are_clear_and_pass_once_the_fault_is_gone(tmp_path, updates):
    rt = _runtime(tmp_path, FaultPlan())
    rt.ingest(updates, "college")
    rt.close()
    plan = FaultPlan([Fault("open", shard=0), Fault("scan", shard=1, at=1)])
    with pytest.raises(InjectedFault, match="shard 0: injected open failure"):
        _runtime(tmp_path, plan)
    with pytest.raises(InjectedFault, match="shard 1: injected scan failure"):
        _runtime(tmp_path, plan)  # shard 0 opened, shard 1 fails to replay its log
    rt = _runtime(tmp_path, plan)  # each fault fired once
    assert edge_counts(rt) == expected_counts(updates)
    rt.close()


def test_periodic_append_failures_with_recovery_in_between(tmp_path, updates):
    plan = FaultPlan([Fault("append", at=4, every=7, times=0)])  # every shard, forever
    rt = _runtime(tmp_path, plan)
    failures = 0
    while True:
        try:
            rt.ingest(updates, "college")
            break
        except ShardFailed:
            failures += 1
            for k in range(2):
                rt.crash(k)
    assert failures >= 3
    assert edge_counts(rt) == expected_counts(updates)
    rt.close()


def test_file_plan_fires_a_one_shot_fault_once_across_processes(tmp_path):
    plan = FaultPlan([Fault("append", shard=0, at=1)]).save(tmp_path / "faults.json")
    again = FaultPlan.load(tmp_path / "faults.json")
    assert plan.due(0, "append", 1) is not None
    plan.fire(0, 0, "append")
    assert again.due(0, "append", 1) is None  # another reader of the file sees it fired
    assert again.fired() == [(0, 0, "append")]
    with pytest.raises(ValueError, match="nothing to tear"):
        Fault("open", kind="torn")
