"""Restarts while two sources feed the graph: whatever shard, source or controller dies
and comes back, every update is logged at its own event time, so every past cut equals
the file (:mod:`bench.restarts`: the odd and even lines of a skewed stream into 4
shards). In process with ``LocalRuntime.crash``/``crash_source``/``crash_coordinator``;
on Ray with SIGKILLs of shard, source actor and controller processes, each once the
sources paused at its share of the stream (:mod:`chronoray.testing`; the 300 k-event,
12-kill run is ``long``; its last result is in ``bench/results/restarts.md``)."""

from __future__ import annotations

import pytest

from bench.restarts import ROOT, _ray_in, _ray_ingest, local_run, skewed

# the controller dies again and again, between kills of a shard and of a source actor
CONTROLLER_AGAIN = [
    ("controller", 0),
    ("shard", 1),
    ("controller", 0),
    ("source", 0),
    ("controller", 0),
    ("shard", 2),
    ("controller", 0),
]


def test_crashes_of_shards_and_sources_in_process_leave_every_cut_exact():
    result = local_run(20_000, crashes=8, shards=4)
    assert result["kills"] == 8 and result["updates"] >= 20_000
    assert result["wrong"] == 0, result["cuts"]


def test_crashes_of_the_coordinator_in_process_leave_every_cut_exact():
    result = local_run(20_000, crashes=0, shards=4, plan=CONTROLLER_AGAIN)
    assert result["kills"] == len(CONTROLLER_AGAIN) and result["updates"] >= 20_000
    assert result["wrong"] == 0, result["cuts"]


@pytest.mark.ray
def test_kills_of_controller_shard_and_source_processes_on_ray_leave_every_cut_exact(
    ray_session, tmp_path
):
    # each kill waits for both sources to pause at their share of the stream (gated): all
    # seven land while the sources read, whatever the machine's speed
    result = _ray_ingest(skewed(20_000), 0, 4, tmp_path, 3, plan=CONTROLLER_AGAIN, gated=True)
    assert result["killed"] == [f"{kind} {k}" for kind, k in CONTROLLER_AGAIN], result
    assert result["updates"] == 20_000 and result["wrong"] == 0, result["cuts"]


@pytest.mark.long
def test_300k_events_and_12_kills_on_ray_leave_every_cut_exact(tmp_path):
    result = _ray_in(ROOT, events=300_000, kills=12, shards=4)
    assert "controller 0" in result["killed"], result["killed"]
    assert result["kills"] >= 10 and result["wrong"] == 0, result["cuts"]


@pytest.mark.ray
def test_a_restarted_controller_remembers_how_sources_ended_and_opens_new_ones(
    ray_session, tmp_path
):
    import chronoray as cr
    from bench.workloads import write_snap
    from chronoray.testing import kill_controller

    rows = skewed(2_000)
    write_snap(tmp_path / "a.txt", rows[:1_000])  # b goes on where a ends (its floor)
    write_snap(tmp_path / "b.txt", rows[1_000:])
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        job = g.ingest(cr.SnapEdgeSource(tmp_path / "a.txt"), wait=False)
        assert job.wait(timeout=300).updates == 1_000
        kill_controller(g)
        assert job.done() and job.wait().updates == 1_000  # its end outlived the controller
        assert g.ingest(cr.SnapEdgeSource(tmp_path / "b.txt")).updates == 1_000
        stats = g.stats()
        assert stats.edges == len({(s, d) for s, d, _ in rows})
        assert {"a.txt", "b.txt"} <= set(stats.sources)


def test_a_controller_handle_waits_through_a_restart_but_not_past_a_stop(ray_session, tmp_path):
    import math
    import threading

    import ray

    import chronoray as cr
    from chronoray.handles import ControllerHandle
    from chronoray.testing import kill_controller

    with cr.GraphCluster(num_shards=1, log_dir=str(tmp_path / "g")) as g:
        d = g._runtime.deployment
        handle = ControllerHandle.named(d.controller_name, d.namespace, patience=math.inf)
        kill_controller(g)
        assert not handle.gone()  # restarting: its name still names it
        assert handle.info()["graph_id"] == d.graph_id  # asked again until it is back
    assert handle.gone()
    failed: list[BaseException] = []
    asking = threading.Thread(target=lambda: _catch(handle.info, failed), daemon=True)
    asking.start()
    asking.join(timeout=120)  # with infinite patience, only gone() ends the wait
    assert not asking.is_alive() and isinstance(failed[0], ray.exceptions.RayActorError)


def _catch(call, into: list[BaseException]) -> None:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 -- handed to the test
        into.append(exc)
