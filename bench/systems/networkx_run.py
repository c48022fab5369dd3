"""networkx: the graph at T as a ``DiGraph`` built from the Parquet input, then
``networkx.pagerank`` and ``networkx.weakly_connected_components``."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pyarrow.compute as pc

from bench.systems.common import alive_pairs, read_input, run


def load(shared: dict[str, Any]) -> None:
    shared["vertices"], shared["edges_in"] = read_input(shared["params"])
    shared["versions"]["networkx"] = nx.__version__


def view(shared: dict[str, Any]) -> None:
    params, vertices = shared["params"], shared["vertices"]
    graph = nx.DiGraph()
    graph.add_nodes_from(vertices.filter(pc.less_equal(vertices["t"], params.at))["id"].to_pylist())
    srcs, dsts = alive_pairs(shared["edges_in"], params.at)
    graph.add_edges_from(zip(srcs, dsts, strict=True))
    shared["graph"], shared["edges"] = graph, (srcs, dsts)


def pagerank(shared: dict[str, Any]) -> None:
    graph = shared["graph"]
    # networkx stops at L1 change < N * tol: the runner's tol is per vertex
    shared["ranks"] = nx.pagerank(graph, tol=shared["params"].tol, max_iter=10_000)


def components(shared: dict[str, Any]) -> None:
    shared["components"] = {
        v: k for k, part in enumerate(nx.weakly_connected_components(shared["graph"])) for v in part
    }


if __name__ == "__main__":
    run(
        "networkx",
        [("load", load), ("view at T", view), ("pagerank", pagerank), ("components", components)],
    )
