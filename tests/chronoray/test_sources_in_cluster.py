"""Sources as actors in the cluster, named graphs and their one-line errors, on the test
session's Ray instance."""

from __future__ import annotations

import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.testing import kill_source, pair_counts

pytestmark = [pytest.mark.ray]


def _counts(graph: cr.GraphCluster) -> dict[tuple[int, int], int]:
    return {(s, d): p["count"] for s, d, p in graph.edges()}


def test_a_killed_source_actor_resumes_nothing_lost_or_doubled(ray_session, tmp_path, college):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g"), batch_size=500) as g:
        job = g.ingest(cr.SnapEdgeSource(collegemsg_path()), wait=False)
        while job.progress().get("acked", 0) < 20_000:
            assert not job.done(), "ingestion ended before the source could be killed"
        kill_source(job)
        report = job.wait(timeout=300)
        g.wait_idle()
        assert report.updates == 59835 and report.skipped >= 20_000  # resumed, not redone
        assert _counts(g) == dict(pair_counts(college))


def test_several_sources_feed_one_graph_at_once(ray_session, tmp_path, college):
    lines = collegemsg_path().read_text().splitlines(keepends=True)
    halves = [tmp_path / "first.txt", tmp_path / "second.txt"]
    halves[0].write_text("".join(lines[::2]))
    halves[1].write_text("".join(lines[1::2]))
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        # opened together: one started after the other had applied later times would
        # find its first lines late (event time: a source cannot go back before others)
        jobs = g.ingest_many([cr.SnapEdgeSource(path) for path in halves], wait=False)
        reports = [job.wait(timeout=300) for job in jobs]
        g.wait_idle()
        assert sum(r.updates for r in reports) == 59835
        assert _counts(g) == dict(pair_counts(college))
        again = g.ingest(cr.SnapEdgeSource(halves[0]), wait=False)
        with pytest.raises(cr.SourceBusy, match="source 'first.txt' is already feeding"):
            g.ingest(cr.SnapEdgeSource(halves[0]), wait=False)
        assert again.wait(timeout=300).skipped == len(lines[::2])  # applied already


def test_named_graph_create_attach_close_shutdown(ray_session, tmp_path, college):
    g = cr.GraphCluster.create("named", num_shards=2, log_dir=str(tmp_path / "named"))
    try:
        with pytest.raises(cr.GraphExists, match="a graph named 'named' is running already"):
            cr.GraphCluster.create("named", num_shards=2, log_dir=str(tmp_path / "elsewhere"))
        with pytest.raises(cr.LogDirInUse, match="is in use by graph 'named'"):
            cr.GraphCluster.create("other", log_dir=str(tmp_path / "named"))
        job = g.ingest(cr.SnapEdgeSource(collegemsg_path()), wait=False)
        g.close()  # detach: the graph and its source keep running
        assert "named" in cr.GraphCluster.running()
        h = cr.GraphCluster.attach("named")
        assert job.wait(timeout=300).updates == 59835
        report = h.ingest(cr.SnapEdgeSource(collegemsg_path()))  # same source: a no-op
        assert report.skipped == 59835
        h.wait_idle()
        assert _counts(h) == dict(pair_counts(college))
        assert h.status().missing == []
        h.close()
    finally:
        cr.GraphCluster.attach("named").shutdown()
    assert "named" not in cr.GraphCluster.running()
    with pytest.raises(cr.GraphNotFound, match="no graph named 'named' in the Ray cluster"):
        cr.GraphCluster.attach("named")
    with cr.GraphCluster.create("named", log_dir=str(tmp_path / "named")) as reopened:
        assert reopened.stats().edges == 20296  # recovered from the logs that stayed
        reopened.shutdown()


def test_a_second_private_graph_on_a_log_dir_in_use_is_refused(ray_session, tmp_path):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")):
        with pytest.raises(cr.LogDirInUse, match="is in use by another graph"):
            cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g"))
