"""A live computation whose shard process is SIGKILLed on Ray: its state was in that
process's memory only, so every read names the computation and the shard
(``LiveComputationLost``, not a bare ``KeyError``) until ``restart()``; restarted, it is
exact again (networkx) and follows the ingest that goes on."""

from __future__ import annotations

import networkx as nx
import pytest

import chronoray as cr
from chronoray.testing import kill_shard
from tests.ephemeral.conftest import check_histogram, check_wcc
from tests.faults.fault_helpers import wait_answering

pytestmark = [pytest.mark.ray]


def _graph(updates) -> nx.DiGraph:
    return nx.DiGraph([(u.vertex, u.dst) for u in updates])


def test_a_live_computation_whose_shard_is_killed_names_itself_and_restarts_exact(
    ray_session, tmp_path, college_updates
):
    first, rest = college_updates[:4000], college_updates[4000:8000]
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        hist = g.start_computation(cr.DegreeHistogram())
        wcc = g.start_computation(cr.WeaklyConnectedComponents())
        g.ingest(first, name="college")
        g.wait_idle()
        check_histogram(hist.result(), _graph(first))
        kill_shard(g, 1)
        wait_answering(g)  # the shard is back, rebuilt from its log, without the computation
        for live in (hist, wcc):
            with pytest.raises(cr.LiveComputationLost) as told:
                live.result()
            message = str(told.value)
            assert f"live computation {live.id!r}" in message and "on shard 1" in message
            assert type(live.computation).__name__ in message and "restart()" in message
        hist.restart()
        wcc.restart()
        g.wait_idle()
        check_histogram(hist.result(), _graph(first))
        g.ingest(rest, name="college-rest")
        g.wait_idle()
        check_histogram(hist.result(), _graph(first + rest))
        check_wcc(wcc.values(), _graph(first + rest))
        hist.stop()
        with pytest.raises(KeyError, match="no computation"):  # stopped by its user
            hist.result()
