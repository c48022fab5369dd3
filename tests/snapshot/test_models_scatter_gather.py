"""Edge-centric scatter/gather (in process): streaming in chunks, selective scatter, and
PageRank / components / BFS on the real data against networkx and against Pregel."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest
from models_data import DATASETS, nx_graph, nx_pagerank, pregel_pagerank, tables

from snapshot.algorithms import component_sets, connected_components, distances, pagerank
from snapshot.algorithms.pagerank import PageRankEdges
from snapshot.algorithms.shortest_paths import PathEdges
from snapshot.models import scatter_gather


class _Recording(PageRankEdges):
    """PageRank that records the size of every chunk it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def scatter(self, chunk):
        self.sizes.append(len(chunk.dst))
        assert isinstance(chunk.batch, pa.RecordBatch)
        return super().scatter(chunk)


def test_edges_are_streamed_in_chunks():
    graph = tables("college")
    program = _Recording()
    result = scatter_gather(graph, program, num_partitions=1, max_iterations=2, chunk_rows=1000)
    assert max(program.sizes) == 1000 and len(program.sizes) == 3 * 21  # 20,296 edges
    assert result.info["streamed_edges"] == 3 * 20296 and not result.info["converged"]


def test_selective_scatter_streams_only_changed_vertices():
    graph = tables("college")
    result = scatter_gather(graph, PathEdges(9), num_partitions=2)
    iterations = result.info["iterations"]
    assert result.info["converged"]
    assert result.info["streamed_edges"] < iterations * 20296 / 2


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("parts", [1, 4])
def test_pagerank_components_bfs_equal_networkx_and_pregel(dataset, parts):
    graph, oracle = tables(dataset), nx_graph(dataset)
    edge = pagerank(graph, model="scatter_gather", num_partitions=parts)
    ranks = edge.to_dict("rank")
    expected = nx_pagerank(dataset)
    assert ranks.keys() == expected.keys()
    assert max(abs(ranks[v] - expected[v]) for v in expected) < 1e-6
    vertex = pregel_pagerank(dataset, parts)
    assert max(abs(ranks[v] - vertex[v]) for v in vertex) < 1e-9
    assert edge.info["converged"]

    labels = connected_components(graph, model="scatter_gather", num_partitions=parts)
    components = [[int(v) for v in c] for c in component_sets(labels)]
    assert components == sorted(sorted(c) for c in nx.weakly_connected_components(oracle))

    source = max(oracle.out_degree, key=lambda pair: pair[1])[0]
    hops = distances(
        scatter_gather(graph, PathEdges(source), num_partitions=parts, max_iterations=10**6)
    )
    assert hops == {
        v: float(d) for v, d in nx.single_source_shortest_path_length(oracle, source).items()
    }


def test_string_ids_and_vertices_without_edges():
    graph = (
        pa.table({"id": ["a", "b", "c", "lonely"]}),
        pa.table({"src": ["a", "b"], "dst": ["b", "c"]}),
    )
    oracle = nx.DiGraph([("a", "b"), ("b", "c")])
    oracle.add_node("lonely")
    expected = nx.pagerank(oracle, tol=1e-12)
    for parts in (1, 3):
        ranks = pagerank(graph, model="scatter_gather", num_partitions=parts).to_dict()
        assert max(abs(ranks[v] - expected[v]) for v in expected) < 1e-9
    with pytest.raises(TypeError, match="integer vertex ids"):
        connected_components(graph, model="scatter_gather")
    assert np.isinf(scatter_gather(graph, PathEdges("a"), num_partitions=2).to_dict()["lonely"])
