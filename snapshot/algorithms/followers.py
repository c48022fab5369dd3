"""Follower counts on snapshots (thesis 9.4.1, 9.5.2): in-degree per vertex, the
follower (in-degree) histogram, the maximum in-degree over a series of snapshots, and the
new followers of every vertex between two snapshots -- as vectorized kernels
(``engine="local"``, :mod:`.degrees`, an Arrow anti-join) or as MapReduce jobs (the
models' examples, ``engine="ray"``); ``"auto"`` chooses by size (:mod:`.engine`).

A *follower* of ``v`` is a distinct vertex with an edge to ``v`` in the snapshot (edges
are read on their source's side, which a vertex always knows: thesis 9.5.2). Every
vertex of the snapshot appears, with in-degree 0 if nobody follows it.

References: thesis Listings 9.12 (a histogram by MapReduce), 9.18 (max follower count
over time) and 9.20 (new followers).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from snapshot.algorithms.csr import GraphIndex, graph_tables
from snapshot.algorithms.engine import Engine, EngineChoice, choose_engine
from snapshot.models.mapreduce import MapReduceResult, mapreduce, temporal_mapreduce
from snapshot.models.replay import replay
from snapshot.models.result import ModelResult
from snapshot.models.runtime import Executor, GraphInput
from snapshot.tables import empty_edges

__all__ = [
    "follower_histogram",
    "in_degrees",
    "max_followers_replay",
    "max_in_degree_series",
    "new_followers",
]


def _follows(vertex: dict[str, Any]) -> Iterable[tuple[Any, int]]:
    yield vertex["id"], 0
    for dst in vertex["out_edges"]:
        yield dst, 1


def _sum(key: Any, values: list[int]) -> int:
    return sum(values)


def _kernel_pairs(
    keys: pa.Array | np.ndarray, values: Any, started: float, choice: EngineChoice
) -> MapReduceResult:
    """A kernel's output in the shape of a MapReduce result (``key``, ``value``)."""
    table = pa.table({"key": keys, "value": values})
    pairs = list(zip(table["key"].to_pylist(), table["value"].to_pylist(), strict=True))
    return MapReduceResult(
        table, "kernel", 1, time.perf_counter() - started, [], choice.info(), pairs
    )


def in_degrees(
    graph: GraphInput,
    *,
    engine: Engine = "auto",
    num_partitions: int = 4,
    executor: Executor = "auto",
) -> MapReduceResult:
    """``vertex -> number of followers`` (the kernel, or one MapReduce over the vertices
    with ``engine="ray"``).

    >>> graph = (pa.table({"id": [1, 2, 3]}), pa.table({"src": [1, 3], "dst": [2, 2]}))
    >>> in_degrees(graph).pairs == in_degrees(graph, engine="ray", executor="local").pairs
    True
    >>> in_degrees(graph).pairs
    [(1, 0), (2, 2), (3, 0)]
    """
    choice = choose_engine(graph, engine)
    if choice.engine == "local":
        started = time.perf_counter()
        index = GraphIndex.of(graph)
        return _kernel_pairs(index.ids, index.in_degree(), started, choice)
    result = mapreduce(
        graph, map_vertex=_follows, reduce=_sum, num_partitions=num_partitions,
        executor=choice.executor(executor),
    )  # fmt: skip
    result.info.update(choice.info())
    return result


def follower_histogram(
    graph: GraphInput,
    *,
    engine: Engine = "auto",
    num_partitions: int = 4,
    executor: Executor = "auto",
) -> MapReduceResult:
    """``in-degree -> number of vertices with it``: the kernel, or two chained MapReduces
    (followers per vertex, then a count per follower count), both on the same partitions.

    >>> graph = (pa.table({"id": [1, 2, 3]}), pa.table({"src": [1, 3], "dst": [2, 2]}))
    >>> follower_histogram(graph).pairs
    [(0, 2), (2, 1)]
    >>> follower_histogram(graph, engine="ray", executor="local", num_partitions=2).pairs
    [(0, 2), (2, 1)]
    """
    choice = choose_engine(graph, engine)
    if choice.engine == "local":
        started = time.perf_counter()
        counts = np.bincount(GraphIndex.of(graph).in_degree(), minlength=1)
        present = np.flatnonzero(counts)
        return _kernel_pairs(present, counts[present], started, choice)
    executor = choice.executor(executor)
    degrees = in_degrees(graph, engine="ray", num_partitions=num_partitions, executor=executor)
    table = pa.table({"id": degrees.table["key"], "degree": degrees.table["value"]})
    on_ray = executor == "ray" or (executor == "auto" and not isinstance(graph, tuple))
    return mapreduce(
        (table, empty_edges()),
        map_vertex=lambda v: [(v["degree"], 1)],
        reduce=_sum,
        num_partitions=num_partitions,
        executor="ray" if on_ray else "local",
    )


