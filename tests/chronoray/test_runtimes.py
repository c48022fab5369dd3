"""Behaviour common to both runtimes, run against each: the in-process ``LocalRuntime``
and the Ray ``GraphCluster`` (one fixture parametrized over them, as Pykka runs one
suite over its runtimes)."""

from __future__ import annotations

import pytest

import chronoray as cr
from chronoray.protocol import Graph
from chronoray.testing import LocalRuntime, pair_counts
from shards.logstore import LogName
from shards.routing import shard_of


@pytest.fixture(params=["local", "ray"])
def graph(request, tmp_path):
    """A 2-shard graph on one runtime."""
    if request.param == "local":
        runtime = LocalRuntime(2)
    else:
        request.getfixturevalue("ray_session")
        runtime = cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g"))
    yield runtime
    runtime.close()


@pytest.fixture(scope="module")
def updates(college):
    """The first 5,000 lines of CollegeMsg as updates, in file order."""
    rows = sorted((ts, src, dst) for (src, dst), events in college.items() for ts, _ in events)
    return [cr.Update.add_edge(src, dst, ts) for ts, src, dst in rows[:5000]]


def _expected(updates):
    counts: dict[tuple[int, int], int] = {}
    for u in updates:
        counts[(u.vertex, u.dst)] = counts.get((u.vertex, u.dst), 0) + 1
    return counts


def test_both_runtimes_are_graphs(graph):
    assert isinstance(graph, Graph)


def test_ingest_and_query(graph, updates):
    graph.ingest(updates)
    expected = _expected(updates)
    sources = {src for src, _ in expected}
    for src in sorted(sources)[:50]:
        out = graph.vertex(src)["out_edges"]
        assert {dst: p["count"] for dst, p in out.items()} == {
            dst: n for (s, dst), n in expected.items() if s == src
        }
    with pytest.raises(cr.VertexNotFound):
        graph.vertex(10**9)


def test_live_computation_and_subscription(graph, updates):
    histogram = graph.start_computation(cr.DegreeHistogram())
    sub = graph.subscribe(ids=[9])
    graph.ingest(updates)
    graph.wait_idle()
    expected = _expected(updates)
    out_degrees: dict[int, int] = {}
    for src, _ in expected:
        out_degrees[src] = out_degrees.get(src, 0) + 1
    vertices = {v for pair in expected for v in pair}
    result = histogram.result()["out"]
    assert sum(result.values()) == len(vertices)
    assert result.get(0, 0) == len(vertices - set(out_degrees))
    items = sub.drain()
    assert items and all(item.vertex == 9 for item in items)
    assert items[-1].state["out_degree"] == graph.vertex(9)["state"]["out_degree"]
    sub.close()
    histogram.stop()


def test_read_logs_and_replay(graph, updates):
    graph.ingest(updates)
    graph.wait_idle()
    executions = cr.replay(graph, lambda n, command, state: n + 1, 0)
    events = LogName.EVENTS
    per_shard = graph.read_logs(lambda store: store.last_seq(events), {0: (), 1: ()})
    assert sum(executions.to_dict().values()) == sum(per_shard.values())
    assert all(shard_of(v, 2) in (0, 1) for v in executions.to_dict())


def test_same_graph_on_both_runtimes(updates, tmp_path, request):
    request.getfixturevalue("ray_session")
    local = LocalRuntime(2)
    local.ingest(updates)
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as remote:
        remote.ingest(updates)
        on_ray = {(s, d): p["count"] for s, d, p in remote.edges()}
    assert {pair: p["count"] for pair, p in local.edges().items()} == on_ray
    assert on_ray == dict(pair_counts({k: [(0, 0)] * n for k, n in _expected(updates).items()}))
    local.close()
