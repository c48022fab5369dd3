"""The vectorized kernels of the built-in algorithms against networkx: both SNAP files at
several times and a generated skewed graph (ranks within the stated bound, identical
component partitions, distances, degrees, triangles), and the choice of engine."""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest
from models_data import nx_graph, oracle, tables

from bench.workloads import skewed_stream
from snapshot.algorithms import (
    activity,
    clustering,
    component_sets,
    connected_components,
    degree_distribution,
    degrees,
    distances,
    follower_histogram,
    in_degrees,
    new_followers,
    pagerank,
    shortest_paths,
    strongly_connected_components,
    triangles,
)
from snapshot.algorithms import engine as engines

CUTS = [
    ("college", 1083000000.0),
    ("college", 1090000000.0),
    ("college", None),
    ("bitcoin", 1290000000.0),
    ("bitcoin", 1400000000.0),
    ("bitcoin", None),
    ("skewed", None),
]


def _skewed() -> tuple[tuple[pa.Table, pa.Table], nx.DiGraph]:
    """Distinct pairs of a skewed stream (a hub owning a quarter of the edges), with the
    default vertex class's edge columns, and its networkx graph."""
    stream = np.array(skewed_stream(40_000, 6_000, 12_000), dtype=np.int64)
    events = pa.table({"src": stream[:, 0], "dst": stream[:, 1], "ts": stream[:, 2]})
    edges = events.group_by(["src", "dst"]).aggregate([("ts", "count"), ("ts", "max")])
    edges = edges.rename_columns(["src", "dst", "count", "last_ts"])
    graph = nx.DiGraph()
    graph.add_edges_from(zip(stream[:, 0].tolist(), stream[:, 1].tolist(), strict=True))
    return (pa.table({"id": pa.array([], pa.int64())}), edges), graph


def _cut(dataset: str, at: float | None) -> tuple[tuple[pa.Table, pa.Table], nx.DiGraph]:
    if dataset == "skewed":
        return _skewed()
    return tables(dataset, at), nx_graph(dataset, at)


def _sets(components) -> list[list]:
    return sorted(sorted(c) for c in components)


@pytest.mark.parametrize(("dataset", "at"), CUTS)
def test_kernels_equal_networkx(dataset, at):
    graph, expected = _cut(dataset, at)
    ranks = pagerank(graph)
    assert ranks.info["engine"] == "local" and ranks.model == "kernel"
    got, truth = ranks.to_dict("rank"), nx.pagerank(expected, tol=1e-12, max_iter=1000)
    assert got.keys() == truth.keys()
    assert max(abs(got[v] - truth[v]) for v in truth) < 1e-6
    assert abs(sum(got.values()) - 1) < 1e-9

    assert component_sets(connected_components(graph)) == _sets(
        nx.weakly_connected_components(expected)
    )
    assert component_sets(strongly_connected_components(graph)) == _sets(
        nx.strongly_connected_components(expected)
    )
    source = max(expected.out_degree, key=lambda pair: pair[1])[0]
    assert distances(shortest_paths(graph, source)) == nx.single_source_shortest_path_length(
        expected, source
    )

    table = degrees(graph).table
    ids = table["id"].to_pylist()
    assert dict(zip(ids, table["in_degree"].to_pylist(), strict=True)) == dict(expected.in_degree)
    assert dict(zip(ids, table["out_degree"].to_pylist(), strict=True)) == dict(expected.out_degree)
    assert in_degrees(graph).as_dict() == dict(expected.in_degree)
    assert follower_histogram(graph).as_dict() == dict(
        sorted(Counter(d for _, d in expected.in_degree).items())
    )
    dist = degree_distribution(graph).table.to_pydict()
    assert {d: n for d, n in zip(dist["degree"], dist["in_vertices"], strict=True) if n} == dict(
        Counter(d for _, d in expected.in_degree)
    )

    simple = nx.Graph(expected)
    simple.remove_edges_from(nx.selfloop_edges(simple))
    assert triangles(graph).to_dict() == nx.triangles(simple)
    coefficients, truth = clustering(graph).to_dict(), nx.clustering(simple)
    assert coefficients.keys() == truth.keys()
    assert max(abs(coefficients[v] - truth[v]) for v in truth) < 1e-12


def test_weighted_pagerank_and_dijkstra_equal_networkx():
    graph = tables("college", 1090000000.0)
    weighted = nx.DiGraph()
    weighted.add_nodes_from(graph[0]["id"].to_pylist())
    rows = graph[1].select(["src", "dst", "count"]).to_pylist()
    weighted.add_weighted_edges_from((e["src"], e["dst"], e["count"]) for e in rows)
    got = pagerank(graph, weight="count").to_dict("rank")
    truth = nx.pagerank(weighted, tol=1e-12, max_iter=1000)
    assert max(abs(got[v] - truth[v]) for v in truth) < 1e-6
    lengths = distances(shortest_paths(graph, 9, weight="count"))
    assert lengths == nx.single_source_dijkstra_path_length(weighted, 9)
    assert all(type(d) is int for d in lengths.values())  # integer weights, integer lengths


