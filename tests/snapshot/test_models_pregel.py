"""Pregel on snapshots (in process): superstep semantics on tiny graphs, and PageRank,
weakly connected components and BFS on CollegeMsg / Bitcoin OTC against networkx."""

from __future__ import annotations

import networkx as nx
import pyarrow as pa
import pytest
from models_data import (
    CHAIN,
    DATASETS,
    nx_graph,
    nx_pagerank,
    pregel_pagerank,
    relay_program,
    tables,
)

from snapshot.algorithms import (
    component_sets,
    connected_components,
    distances,
    pagerank,
    shortest_paths,
)
from snapshot.models import Aggregator, PregelJob, PregelProgram, pregel


@pytest.mark.parametrize("parts", [1, 3])
def test_messages_arrive_next_superstep_and_halted_vertices_wake_on_messages(parts):
    seen: list[tuple[int, int, list]] = []

    def compute(ctx, messages, state):
        seen.append((ctx.superstep, ctx.vertex_id, sorted(messages)))
        if ctx.superstep == 0 and ctx.vertex_id == 1:
            ctx.send_to_neighbors("token")
        elif messages:
            ctx.send_to_neighbors("token")
        ctx.vote_to_halt()
        return (state or 0) + len(messages)

    result = pregel(CHAIN, PregelProgram(compute, init=lambda v: None), num_partitions=parts)
    # superstep 0: everyone; then only the vertex the token reached
    assert sorted(s for s in seen if s[0] == 0) == [(0, v, []) for v in (1, 2, 3, 4)]
    assert sorted(s for s in seen if s[0] > 0) == [
        (1, 2, ["token"]),
        (2, 3, ["token"]),
        (3, 4, ["token"]),
    ]
    assert result.to_dict() == {1: 0, 2: 1, 3: 1, 4: 1}
    assert result.info["supersteps"] == 4 and result.info["finished"]
    assert [s["messages"] for s in result.steps] == [1, 1, 1, 0]


def test_combiner_aggregators_counts_and_superstep_limit():
    star = (pa.table({"id": [0, 1, 2, 3]}), pa.table({"src": [1, 2, 3], "dst": [0, 0, 0]}))
    got = {}

    def compute(ctx, messages, state):
        if ctx.superstep == 0:
            ctx.send_to_neighbors(ctx.vertex_id)
            ctx.aggregate("total", ctx.vertex_id)
        else:
            got[(ctx.superstep, ctx.vertex_id)] = (
                list(messages),
                ctx.aggregated("total"),
                ctx.num_vertices,
                ctx.num_edges,
            )
        return state

    program = PregelProgram(
        compute,
        combiner=lambda a, b: a + b,
        aggregators={"total": Aggregator.sum()},
        max_supersteps=3,
    )
    for parts in (1, 2):
        got.clear()
        result = pregel(star, program, num_partitions=parts)
        assert got[(1, 0)] == ([6], 6, 4, 3)  # combined into one message
        assert got[(2, 0)] == ([], 0, 4, 3)  # nothing aggregated in superstep 1
        assert result.info["supersteps"] == 3 and result.info["finished"]  # the limit


