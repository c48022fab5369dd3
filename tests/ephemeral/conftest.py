"""Shared pieces of the live-computation tests: the data sets as update lists, and the
networkx oracles the live results must equal."""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx
import pytest

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import BitcoinCsvSource, SnapEdgeSource
from vertex import Update


@pytest.fixture(scope="session")
def college_updates() -> list[Update]:
    return list(SnapEdgeSource(collegemsg_path()).read())


@pytest.fixture(scope="session")
def bitcoin_updates() -> list[Update]:
    return list(BitcoinCsvSource(bitcoinotc_path()).read())


def graph_of(updates: list[Update]) -> nx.DiGraph:
    """The directed graph of distinct (src, dst) pairs of ``updates``."""
    return nx.DiGraph([(u.vertex, u.dst) for u in updates])


def check_histogram(result: dict[str, dict[int, int]], g: nx.DiGraph) -> None:
    assert result["out"] == dict(sorted(Counter(d for _, d in g.out_degree()).items()))
    assert result["in"] == dict(sorted(Counter(d for _, d in g.in_degree()).items()))


def check_bfs(values: dict[Any, int], g: nx.DiGraph, source: Any) -> None:
    assert values == dict(nx.single_source_shortest_path_length(g, source))


def check_wcc(values: dict[Any, Any], g: nx.DiGraph) -> None:
    groups: dict[Any, set[Any]] = {}
    for vertex, label in values.items():
        groups.setdefault(label, set()).add(vertex)
    expected = {frozenset(c) for c in nx.weakly_connected_components(g)}
    assert {frozenset(c) for c in groups.values()} == expected
    assert all(label == min(c) for label, c in groups.items())


def check_pagerank(values: dict[Any, float], g: nx.DiGraph, bound: float) -> float:
    """Compare with networkx run to convergence; returns the L1 distance."""
    exact = nx.pagerank(g, alpha=0.85, tol=1e-12)
    assert values.keys() == exact.keys()
    l1 = sum(abs(values[v] - p) for v, p in exact.items())
    assert l1 <= bound, (l1, bound)
    return l1
