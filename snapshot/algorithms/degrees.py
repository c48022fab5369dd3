"""In- and out-degrees of a snapshot and their distributions (vectorized kernels).

A degree counts distinct neighbours: the in-degree of ``v`` is the number of distinct
vertices with an edge to ``v`` (its followers), the out-degree the number it has edges to,
as ``networkx.DiGraph.in_degree``/``out_degree`` on the graph of distinct pairs. Every
vertex appears, with 0 and 0 if it has no edges.

References: ``networkx.DiGraph.in_degree``, ``networkx.degree_histogram``.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from snapshot.algorithms.csr import GraphIndex
from snapshot.algorithms.engine import EngineChoice
from snapshot.models.result import ModelResult, kernel_result
from snapshot.models.runtime import GraphInput

__all__ = ["degree_distribution", "degrees"]

_KERNEL = EngineChoice("local", "degrees are one pass over the edge columns: always the kernel")


def degrees(graph: GraphInput) -> ModelResult:
    """Columns ``id``, ``in_degree``, ``out_degree``.

    >>> graph = (pa.table({"id": [4]}), pa.table({"src": [1, 1, 2, 1], "dst": [2, 3, 3, 2]}))
    >>> degrees(graph).table.to_pylist()[0], degrees(graph).table["in_degree"].to_pylist()
    ({'id': 1, 'in_degree': 0, 'out_degree': 2}, [0, 1, 2, 0])
    """
    started = time.perf_counter()
    index = GraphIndex.of(graph)
    table = index.table(in_degree=index.in_degree(), out_degree=index.out_degree())
    return kernel_result(table, started, _KERNEL.info())


def degree_distribution(graph: GraphInput) -> ModelResult:
    """How many vertices have each degree: columns ``degree``, ``in_vertices``,
    ``out_vertices`` (every degree that occurs in either direction, ascending).

    >>> graph = (pa.table({"id": [4]}), pa.table({"src": [1, 1, 2], "dst": [2, 3, 3]}))
    >>> degree_distribution(graph).table.to_pydict()
    {'degree': [0, 1, 2], 'in_vertices': [2, 1, 1], 'out_vertices': [2, 1, 1]}
    """
    started = time.perf_counter()
    index = GraphIndex.of(graph)
    inward = np.bincount(index.in_degree(), minlength=1)
    outward = np.bincount(index.out_degree(), minlength=1)
    size = max(len(inward), len(outward))
    inward, outward = (
        np.pad(inward, (0, size - len(inward))),
        np.pad(outward, (0, size - len(outward))),
    )
    present = (inward > 0) | (outward > 0)
    table = pa.table(
        {
            "degree": np.flatnonzero(present),
            "in_vertices": inward[present],
            "out_vertices": outward[present],
        }
    )
    return kernel_result(table, started, _KERNEL.info())
