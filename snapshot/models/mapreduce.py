"""Graph MapReduce on snapshots (thesis 9.4.1) and temporal MapReduce (9.5.2).

* ``map_vertex(vertex) -> pairs``: called once per vertex with its view (``id``, ``type``,
  ``clock``, ``time``, state columns, ``out_edges``: ``dst -> properties``);
* ``map_edge(src, edge, dst) -> pairs``: once per edge, with both endpoint views and the
  edge (``src``, ``dst`` and its properties); the edge travels from its source's
  partition to its destination's, where both views meet;
* ``map_temporal(id, first, second) -> pairs``: once per vertex of either of two
  snapshots, with its view in each (``None`` where it does not exist);
* ``reduce(key, values) -> value``: once per key, with every value emitted for it
  (default: the list of values).

The **array form** maps a partition at once: ``map_arrays(vertices, edges) -> (keys,
values)`` gets the partition's vertex rows and out-edges as Arrow tables (a temporal job:
``map_temporal_arrays((vertices, edges), (vertices, edges))``, the same partition of both
snapshots) and returns two numpy arrays; ``reduce`` is then a numpy ufunc (``np.add``,
``np.minimum``, ``np.maximum``) applied per key as an array reduction, and the pairs travel
between partitions as ``(keys, values)`` arrays. No Python runs per vertex or per pair.

``pairs`` is any iterable of ``(key, value)`` (a generator is fine). Pairs are shuffled
to partition ``key_partition(key)`` in one batch per (sender, receiver) pair, reduced
there, and the output is sorted by key (keys must be mutually comparable). Map and reduce
run in parallel, one worker per partition (a Ray actor for a snapshot); a phase starts
when the previous one ended everywhere (a barrier).
"""

from __future__ import annotations

import functools
import heapq
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from snapshot.models.partition import GraphPartition, key_partition, partitions_of, vertex_views
from snapshot.models.result import ModelResult, Progress, progress_reporter
from snapshot.models.runtime import Executor, GraphInput, start_group
from snapshot.tables import rows_to_table
from vertex.annotations import mark_module_api

__all__ = [
    "MapReduceResult",
    "MapReduceWorker",
    "mapreduce",
    "mapreduce_series",
    "snapshots_at",
    "temporal_mapreduce",
    "temporal_series",
]

Pairs = Iterable[tuple[Any, Any]]
Reduce = Callable[[Any, list[Any]], Any]
Arrays = tuple[np.ndarray, np.ndarray]
MapArrays = Callable[[pa.Table, pa.Table], Arrays]


