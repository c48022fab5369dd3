"""The fault-injecting log store in real Ray shard actors (``Config.log_store``): a
failing append or checkpoint write stops the shard's process loudly, a torn write ends it
mid-write, a failing open makes the restarted shard try again; Ray restarts it, it
recovers from its log, the source resends, and the graph ends exact."""

from __future__ import annotations

import pytest

import chronoray as cr
from chronoray.testing import kill_shard
from shards.faults import PLAN_FILE, Fault, FaultPlan
from tests.faults.fault_helpers import edge_counts, expected_counts, wait_answering

pytestmark = [pytest.mark.ray]

FAULTY = "shards.faults:open_faulty"


def test_failing_and_torn_writes_in_shard_actors(ray_session, tmp_path, college_updates):
    log_dir = tmp_path / "g"
    log_dir.mkdir()
    plan = FaultPlan(
        [
            Fault("append", shard=0, at=4),
            Fault("append", kind="torn", shard=1, at=7),
            Fault("checkpoint", shard=1, at=1),
        ]
    ).save(log_dir / PLAN_FILE)
    options = {"log_store": FAULTY, "batch_size": 500, "shard_checkpoint_interval": 2000}
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir), **options) as g:
        report = g.ingest(college_updates, name="college")
        assert report.resent_batches >= 1
        assert edge_counts(g) == expected_counts(college_updates)
        assert all(s["restarted"] for s in g.stats().shards)
    assert sorted(plan.fired()) == [(0, 0, "append"), (1, 1, "append"), (2, 1, "checkpoint")]


def test_failing_open_of_a_restarted_shard_is_retried(ray_session, tmp_path, college_updates):
    log_dir = tmp_path / "g"
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir), log_store=FAULTY) as g:
        g.ingest(college_updates[:3000], name="college")
        plan = FaultPlan([Fault("open", shard=0, times=2)]).save(log_dir / PLAN_FILE)
        kill_shard(g, 0)
        wait_answering(g)  # opening a source while a shard restarts: see the next test
        g.ingest(college_updates, name="college")
        assert edge_counts(g) == expected_counts(college_updates)
    assert plan.fired() == [(0, 0, "open"), (0, 0, "open")]


def test_ingest_started_while_a_shard_restarts(ray_session, tmp_path, college_updates):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        g.ingest(college_updates[:3000], name="college")
        kill_shard(g, 1)
        g.ingest(college_updates, name="college")
        assert edge_counts(g) == expected_counts(college_updates)