def test_topology_changes_take_effect_next_superstep():
    log = []

    def compute(ctx, messages, state):
        log.append((ctx.superstep, ctx.vertex_id, sorted(ctx.out_edges), sorted(messages)))
        if ctx.superstep == 0 and ctx.vertex_id == 1:
            ctx.add_edge(3)
            ctx.remove_edge(2)
            ctx.add_vertex(9, "new")
            ctx.send(9, "hello")  # 9 exists when this arrives
            ctx.send(42, "lost")  # 42 never exists: dropped
            assert sorted(ctx.out_edges) == [2]  # unchanged within the superstep
        if ctx.superstep == 1 and ctx.vertex_id == 1:
            ctx.send_to_neighbors("via new edge")
        if ctx.superstep == 1 and ctx.vertex_id == 4:
            ctx.remove_vertex()
        if ctx.superstep > 0:
            ctx.vote_to_halt()
        return state

    for parts in (1, 2):
        log.clear()
        result = pregel(CHAIN, PregelProgram(compute), num_partitions=parts)
        assert (1, 1, [3], []) in log
        assert (1, 9, [], ["hello"]) in log
        assert (2, 3, [4], ["via new edge"]) in log
        assert result.steps[1]["dropped"] == 1
        assert sorted(result.to_dict()) == [1, 2, 3, 9]  # 4 removed itself


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("parts", [1, 4])
def test_pagerank_components_bfs_equal_networkx(dataset, parts):
    """Both program forms: per-vertex with 1 partition, arrays with 4."""
    form = "vertex" if parts == 1 else "arrays"
    graph, oracle = tables(dataset), nx_graph(dataset)
    ranks, expected = pregel_pagerank(dataset, parts), nx_pagerank(dataset)
    assert ranks.keys() == expected.keys()
    assert max(abs(ranks[v] - expected[v]) for v in expected) < 1e-6
    assert abs(sum(ranks.values()) - 1) < 1e-9

    components = component_sets(
        connected_components(graph, model="pregel", form=form, num_partitions=parts)
    )
    assert components == sorted(sorted(c) for c in nx.weakly_connected_components(oracle))

    source = max(oracle.out_degree, key=lambda pair: pair[1])[0]
    hops = distances(shortest_paths(graph, source, model="pregel", form=form, num_partitions=parts))
    assert hops == nx.single_source_shortest_path_length(oracle, source)


def test_weighted_shortest_paths_equal_dijkstra():
    graph = tables("college")
    weighted = nx.DiGraph()
    edges = graph[1].select(["src", "dst", "count"]).to_pylist()
    weighted.add_weighted_edges_from((e["src"], e["dst"], e["count"]) for e in edges)
    got = distances(shortest_paths(graph, 9, weight="count", model="pregel", num_partitions=4))
    assert got == nx.single_source_dijkstra_path_length(weighted, 9)


def test_pause_without_shift_resumes_where_it_stopped(tmp_path):
    from snapshot.algorithms.pagerank import pagerank_program

    graph = tables("college")
    with PregelJob(graph, pagerank_program(), num_partitions=2) as job:
        paused = job.run(supersteps=5)
        assert not paused.info["finished"] and paused.info["supersteps"] == 5
        done = job.run()
    fresh = pagerank(graph, model="pregel", form="vertex", num_partitions=2)
    assert done.info["supersteps"] == fresh.info["supersteps"]
    assert done.to_dict("rank") == fresh.to_dict("rank")
    path = done.save_parquet(tmp_path / "ranks.parquet")
    assert pa.parquet.read_table(path).num_rows == 1899
    assert list(done.to_pandas().columns) == ["id", "rank"]


@pytest.mark.parametrize("parts", [1, 4])
def test_clustering_equals_networkx_on_the_undirected_simple_graph(parts):
    from snapshot.algorithms.clustering import clustering

    undirected = nx.Graph(nx_graph("college"))
    undirected.remove_edges_from(nx.selfloop_edges(undirected))
    expected = nx.clustering(undirected)
    got = clustering(tables("college"), model="pregel", num_partitions=parts).to_dict("clustering")
    assert got.keys() == expected.keys()
    assert max(abs(got[v] - expected[v]) for v in expected) < 1e-12


def test_array_form_supersteps_messages_and_aggregates():
    """The array form keeps Pregel's guarantees: messages arrive in the next superstep
    (grouped by vertex without a combiner), halted vertices wake on a message,
    aggregates of a superstep are read in the next, unknown targets are dropped."""
    seen: list[tuple[int, list, list]] = []
    program = relay_program(seen)
    for parts in (1, 3):
        seen.clear()
        result = pregel(CHAIN, program, num_partitions=parts, window=3)
        later = sorted(
            (step, vid, msgs)
            for step, ids, got in seen
            if step > 0
            for vid, msgs in zip(ids, got, strict=True)
        )
        assert later == [(1, 2, [10]), (2, 3, [11]), (3, 4, [11])]
        assert result.to_dict() == {1: 0, 2: 1, 3: 1, 4: 1}
        assert result.info["supersteps"] == 4 and result.info["finished"]
        assert [s["messages"] for s in result.steps] == [2, 1, 1, 0]
        assert result.steps[1]["dropped"] == 1