def test_new_followers_and_activity_between_cuts():
    t1, t2 = 1083000000.0, 1090000000.0
    first, second = tables("college", t1), tables("college", t2)
    g1, g2 = nx_graph("college", t1), nx_graph("college", t2)
    expected: dict = {}
    for u, v in g2.edges:
        if not g1.has_edge(u, v):
            expected.setdefault(v, []).append(u)
    got = new_followers(first, second)
    assert got.as_dict() == {v: sorted(us) for v, us in sorted(expected.items())}
    assert got.pairs == new_followers(first, second, engine="ray", executor="local").pairs

    rows = activity([(t1, first), (t2, second)]).table.to_pylist()
    lines = [ts for events in oracle("college").values() for ts, _ in events]
    assert [(r["vertices"], r["edges"]) for r in rows] == [
        (g.number_of_nodes(), g.number_of_edges()) for g in (g1, g2)
    ]
    assert [r["messages"] for r in rows] == [sum(ts <= t for ts in lines) for t in (t1, t2)]
    active = {p for p, evs in oracle("college").items() if any(t1 < ts <= t2 for ts, _ in evs)}
    assert rows[1]["active_edges"] == len(active)
    assert rows[1]["active_vertices"] == len({v for pair in active for v in pair})
    with pytest.raises(ValueError, match="increasing time order"):
        activity([(t2, second), (t1, first)])


def test_string_ids_empty_graphs_and_bad_input():
    graph = (
        pa.table({"id": ["a", "b", "c", "lonely"]}),
        pa.table({"src": ["a", "b", "c"], "dst": ["b", "c", "a"], "w": [1.0, -2.0, 0.5]}),
    )
    assert connected_components(graph).to_dict() == {
        "a": "a",
        "b": "a",
        "c": "a",
        "lonely": "lonely",
    }
    assert distances(shortest_paths(graph, "a")) == {"a": 0, "b": 1, "c": 2}
    with pytest.raises(ValueError, match="not a vertex of the graph"):
        shortest_paths(graph, "zz")
    with pytest.raises(ValueError, match="negative"):
        shortest_paths(graph, "a", weight="w")
    with pytest.raises(ValueError, match="does not exist"):
        pagerank(graph, weight="nope")
    empty = (pa.table({"id": pa.array([], pa.int64())}), pa.table({"src": [], "dst": []}))
    empty = (empty[0], empty[1].cast(pa.schema([("src", pa.int64()), ("dst", pa.int64())])))
    assert pagerank(empty).table.num_rows == 0 and triangles(empty).table.num_rows == 0
    with pytest.raises(RuntimeError, match="did not converge"):
        pagerank(tables("college"), max_iterations=3)


def test_engine_is_chosen_by_size_and_stated(monkeypatch):
    graph = tables("college", 1083000000.0)
    small = pagerank(graph)
    assert small.info["engine"] == "local" and "edges <=" in small.info["engine_reason"]
    monkeypatch.setattr(engines, "LOCAL_MAX_EDGES", 10)
    big = pagerank(graph, executor="local")
    assert big.info["engine"] == "ray" and "too large" in big.info["engine_reason"]
    assert big.model == "pregel"
    got, want = big.to_dict("rank"), small.to_dict("rank")
    assert max(abs(got[v] - want[v]) for v in want) < 1e-9
    with pytest.raises(ValueError, match="engine must be"):
        pagerank(graph, engine="gpu")
    with pytest.raises(ValueError, match="needs engine 'ray'"):
        pagerank(graph, engine="local", model="pregel")


def test_analyze_engine_bands(monkeypatch):
    """``analyze``'s choice: kernel, then the Ray models while the cluster's memory holds
    them, then Spark; an engine an analysis lacks is refused, naming the ones it has."""
    import chronoray.analysis as analysis

    graph = tables("college", 1083000000.0)
    pagerank_analysis, degrees = analysis.ANALYSES["pagerank"], analysis.ANALYSES["degrees"]
    assert analysis.choose_analysis_engine(pagerank_analysis, [graph], "auto").engine == "local"
    monkeypatch.setattr(analysis, "LOCAL_MAX_EDGES", 10)
    roomy, tight = 1e12, 1e3
    choose = analysis.choose_analysis_engine
    assert choose(pagerank_analysis, [graph], "auto", roomy).engine == "ray"
    assert choose(pagerank_analysis, [graph], "auto", tight).engine == "spark"
    assert choose(degrees, [graph], "auto", roomy).engine == "spark"  # no Ray model
    with pytest.raises(ValueError, match="no ray implementation; it runs on local, spark"):
        choose(degrees, [graph], "ray")
