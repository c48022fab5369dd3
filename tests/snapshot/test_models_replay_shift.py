"""Log replay over vertex histories, and pause/shift/resume of PageRank (in process),
against the data file and networkx."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from models_data import nx_graph, runtime, tables, times

from shards.routing import shard_of
from snapshot.algorithms import pagerank
from snapshot.algorithms.followers import max_followers_replay
from snapshot.algorithms.pagerank import pagerank_job, pagerank_shift
from snapshot.models.replay import replay
from snapshot.retro import vertex_history, vertex_state_at


def test_replay_counts_every_execution_in_a_window():
    ts = times("college")
    t0, t1 = ts[len(ts) // 3], ts[2 * len(ts) // 3]
    result = replay(runtime("college"), lambda n, command, state: n + 1, 0, t0, t1)

    def activity(at):  # every execution adds one to sent (an update) or received (a message)
        vertices = tables("college", at)[0].select(["id", "sent", "received"]).to_pylist()
        return {v["id"]: v["sent"] + v["received"] for v in vertices}

    before, after = activity(math.nextafter(t0, -math.inf)), activity(t1)
    expected = {v: n - before.get(v, 0) for v, n in after.items() if n > before.get(v, 0)}
    assert result.to_dict("result") == expected
    assert result.info["entries"] == sum(expected.values()) > 0
    # (an execution's event time may be later than its line's: a message that arrives
    # after its target's own later update executes at the target's time, DESIGN 2)


def test_replay_one_vertex_sees_its_commands_and_states_in_order():
    rt = runtime("college")
    ts = times("college")
    t0, t1 = ts[1000], ts[20000]
    seen = replay(
        rt,
        lambda acc, command, state: [*acc, (command["ts"], state["clock"])],
        [],
        t0,
        t1,
        vertices=[9],
    ).to_dict("result")[9]
    store = rt.cores[shard_of(9, 2)].store
    history = [h for h in vertex_history(store, 9, t0, t1) if h["wc"] is not None]
    assert [clock for _, clock in seen] == [h["clock"] for h in history]
    assert all(t0 <= t <= t1 for t, _ in seen)
    most = max_followers_replay(rt, [9], t0, t1).to_dict("result")[9]
    known = vertex_state_at(store, 9, at=t1)["in_edges"]  # followers only grow here
    assert most == len(known) == max(len(h["in_edges"]) for h in history)


@pytest.mark.parametrize("parts", [1, 4])
def test_pause_shift_resume_pagerank_equals_a_fresh_run(parts, record_property):
    ts = times("college")
    t1 = ts[int(len(ts) * 0.97)]
    s1, s2 = tables("college", t1), tables("college")
    fresh = pagerank(s2, model="pregel", num_partitions=parts)
    with pagerank_job(s1, num_partitions=parts) as job:
        paused = job.run(supersteps=30)
        assert not paused.info["finished"]
        job.shift(s2, pagerank_shift)
        resumed = job.run()
    expected = nx.pagerank(nx_graph("college"), tol=1e-12)
    ranks = resumed.to_dict("rank")
    assert ranks.keys() == expected.keys()
    assert max(abs(ranks[v] - expected[v]) for v in expected) < 1e-6
    fresh_ranks = fresh.to_dict("rank")
    assert max(abs(ranks[v] - fresh_ranks[v]) for v in expected) < 1e-8
    shifted = [s for s in resumed.steps if "shift" in s]
    assert shifted and shifted[0]["shift"] == len(expected)
    record_property(
        "supersteps", {"fresh": fresh.info["supersteps"], "resumed": resumed.info["supersteps"]}
    )
    assert resumed.info["supersteps"] < fresh.info["supersteps"]