def test_both_program_forms_agree():
    graph = tables("college")
    arrays = pagerank(graph, model="pregel", num_partitions=3)
    vertex = pagerank(graph, model="pregel", form="vertex", num_partitions=3)
    assert arrays.info["supersteps"] == vertex.info["supersteps"]
    assert [s["messages"] for s in arrays.steps] == [s["messages"] for s in vertex.steps]
    a, v = arrays.to_dict("rank"), vertex.to_dict("rank")
    assert a.keys() == v.keys() and max(abs(a[k] - v[k]) for k in v) < 1e-12


def test_array_form_sends_to_any_vertex_combined():
    import numpy as np

    from snapshot.models import PregelArrays

    star = (pa.table({"id": [0, 1, 2, 3, 4]}), pa.table({"src": [1], "dst": [2]}))

    def compute(batch):
        if batch.superstep == 0:
            batch.send(np.zeros(len(batch), dtype=np.int64), batch.ids * 10)  # all to 0
            return {"got": batch.state["got"]}
        batch.vote_to_halt()
        return {"got": np.where(batch.has_messages, batch.messages, -1)}

    for combiner, expected in ((np.add, 100), (np.maximum, 40)):
        program = PregelArrays(
            compute,
            init=lambda t: {"got": np.zeros(len(t.ids), dtype=np.int64)},
            combiner=combiner,
        )
        for parts in (1, 3):
            assert pregel(star, program, num_partitions=parts).to_dict()[0] == expected


@pytest.mark.parametrize("dataset", ["college", "bitcoin"])
def test_fused_pagerank_step_equals_the_generic_path(dataset):
    """The built-in array PageRank runs fused (``PageRankStep``); without it the same
    program runs the generic path: per superstep the same messages, active vertices and
    drops, the same aggregates and supersteps, and the same ranks bit for bit; paused and
    resumed (the fused buffers kept across runs) it still ends where one run ends."""
    import dataclasses

    from snapshot.algorithms.pagerank import pagerank_arrays
    from snapshot.models.pregel_fused import PageRankStep

    graph = tables(dataset)
    fused = pagerank_arrays(0.85, 1e-10, 200)
    assert isinstance(fused.fused, PageRankStep)
    generic = dataclasses.replace(fused, fused=None)
    for parts in (1, 2, 3):
        a = pregel(graph, fused, num_partitions=parts)
        b = pregel(graph, generic, num_partitions=parts)
        assert a.info["supersteps"] == b.info["supersteps"] and a.info["finished"]
        for key in ("messages", "active", "dropped"):
            assert [s[key] for s in a.steps] == [s[key] for s in b.steps]
        assert a.info["aggregates"] == b.info["aggregates"]
        assert a.to_dict("rank") == b.to_dict("rank")
    whole = pregel(graph, generic, num_partitions=2)
    with PregelJob(graph, fused, num_partitions=2) as job:
        assert not job.run(supersteps=5).info["finished"]
        resumed = job.run()
    assert resumed.info["supersteps"] == whole.info["supersteps"]
    assert resumed.to_dict("rank") == whole.to_dict("rank")


def test_fused_pagerank_step_falls_back_where_it_does_not_apply():
    """Empty partitions (7 for 6 vertices: those run the generic path), dangling vertices
    and an edge to a vertex missing from the vertex table: the fused program still
    equals the generic path."""
    import dataclasses

    from snapshot.algorithms.pagerank import pagerank_arrays

    graph = (
        pa.table({"id": [1, 2, 3, 4, 5]}),
        pa.table({"src": [1, 2, 3, 1, 3], "dst": [2, 3, 1, 4, 99]}),
    )
    fused = pagerank_arrays(0.85, 1e-10, 200)
    generic = dataclasses.replace(fused, fused=None)
    for parts in (1, 2, 7):
        a = pregel(graph, fused, num_partitions=parts)
        b = pregel(graph, generic, num_partitions=parts)
        assert [s["dropped"] for s in a.steps] == [s["dropped"] for s in b.steps]
        assert [s["messages"] for s in a.steps] == [s["messages"] for s in b.steps]
        assert a.to_dict("rank") == b.to_dict("rank")
