"""MapReduce and temporal MapReduce (in process) on CollegeMsg / Bitcoin OTC, and the
thesis's examples (follower histogram, max in-degree over time, new followers), against
networkx and the data files."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from models_data import nx_graph, oracle, tables, times

from snapshot.algorithms.followers import (
    follower_histogram,
    in_degrees,
    max_in_degree_series,
    new_followers,
)
from snapshot.models.mapreduce import mapreduce, temporal_mapreduce, temporal_series


@pytest.mark.parametrize("parts", [1, 4])
def test_vertex_and_edge_mapreduce(parts):
    graph, g = tables("bitcoin"), nx_graph("bitcoin")
    degrees = in_degrees(graph, engine="ray", executor="local", num_partitions=parts)
    assert degrees.pairs == sorted(g.in_degree)
    assert degrees.table.column_names == ["key", "value"]
    histogram = follower_histogram(graph, engine="ray", executor="local", num_partitions=parts)
    assert histogram.as_dict() == dict(sorted(Counter(d for _, d in g.in_degree).items()))

    def reciprocal(src, edge, dst):  # an edge whose reverse exists, seen from both views
        if src["id"] in dst["out_edges"]:
            yield min(edge["src"], edge["dst"]), max(edge["src"], edge["dst"])

    mutual = mapreduce(
        graph, map_edge=reciprocal, reduce=lambda k, vs: sorted(vs), num_partitions=parts
    )
    expected: dict = {}
    for u, v in g.edges:
        if g.has_edge(v, u):
            expected.setdefault(min(u, v), []).append(max(u, v))
    assert mutual.as_dict() == {k: sorted(vs) for k, vs in expected.items()}
    assert [k for k, _ in mutual.pairs] == sorted(expected)

    def ratings(src, edge, dst):  # edge properties and both states reach map_edge
        yield edge["dst"], (edge["count"], dst["in_degree"])

    rated = mapreduce(graph, map_edge=ratings, reduce=lambda k, vs: vs, num_partitions=parts)
    assert all(len(vs) == vs[0][1] == g.in_degree(k) for k, vs in rated.pairs)


@pytest.mark.parametrize("parts", [1, 4])
def test_temporal_mapreduce_new_removed_changed(parts):
    ts = times("college")
    t1, t2 = ts[len(ts) // 2], ts[-1]
    first, second = tables("college", t1), tables("college", t2)

    def compare(vid, a, b):
        if a is None:
            yield "new", vid
        elif b is None:
            yield "removed", vid
        elif a["out_edges"] != b["out_edges"] or a["received"] != b["received"]:
            yield "changed", vid

    result = temporal_mapreduce(
        first, second, map_temporal=compare, num_partitions=parts, reduce=lambda k, vs: sorted(vs)
    ).as_dict()
    g1, g2 = nx_graph("college", t1), nx_graph("college", t2)
    assert result["new"] == sorted(set(g2) - set(g1))
    assert "removed" not in result  # nothing is ever removed from CollegeMsg
    active = {
        v
        for pair, events in oracle("college").items()
        if any(t1 < t <= t2 for t, _ in events)
        for v in pair
    }
    grew = active & set(g1)  # sent (out-edge counts) or received a message in (t1, t2]
    assert set(result["changed"]) == grew

    followers = new_followers(
        first, second, engine="ray", executor="local", num_partitions=parts
    ).as_dict()
    expected: dict = {}
    for u, v in g2.edges:
        if not g1.has_edge(u, v):
            expected.setdefault(v, []).append(u)
    assert followers == {v: sorted(us) for v, us in expected.items()}


def test_max_in_degree_over_time():
    ts = times("college")
    probes = [ts[len(ts) * k // 4] for k in (1, 2, 3)] + [ts[-1]]
    series = max_in_degree_series([tables("college", t) for t in probes], num_partitions=2)
    for t, point in zip(probes, series, strict=True):
        degrees = dict(nx_graph("college", t).in_degree)
        top = max(degrees.values())
        assert point == {"max": top, "vertices": sorted(v for v, d in degrees.items() if d == top)}
    assert [p["max"] for p in series] == sorted(p["max"] for p in series)


def test_temporal_series_compares_consecutive_snapshots():
    ts = times("college")
    probes = [ts[len(ts) * k // 3] for k in (1, 2)] + [ts[-1]]
    graphs = [tables("college", t) for t in probes]

    def grown(vid, a, b):
        if b is not None and (a is None or len(b["out_edges"]) > len(a["out_edges"])):
            yield "grew", 1

    series = temporal_series(graphs, map_temporal=grown, reduce=lambda k, vs: len(vs))
    assert len(series) == 2
    for (t_a, t_b), result in zip(itertools.pairwise(probes), series, strict=True):
        ga, gb = nx_graph("college", t_a), nx_graph("college", t_b)
        expected = sum(1 for v in gb if v not in ga or gb.out_degree(v) > ga.out_degree(v))
        assert result.pairs == [("grew", expected)]


def test_array_forms_equal_the_per_vertex_forms():
    import numpy as np

    graph = tables("bitcoin")

    def followers(vertices, edges):
        dst = edges["dst"].to_numpy()
        zeros = np.zeros(vertices.num_rows, dtype=np.int64)
        return np.concatenate([vertices["id"].to_numpy(), dst]), np.r_[zeros, np.ones(len(dst))]

    arrays = mapreduce(graph, map_arrays=followers, reduce=np.add, num_partitions=3)
    per_vertex = in_degrees(graph, engine="ray", executor="local", num_partitions=3)
    assert arrays.pairs == per_vertex.pairs

    t1 = times("bitcoin")[len(times("bitcoin")) // 2]
    first = tables("bitcoin", t1)

    def gained(a, b):  # out-edges gained per source, counted as arrays
        return b[1]["src"].to_numpy(), np.ones(b[1].num_rows, dtype=np.int64)

    def gained_views(vid, a, b):
        yield vid, len(b["out_edges"]) if b is not None else 0

    got = temporal_mapreduce(
        first, graph, map_temporal_arrays=gained, reduce=np.add, num_partitions=2
    ).as_dict()
    want = temporal_mapreduce(first, graph, map_temporal=gained_views, num_partitions=2)
    assert got == {k: sum(v) for k, v in want.as_dict().items() if sum(v)}
    with pytest.raises(ValueError, match="ufunc"):
        mapreduce(graph, map_arrays=followers, reduce=lambda k, vs: vs)