@dataclass(repr=False)
class MapReduceResult(ModelResult):
    """A MapReduce output: ``pairs`` (``(key, value)`` sorted by key, exactly as reduce
    returned them) and ``table`` (columns ``key``, ``value``; values Arrow cannot type
    are JSON text)."""

    pairs: list[tuple[Any, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[Any, Any]:
        """``key -> value``."""
        return dict(self.pairs)


class MapReduceWorker:
    """One partition of a MapReduce job (pure; the Ray actor only wraps it)."""

    def __init__(self, part: GraphPartition) -> None:
        self.index, self.num_parts = part.index, part.num_parts
        self.part = part
        self.staged: GraphPartition | None = None

    @functools.cached_property
    def views(self) -> dict[Any, dict[str, Any]]:
        """The per-vertex views (built only for per-vertex map functions)."""
        return vertex_views(self.part)

    @functools.cached_property
    def second(self) -> dict[Any, dict[str, Any]] | None:
        """The views of the staged partition of a second snapshot, if any."""
        return None if self.staged is None else vertex_views(self.staged)

    def stage(self, part: GraphPartition) -> None:
        """Keep the same partition of a second snapshot (temporal jobs)."""
        self.staged = part

    def _shuffle_arrays(self, keys: np.ndarray, values: np.ndarray) -> tuple[dict, list[Any]]:
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.shape != values.shape:
            raise ValueError(f"map returned {keys.shape} keys but {values.shape} values")
        parts = partitions_of(keys, self.num_parts)
        out = [
            (keys[mine], values[mine]) if (mine := parts == q).any() else None
            for q in range(self.num_parts)
        ]
        return {"emitted": len(keys)}, out

    def map_arrays(self, batches: list[Any], map_arrays: MapArrays) -> Any:
        """Map the whole partition at once; shuffle the ``(keys, values)`` arrays."""
        return self._shuffle_arrays(*map_arrays(self.part.vertices, self.part.edges))

    def map_temporal_arrays(self, batches: list[Any], map_temporal: Callable[..., Arrays]) -> Any:
        """Map the partition of both snapshots at once; shuffle the arrays."""
        second = self.staged
        if second is None:
            raise RuntimeError("a temporal job needs the second snapshot staged")
        first_tables = (self.part.vertices, self.part.edges)
        return self._shuffle_arrays(*map_temporal(first_tables, (second.vertices, second.edges)))

    def reduce_arrays(self, batches: list[Any], reduce: np.ufunc) -> Any:
        """Reduce the arrays received per key with the ufunc ``reduce``; sorted by key."""
        from snapshot.models.pregel_arrays import combine

        pieces = [b for b in batches if b is not None]
        if not pieces:
            return [], [None] * self.num_parts
        keys, values = combine(
            np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]), reduce
        )
        order = np.argsort(keys, kind="stable")
        done = list(zip(keys[order].tolist(), values[order].tolist(), strict=True))
        return done, [None] * self.num_parts

    def _shuffle(self, pairs: Iterable[tuple[Any, Any]]) -> tuple[dict[str, Any], list[Any]]:
        out: list[list[tuple[Any, Any]]] = [[] for _ in range(self.num_parts)]
        n = 0
        for key, value in pairs:
            out[key_partition(key, self.num_parts)].append((key, value))
            n += 1
        return {"emitted": n}, [box or None for box in out]

    def map_vertices(self, batches: list[Any], map_vertex: Callable[[dict], Pairs]) -> Any:
        """Map every vertex; shuffle the pairs by key."""
        return self._shuffle(p for view in self.views.values() for p in map_vertex(view))

    def ship_edges(self, batches: list[Any]) -> Any:
        """Send every out-edge, with its source's view, to its destination's partition."""
        out: list[list[Any]] = [[] for _ in range(self.num_parts)]
        for view in self.views.values():
            for dst, props in view["out_edges"].items():
                edge = {"src": view["id"], "dst": dst, **props}
                out[key_partition(dst, self.num_parts)].append((view, edge))
        return {"shipped": sum(len(b) for b in out)}, [box or None for box in out]

    def map_edges(self, batches: list[Any], map_edge: Callable[..., Pairs]) -> Any:
        """Map every edge received, with its destination's view; shuffle the pairs."""

        def pairs() -> Iterable[tuple[Any, Any]]:
            for batch in batches:
                for src_view, edge in batch or ():
                    yield from map_edge(src_view, edge, self.views.get(edge["dst"]))

        return self._shuffle(pairs())

    def map_temporal(self, batches: list[Any], map_temporal: Callable[..., Pairs]) -> Any:
        """Map every vertex of either snapshot with its two views; shuffle the pairs."""
        first, second = self.views, self.second or {}
        ids = list(first) + [v for v in second if v not in first]
        return self._shuffle(
            p for vid in ids for p in map_temporal(vid, first.get(vid), second.get(vid))
        )

    def reduce(self, batches: list[Any], reduce: Reduce | None) -> Any:
        """Group the pairs received by key and reduce each group; sorted by key."""
        groups: dict[Any, list[Any]] = {}
        for batch in batches:
            for key, value in batch or ():
                groups.setdefault(key, []).append(value)
        keys = sorted(groups)
        done = [(k, groups[k] if reduce is None else reduce(k, groups[k])) for k in keys]
        return done, [None] * self.num_parts


def _run(
    group: Any,
    phases: list[tuple[str, tuple[Any, ...]]],
    reduce: Reduce | None,
    num_partitions: int,
    progress: Progress,
    started: float,
    name: str,
) -> MapReduceResult:
    report = progress_reporter(progress, name, len(phases) + 1)
    steps: list[dict[str, Any]] = []
    reducer = ("reduce_arrays" if isinstance(reduce, np.ufunc) else "reduce", (reduce,))
    try:
        inbox = group.empty_inbox()
        for method, args in [*phases, reducer]:
            t = time.perf_counter()
            summaries, inbox = group.exchange(method, inbox, *args)
            figures: dict[str, Any] = {"step": len(steps), "phase": method}
            if not method.startswith("reduce"):
                for key in summaries[0]:
                    figures[key] = sum(s[key] for s in summaries)
            figures["seconds"] = time.perf_counter() - t
            steps.append(figures)
            report(figures)
    finally:
        report.close()
        group.close()
    pairs = list(heapq.merge(*summaries, key=lambda kv: kv[0]))
    rows = [{"key": k, "value": v} for k, v in pairs]
    table = (
        rows_to_table(rows, ("key",))
        if rows
        else pa.table({"key": pa.array([], pa.int64()), "value": pa.array([], pa.int64())})
    )
    return MapReduceResult(
        table, name, num_partitions, time.perf_counter() - started, steps, {}, pairs
    )


