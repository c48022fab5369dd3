"""The processing models on Ray: one actor per partition over a real snapshot's object
refs (CollegeMsg ingested into 2 shards), with 1 and 4 partitions, against networkx."""

from __future__ import annotations

import networkx as nx
import pytest
from models_data import nx_graph, nx_pagerank, tables, times

import chronoray as cr
from chronoray.datasets import collegemsg_path
from snapshot.algorithms import (
    component_sets,
    connected_components,
    distances,
    follower_histogram,
    max_followers_replay,
    new_followers,
    pagerank,
    pagerank_job,
    pagerank_shift,
    shortest_paths,
)

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def graph(ray_session, tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("models") / "g"
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir)) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        yield g


@pytest.fixture(scope="module")
def snapshots(graph):
    ts = times("college")
    t1 = ts[int(len(ts) * 0.97)]
    return t1, graph.snapshot(at=t1), graph.snapshot()


def _close(ranks, expected, tol):
    return (
        ranks.keys() == expected.keys() and max(abs(ranks[v] - expected[v]) for v in expected) < tol
    )


@pytest.mark.parametrize("parts", [1, 4])
def test_pregel_and_scatter_gather_on_a_snapshot(snapshots, parts):
    _, _, now = snapshots
    oracle, expected = nx_graph("college"), nx_pagerank("college")
    vertex = pagerank(now, model="pregel", num_partitions=parts)
    edge = pagerank(now, model="scatter_gather", num_partitions=parts)
    assert _close(vertex.to_dict("rank"), expected, 1e-6)
    assert _close(edge.to_dict("rank"), vertex.to_dict("rank"), 1e-9)
    assert vertex.num_partitions == parts and len(vertex.steps) == vertex.info["supersteps"]
    truth = sorted(sorted(c) for c in nx.weakly_connected_components(oracle))
    assert component_sets(connected_components(now, model="pregel", num_partitions=parts)) == truth
    labels = connected_components(now, model="scatter_gather", num_partitions=parts)
    assert [[int(v) for v in c] for c in component_sets(labels)] == truth
    hops = nx.single_source_shortest_path_length(oracle, 9)
    assert distances(shortest_paths(now, 9, model="pregel", num_partitions=parts)) == hops


def test_mapreduce_temporal_replay_and_shift_on_ray(graph, snapshots):
    t1, before, now = snapshots
    g1, g2 = nx_graph("college", t1), nx_graph("college")
    histogram = follower_histogram(now, engine="ray", num_partitions=4).as_dict()
    counts: dict = {}
    for _, d in g2.in_degree:
        counts[d] = counts.get(d, 0) + 1
    assert histogram == dict(sorted(counts.items()))
    followers = new_followers(before, now, engine="ray", num_partitions=4).as_dict()
    expected: dict = {}
    for u, v in g2.edges:
        if not g1.has_edge(u, v):
            expected.setdefault(v, []).append(u)
    assert followers == {v: sorted(us) for v, us in expected.items()}
    most = max_followers_replay(graph, [9, 1025], t1=t1).to_dict("result")
    # followers as the vertex knew them then (its in-edge records: DESIGN 2 event time)
    known = {v: len(graph.vertex_state(v, at=t1)["in_edges"]) for v in (9, 1025)}
    assert most == known and known[9] > 0  # they only grow in CollegeMsg

    fresh = pagerank(now, model="pregel", num_partitions=4)
    with pagerank_job(before, num_partitions=4) as job:
        job.run(supersteps=30)
        job.shift(now, pagerank_shift)
        resumed = job.run()
    assert _close(resumed.to_dict("rank"), nx_pagerank("college"), 1e-6)
    assert resumed.info["supersteps"] < fresh.info["supersteps"]


def test_tables_on_ray_bitcoin(ray_session, tmp_path):
    ranks = pagerank(tables("bitcoin"), engine="ray", num_partitions=4)
    assert _close(ranks.to_dict("rank"), nx_pagerank("bitcoin"), 1e-6)
    path = ranks.save_parquet(tmp_path / "ranks.parquet")
    assert path.exists()


def test_analyze_on_the_ray_models(snapshots):
    """``analyze``'s Ray engine: the array-form models, the columns of every engine."""
    from chronoray.analysis import run_analysis

    _, _, now = snapshots
    ranks = run_analysis(None, "pagerank", now, engine="ray")
    assert ranks.engine == "ray" and list(ranks.to_pandas().columns) == ["vertex", "pagerank"]
    got = dict(zip(ranks.to_pandas()["vertex"], ranks.to_pandas()["pagerank"], strict=True))
    assert _close(got, nx_pagerank("college"), 1e-6)
    components = run_analysis(None, "wcc", now, engine="ray")
    assert components.info["components"] == nx.number_weakly_connected_components(
        nx_graph("college")
    )
