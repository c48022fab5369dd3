"""Restarts while two sources feed the graph: whatever shard or source dies and comes
back, every update is logged at its own event time, so every past cut equals the file
(:mod:`bench.restarts`: the odd and even lines of a skewed stream into 4 shards). In
process with ``LocalRuntime.crash``/``crash_source``; on Ray with SIGKILLs of shard and
source actor processes (the 300 k-event, 12-kill run is ``long``; its last result is in
``bench/results/restarts.md``)."""

from __future__ import annotations

import pytest

from bench.restarts import ROOT, _ray_in, _ray_ingest, local_run, skewed


def test_crashes_of_shards_and_sources_in_process_leave_every_cut_exact():
    result = local_run(20_000, crashes=8, shards=4)
    assert result["kills"] == 8 and result["updates"] >= 20_000
    assert result["wrong"] == 0, result["cuts"]


@pytest.mark.ray
def test_kills_of_shard_and_source_processes_on_ray_leave_every_cut_exact(ray_session, tmp_path):
    result = _ray_ingest(skewed(40_000), kills=4, shards=4, workdir=tmp_path, seed=3)
    assert result["kills"] >= 2, result["killed"]
    assert result["updates"] == 40_000 and result["wrong"] == 0, result["cuts"]


@pytest.mark.long
def test_300k_events_and_12_kills_on_ray_leave_every_cut_exact(tmp_path):
    result = _ray_in(ROOT, events=300_000, kills=12, shards=4)
    assert result["kills"] >= 10 and result["wrong"] == 0, result["cuts"]