def mapreduce(
    graph: GraphInput,
    *,
    map_vertex: Callable[[dict[str, Any]], Pairs] | None = None,
    map_edge: Callable[[dict[str, Any], dict[str, Any], dict[str, Any] | None], Pairs]
    | None = None,
    map_arrays: MapArrays | None = None,
    reduce: Reduce | np.ufunc | None = None,
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> MapReduceResult:
    """MapReduce over the vertices (``map_vertex``) or the edges (``map_edge``) of
    ``graph`` (a snapshot, or ``(vertices, edges)`` tables), or over whole partitions
    (``map_arrays``, with a ufunc ``reduce``); output sorted by key.

    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3]}), pa.table({"src": [1, 2, 3], "dst": [2, 1, 1]}))
    >>> def degrees(v):  # out-degree histogram
    ...     yield len(v["out_edges"]), 1
    >>> mapreduce(graph, map_vertex=degrees, reduce=lambda k, vs: sum(vs)).pairs
    [(1, 3)]
    >>> def mutual(src, edge, dst):  # edges whose reverse exists
    ...     if src["id"] in dst["out_edges"]:
    ...         yield min(src["id"], dst["id"]), max(src["id"], dst["id"])
    >>> mapreduce(graph, map_edge=mutual, reduce=lambda k, vs: sorted(set(vs))).pairs
    [(1, [2])]
    >>> def followers(vertices, edges):  # the array form: in-degrees
    ...     dst = edges["dst"].to_numpy()
    ...     keys = np.concatenate([vertices["id"].to_numpy(), dst])
    ...     return keys, np.concatenate([np.zeros(vertices.num_rows, int), np.ones(len(dst), int)])
    >>> mapreduce(graph, map_arrays=followers, reduce=np.add, num_partitions=2).pairs
    [(1, 2), (2, 1), (3, 0)]
    """
    given = [f for f in (map_vertex, map_edge, map_arrays) if f is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of map_vertex=, map_edge= and map_arrays=")
    if (map_arrays is not None) != isinstance(reduce, np.ufunc):
        raise ValueError("map_arrays= goes with a numpy ufunc reduce= (and only it)")
    started = time.perf_counter()
    group = start_group(graph, num_partitions, MapReduceWorker, executor=executor)
    if map_vertex is not None:
        phases = [("map_vertices", (map_vertex,))]
    elif map_arrays is not None:
        phases = [("map_arrays", (map_arrays,))]
    else:
        phases = [("ship_edges", ()), ("map_edges", (map_edge,))]
    return _run(group, phases, reduce, num_partitions, progress, started, "mapreduce")


def temporal_mapreduce(
    first: GraphInput,
    second: GraphInput,
    *,
    map_temporal: Callable[[Any, dict[str, Any] | None, dict[str, Any] | None], Pairs]
    | None = None,
    map_temporal_arrays: Callable[[Any, Any], Arrays] | None = None,
    reduce: Reduce | np.ufunc | None = None,
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
) -> MapReduceResult:
    """MapReduce comparing every vertex in two snapshots: ``map_temporal(id, first,
    second)`` with its two views (``None``: new / removed vertex), or, in array form,
    ``map_temporal_arrays(first, second)`` with the same partition of both as ``(vertices,
    edges)`` tables and a ufunc ``reduce``; output sorted by key.

    >>> import pyarrow as pa
    >>> before = (pa.table({"id": [1, 2]}), pa.table({"src": [1], "dst": [2]}))
    >>> after = (pa.table({"id": [2, 3]}), pa.table({"src": [3], "dst": [2]}))
    >>> def status(vid, a, b):
    ...     yield ("new" if a is None else "removed" if b is None else "kept"), vid
    >>> temporal_mapreduce(before, after, map_temporal=status, num_partitions=2).pairs
    [('kept', [2]), ('new', [3]), ('removed', [1])]
    >>> def new_edges(first, second):  # per source, edges gained (array form)
    ...     return second[1]["src"].to_numpy(), np.ones(second[1].num_rows, int)
    >>> temporal_mapreduce(before, after, map_temporal_arrays=new_edges, reduce=np.add).pairs
    [(3, 1)]
    """
    if (map_temporal is None) == (map_temporal_arrays is None):
        raise ValueError("give exactly one of map_temporal= and map_temporal_arrays=")
    if (map_temporal_arrays is not None) != isinstance(reduce, np.ufunc):
        raise ValueError("map_temporal_arrays= goes with a numpy ufunc reduce= (and only it)")
    started = time.perf_counter()
    group = start_group(first, num_partitions, MapReduceWorker, executor=executor)
    group.reload("stage", second)
    if map_temporal_arrays is not None:
        phases = [("map_temporal_arrays", (map_temporal_arrays,))]
    else:
        phases = [("map_temporal", (map_temporal,))]
    return _run(group, phases, reduce, num_partitions, progress, started, "temporal mapreduce")


def mapreduce_series(graphs: Sequence[GraphInput], **kwargs: Any) -> list[MapReduceResult]:
    """The same MapReduce (``kwargs`` of :func:`mapreduce`) on each graph, in order."""
    return [mapreduce(graph, **kwargs) for graph in graphs]


def temporal_series(graphs: Sequence[GraphInput], **kwargs: Any) -> list[MapReduceResult]:
    """:func:`temporal_mapreduce` on every pair of consecutive graphs, in order."""
    return [temporal_mapreduce(a, b, **kwargs) for a, b in zip(graphs, graphs[1:], strict=False)]


def snapshots_at(graph: Any, times: Iterable[float]) -> list[Any]:
    """``graph.snapshot(at=t)`` for every ``t`` (a :class:`chronoray.GraphCluster`)."""
    return [graph.snapshot(at=t) for t in times]


mark_module_api(globals(), public=("mapreduce", "temporal_mapreduce"))
