"""Helpers of the fault tests."""

from __future__ import annotations

import time
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


def wait_for(condition, what: str, timeout: float = 120.0) -> None:
    """Poll ``condition`` until it holds; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def wait_answering(graph: Any, timeout: float = 120.0) -> None:
    """Wait until every shard of a Ray graph answers (after a restart)."""
    wait_for(lambda: not graph.status().missing, "every shard to answer", timeout)
