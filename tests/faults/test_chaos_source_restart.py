"""Found by the chaos campaign (round 3 of its second run): a snapshot reader asked for a
time cut while a killed source actor was restarting on a machine at a load of 60; the
graph asked the actor again for about 60 s, then handed the reader Ray's
``ActorDiedError`` although the reader had given the snapshot 600 s. A source actor that
does not answer is now waited for like a source still starting, until the snapshot's own
timeout, and then the answer is :class:`~chronoray.errors.SnapshotNotReady`. Here the
actor never comes back (killed without restart), which makes the wait certain."""

from __future__ import annotations

import time

import pytest

from chronoray.chaos import chaos_streams


@pytest.mark.ray
def test_a_time_cut_waiting_on_a_source_actor_that_does_not_answer_is_not_ready(
    ray_session, tmp_path
):
    import ray

    import chronoray as cr
    from chronoray.errors import SnapshotNotReady

    ((path, _),) = chaos_streams(tmp_path, copies=3, bitcoin=False).values()
    last = float(path.read_text().rsplit("\n", 2)[-2].split()[2])
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        job = g.ingest(cr.SnapEdgeSource(path), wait=False)
        while not job.progress().get("acked"):
            assert not job.done(), "the source ended before its actor could be killed"
            time.sleep(0.05)
        ray.kill(job.actor, no_restart=True)
        with pytest.raises(SnapshotNotReady, match="still incomplete after 5"):
            g.snapshot(at=last, timeout=5)
