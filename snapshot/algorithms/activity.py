"""Activity per time bucket from a series of time cuts (a vectorized kernel over each
cut's Arrow columns; the same definition as ``spark_bridge.activity``).

For time cuts ``t[0] < t[1] < ...``, the row of ``t[i]`` describes the graph at ``t[i]``
(``vertices``: every vertex and edge endpoint; ``edges``: distinct pairs; ``messages``:
edge occurrences, the sum of the default vertex class's ``count``) and the bucket
``(t[i-1], t[i]]`` (the first bucket holds everything up to ``t[0]``): ``new_vertices``,
``new_edges``, ``bucket_messages`` (occurrences inside it), ``active_edges`` (pairs whose
``last_ts`` falls inside it) and ``active_vertices`` (their endpoints).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from snapshot.algorithms.csr import GraphIndex, graph_tables
from snapshot.algorithms.engine import EngineChoice
from snapshot.models.result import ModelResult, kernel_result

__all__ = ["activity"]

_KERNEL = EngineChoice("local", "activity is a few sums per cut: always the kernel")


def _cut(item: Any) -> tuple[float, Any]:
    if isinstance(item, tuple):
        return float(item[0]), item[1]
    if item.meta.kind != "time":
        raise ValueError(f"activity needs time cuts (snapshot(at=T)), got {item!r}")
    return float(item.meta.at), item


def activity(snapshots: Sequence[Any]) -> ModelResult:
    """One row per cut (see the module docstring); ``snapshots`` are time cuts
    (:class:`~snapshot.Snapshot` taken with ``at=``) or ``(t, (vertices, edges))`` pairs,
    in increasing time order. Edges need the ``count`` and ``last_ts`` columns.

    >>> v = pa.table({"id": [1, 2]})
    >>> e1 = pa.table({"src": [1], "dst": [2], "count": [1], "last_ts": [10.0]})
    >>> e2 = pa.table({"src": [1, 2], "dst": [2, 3], "count": [3, 1], "last_ts": [25.0, 30.0]})
    >>> rows = activity([(10.0, (v, e1)), (30.0, (v, e2))]).table.to_pylist()
    >>> [(r["time"], r["new_edges"], r["bucket_messages"], r["active_edges"],
    ...   r["active_vertices"]) for r in rows]
    [(10.0, 1, 1, 1, 2), (30.0, 1, 3, 2, 3)]
    """
    started = time.perf_counter()
    cuts = [_cut(item) for item in snapshots]
    times = [t for t, _ in cuts]
    if times != sorted(times) or len(set(times)) != len(times):
        raise ValueError(f"snapshots must be time cuts in increasing time order, got {times}")
    columns: dict[str, list[Any]] = {
        k: [] for k in ("vertices", "edges", "messages", "active_edges", "active_vertices")
    }
    previous = -math.inf
    for t, graph in cuts:
        vertices, edges = graph_tables(graph)
        missing = [c for c in ("count", "last_ts") if c not in edges.column_names]
        if missing:
            raise ValueError(f"activity needs edge columns count and last_ts; missing {missing}")
        index = GraphIndex.of_tables(vertices, edges)
        active = pc.greater(edges["last_ts"], previous).to_numpy(zero_copy_only=False)
        active = np.asarray(active, dtype=bool)
        touched = np.zeros(index.n, dtype=bool)
        rows_active = active[index.rows]
        touched[index.src[rows_active]] = True
        touched[index.dst[rows_active]] = True
        columns["vertices"].append(index.n)
        columns["edges"].append(edges.num_rows)
        columns["messages"].append(int(pc.sum(edges["count"]).as_py() or 0))
        columns["active_edges"].append(int(active.sum()))
        columns["active_vertices"].append(int(touched.sum()))
        previous = t
    totals = {k: np.asarray(v, dtype=np.int64) for k, v in columns.items()}
    table = pa.table(
        {
            "time": pa.array(times, pa.float64()),
            "vertices": totals["vertices"],
            "edges": totals["edges"],
            "messages": totals["messages"],
            "new_vertices": np.diff(totals["vertices"], prepend=0),
            "new_edges": np.diff(totals["edges"], prepend=0),
            "bucket_messages": np.diff(totals["messages"], prepend=0),
            "active_edges": totals["active_edges"],
            "active_vertices": totals["active_vertices"],
        }
    )
    return kernel_result(table, started, _KERNEL.info())