def max_in_degree_series(
    graphs: Sequence[GraphInput],
    *,
    engine: Engine = "auto",
    num_partitions: int = 4,
    executor: Executor = "auto",
) -> list[dict[str, Any]]:
    """For every snapshot in order: ``{"max": largest in-degree, "vertices": [the ids
    that have it]}`` (a series over a list of times, one :func:`in_degrees` each).

    >>> before = (pa.table({"id": [1, 2]}), pa.table({"src": [1], "dst": [2]}))
    >>> after = (pa.table({"id": [1, 2, 3]}), pa.table({"src": [1, 3, 2], "dst": [2, 2, 1]}))
    >>> max_in_degree_series([before, after], num_partitions=2)
    [{'max': 1, 'vertices': [2]}, {'max': 2, 'vertices': [2]}]
    """
    series = []
    for graph in graphs:
        degrees = in_degrees(
            graph, engine=engine, num_partitions=num_partitions, executor=executor
        ).pairs
        top = max((d for _, d in degrees), default=0)
        series.append({"max": top, "vertices": [v for v, d in degrees if d == top]})
    return series


def _new_follows(
    vid: Any, first: dict[str, Any] | None, second: dict[str, Any] | None
) -> Iterable[tuple[Any, Any]]:
    if second is None:
        return
    before = first["out_edges"] if first is not None else {}
    for dst in second["out_edges"]:
        if dst not in before:
            yield dst, vid


def new_followers(
    first: GraphInput,
    second: GraphInput,
    *,
    engine: Engine = "auto",
    num_partitions: int = 4,
    executor: Executor = "auto",
) -> MapReduceResult:
    """``vertex -> sorted new followers``: the vertices with an edge to it in ``second``
    and none in ``first`` (vertices with none are left out): an Arrow anti-join of the
    two edge tables (the kernel), or one temporal MapReduce.

    >>> before = (pa.table({"id": [1, 2]}), pa.table({"src": [1], "dst": [2]}))
    >>> after = (pa.table({"id": [1, 2, 3]}), pa.table({"src": [1, 3, 2], "dst": [2, 2, 1]}))
    >>> new_followers(before, after).pairs
    [(1, [2]), (2, [3])]
    >>> new_followers(before, after, engine="ray", executor="local", num_partitions=2).pairs
    [(1, [2]), (2, [3])]
    """
    choice = choose_engine(second, engine)
    if choice.engine == "local":
        started = time.perf_counter()
        old, new = (graph_tables(g)[1].select(["src", "dst"]) for g in (first, second))
        added = (
            new.group_by(["src", "dst"])
            .aggregate([])
            .join(old, ["src", "dst"], join_type="left anti")
        )
        added = added.sort_by([("dst", "ascending"), ("src", "ascending")])
        grouped = added.group_by("dst", use_threads=False).aggregate([("src", "list")])
        grouped = grouped.take(pc.sort_indices(grouped["dst"]))
        return _kernel_pairs(grouped["dst"], grouped["src_list"], started, choice)
    result = temporal_mapreduce(
        first,
        second,
        map_temporal=_new_follows,
        reduce=lambda key, values: sorted(values),
        num_partitions=num_partitions,
        executor=choice.executor(executor),
    )
    result.info.update(choice.info())
    return result


def _most_followers(result: int, command: dict[str, Any], state: dict[str, Any]) -> int:
    return max(result, len(state["in_edges"]))


def max_followers_replay(
    graph: Any,
    vertices: Iterable[Any] | None = None,
    t0: float | None = None,
    t1: float | None = None,
) -> ModelResult:
    """The largest follower count every vertex (or each of ``vertices``) had at any
    moment in ``[t0, t1]``, by log replay over its history (thesis Listing 9.18): one
    row per vertex that executed in the interval (``id``, ``result``). Followers are the
    vertex's own in-edge records, so they count an edge from the moment (event time)
    the target learnt of it, which may be later than the source's edge (DESIGN 2). ``graph``: a
    :class:`chronoray.GraphCluster` or a :class:`chronoray.testing.LocalRuntime`.

    >>> from chronoray.testing import LocalRuntime
    >>> from vertex import Update
    >>> rt = LocalRuntime(2)
    >>> rt.ingest([Update.add_edge(1, 2, 10), Update.add_edge(3, 2, 20)])
    >>> max_followers_replay(rt, [2]).to_dict(), max_followers_replay(rt, [2], t1=15).to_dict()
    ({2: 2}, {2: 1})
    >>> rt.close()
    """
    return replay(graph, _most_followers, 0, t0, t1, vertices=vertices)
