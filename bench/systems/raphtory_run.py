"""Raphtory: ``load_edges`` (and ``load_nodes``; ``load_edge_deletions`` into a
``PersistentGraph`` when the stream removes edges) from the Parquet input, a view at T,
then ``algorithms.pagerank`` and ``algorithms.weakly_connected_components``."""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc
import raphtory
from raphtory import Graph, PersistentGraph, algorithms

from bench.systems.common import read_input, run


def load(shared: dict[str, Any]) -> None:
    params = shared["params"]
    vertices, edges = read_input(params)
    graph = PersistentGraph() if params.removals else Graph()
    adds = edges.filter(pc.equal(edges["op"], 1))
    graph.load_edges(adds, time="t", src="src", dst="dst")
    if params.removals:
        removes = edges.filter(pc.equal(edges["op"], 0))
        graph.load_edge_deletions(removes, time="t", src="src", dst="dst")
    graph.load_nodes(vertices, time="t", id="id")
    shared["graph"] = graph
    shared["versions"]["raphtory"] = raphtory.__version__


def view(shared: dict[str, Any]) -> None:
    at, graph = shared["params"].at, shared["graph"]
    # an event graph holds every event before the end of its window; a persistent graph
    # at a time holds what is alive then
    shared["view"] = graph.at(at) if isinstance(graph, PersistentGraph) else graph.before(at + 1)
    edges = [(e.src.id, e.dst.id) for e in shared["view"].edges]
    shared["edges"] = ([s for s, _ in edges], [d for _, d in edges])


def pagerank(shared: dict[str, Any]) -> None:
    params = shared["params"]
    # L1 change below tol (networkx's test, scaled the same way: N * tol)
    n = shared["view"].count_nodes()
    state = algorithms.pagerank(
        shared["view"], iter_count=10_000, max_diff=n * params.tol, use_l2_norm=False
    )
    shared["ranks"] = {node.id: value["pagerank_score"] for node, value in state.items()}


def components(shared: dict[str, Any]) -> None:
    state = algorithms.weakly_connected_components(shared["view"])
    shared["components"] = {node.id: value["component_id"] for node, value in state.items()}


if __name__ == "__main__":
    run(
        "raphtory",
        [("load", load), ("view at T", view), ("pagerank", pagerank), ("components", components)],
    )
