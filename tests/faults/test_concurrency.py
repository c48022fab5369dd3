"""Concurrency under faults, on Ray: a second graph on a log directory in use, two graphs
with one name, a snapshot taken while a shard restarts, a subscription whose shard
crashes, two gateways on one graph, a source reopened while its stream still drains."""

from __future__ import annotations

import pytest

import chronoray as cr
from chronoray.client import GatewayClient
from chronoray.gateway import Gateway, GatewaySettings
from chronoray.testing import kill_shard
from shards.routing import shard_of
from tests.faults.fault_helpers import edge_counts, expected_counts, wait_answering

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_a_second_graph_on_a_log_dir_in_use_is_refused(ray_session, tmp_path, college_updates):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        g.ingest(college_updates[:2000], name="college")
        with pytest.raises(cr.LogDirInUse, match=str(tmp_path / "g")):
            cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g"))
        assert edge_counts(g) == expected_counts(college_updates[:2000])  # untouched


def test_two_graphs_with_one_name(ray_session, tmp_path):
    g = cr.GraphCluster.create("twice", num_shards=1, log_dir=str(tmp_path / "a"))
    try:
        with pytest.raises(cr.GraphExists, match="'twice' is running already"):
            cr.GraphCluster.create("twice", num_shards=1, log_dir=str(tmp_path / "b"))
        assert not (tmp_path / "b" / "shard-0").exists()  # nothing of it was started
    finally:
        g.shutdown()


def test_snapshot_taken_while_a_shard_restarts(ray_session, tmp_path, college_updates):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        g.ingest(college_updates[:6000], name="college")
        at = college_updates[3000].ts
        kill_shard(g, 0)
        snap = g.snapshot(at=at)  # reads the logs: the dead process does not matter
        cols = snap.edges().select(["src", "dst", "count"]).to_pydict()
        got = dict(zip(zip(cols["src"], cols["dst"], strict=True), cols["count"], strict=True))
        want = expected_counts([u for u in college_updates[:6000] if u.ts <= at])
        assert got == want


def test_a_subscription_resumes_across_a_crash_of_its_shard(ray_session, tmp_path, college_updates):
    vertex = college_updates[0].vertex
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        sub = g.subscribe(ids=[vertex])
        g.ingest(college_updates[:3000], name="college")
        items = [i for i in sub.drain() if isinstance(i, cr.Notification)]
        position = sub.position
        kill_shard(g, shard_of(vertex, 2))
        wait_answering(g)
        with pytest.raises(Exception, match="subscription|not found|no "):
            sub.drain()  # the restarted shard does not know it: said, not silent
        g.ingest(college_updates[:6000], name="college")
        with g.subscribe(ids=[vertex], resume=position) as resumed:
            items += [i for i in resumed.drain() if isinstance(i, cr.Notification)]
        clocks = [i.clock for i in items]
        assert clocks == list(range(1, g.vertex(vertex)["clock"] + 1))  # none missed, none twice


def test_two_gateways_on_one_graph(ray_session, tmp_path, college_updates):
    g = cr.GraphCluster.create("two-gateways", num_shards=2, log_dir=str(tmp_path / "g"))
    settings = GatewaySettings(port=0, token="t", output_dir=str(tmp_path / "out"))
    try:
        with Gateway(g, settings).start() as one, Gateway(g, settings).start() as two:
            first, second = college_updates[:3000], college_updates[3000:6000]
            with (
                GatewayClient(one.address, token="t") as a,
                GatewayClient(two.address, token="t") as b,
            ):
                a.ingest(first, name="college")
                b.ingest(first + second, name="college")  # resumes after what one acked
                assert a.stats()["edges"] == b.stats()["edges"]
        assert edge_counts(g) == expected_counts(college_updates[:6000])
    finally:
        g.shutdown()


def test_a_source_reopened_while_its_stream_drains(ray_session, tmp_path, college_updates):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g"), batch_size=200) as g:
        job = g.ingest(college_updates, name="college", wait=False)
        with pytest.raises(cr.SourceBusy, match="'college' is already feeding"):
            g.ingest(college_updates, name="college")
        job.wait(timeout=600)
        g.wait_idle()
        g.ingest(college_updates, name="college")  # once drained: a no-op resend
        assert edge_counts(g) == expected_counts(college_updates)
