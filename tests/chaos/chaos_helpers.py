"""Helpers of the fault tests."""

from __future__ import annotations

from typing import Any


def expected_counts(updates) -> dict[tuple[int, int], int]:
    """Occurrences per (src, dst) pair of ``updates``."""
    counts: dict[tuple[int, int], int] = {}
    for u in updates:
        counts[(u.vertex, u.dst)] = counts.get((u.vertex, u.dst), 0) + 1
    return counts


def edge_counts(graph: Any) -> dict[tuple[int, int], int]:
    """``(src, dst) -> count`` of a graph on either runtime."""
    edges = graph.edges()
    if isinstance(edges, dict):  # LocalRuntime
        return {pair: props["count"] for pair, props in edges.items()}
    return {(src, dst): props["count"] for src, dst, props in edges}
