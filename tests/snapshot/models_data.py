"""Snapshot tables of the real data sets for the processing-model tests, built once per
session in this process (``LocalRuntime``, no Ray), and their networkx oracles."""

from __future__ import annotations

import functools
from typing import Any

import networkx as nx
import pyarrow as pa

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import BitcoinCsvSource, SnapEdgeSource
from chronoray.testing import EdgeOracle, LocalRuntime, edge_oracle
from snapshot.reconstruct import part_rows, rebuild_part
from snapshot.tables import empty_edges, empty_vertices, rows_to_table

DATASETS = ("college", "bitcoin")

CHAIN = (pa.table({"id": [1, 2, 3, 4]}), pa.table({"src": [1, 2, 3], "dst": [2, 3, 4]}))
"""A 4-vertex chain 1 -> 2 -> 3 -> 4."""


def relay_program(seen: list[tuple[int, list, list]] | None = None) -> Any:
    """An array-form Pregel program on :data:`CHAIN`: vertex 1 starts a token down the
    chain (and sends one message to an unknown vertex, dropped); every vertex halts at once
    and wakes on the token only, so in most supersteps most partitions get no message;
    aggregates of a superstep are read in the next. ``seen``, if given, gets
    ``(superstep, ids, each vertex's sorted messages)`` for every call of ``compute``."""
    import numpy as np

    from snapshot.models import Aggregator, PregelArrays

    def compute(batch):
        if seen is not None:
            ends = np.cumsum(batch.message_counts)
            got = [
                sorted(batch.message_values[e - c : e].tolist())
                for c, e in zip(batch.message_counts, ends, strict=True)
            ]
            seen.append((batch.superstep, batch.ids.tolist(), got))
        if batch.superstep == 0:
            first = batch.ids == 1
            batch.send_to_neighbors(np.full(len(batch), 10), where=first)
            if first.any():
                batch.send(np.array([42]), np.array([7]))  # nobody: dropped
            batch.aggregate("total", batch.ids)
        else:
            assert batch.aggregated("total") == (10 if batch.superstep == 1 else 0)
            batch.send_to_neighbors(batch.message_counts + 10, where=batch.message_counts > 0)
        batch.vote_to_halt()
        return {"heard": batch.state["heard"] + batch.message_counts}

    return PregelArrays(
        compute,
        init=lambda table: {"heard": np.zeros(len(table.ids), dtype=np.int64)},
        aggregators={"total": Aggregator.sum()},
    )


@functools.cache
def runtime(dataset: str) -> LocalRuntime:
    """The whole data set ingested into a 2-shard in-process graph (kept for the session)."""
    rt = LocalRuntime(2, shard_checkpoint_interval=20_000)
    if dataset == "college":
        rt.ingest(SnapEdgeSource(collegemsg_path()).read(), source="college")
    else:
        rt.ingest(BitcoinCsvSource(bitcoinotc_path()).read(), source="bitcoin")
    return rt


@functools.cache
def oracle(dataset: str) -> EdgeOracle:
    if dataset == "college":
        return edge_oracle(collegemsg_path(), "snap")
    return edge_oracle(bitcoinotc_path(), "bitcoin-csv")


def times(dataset: str) -> list[float]:
    return sorted({ts for events in oracle(dataset).values() for ts, _ in events})


@functools.cache
def tables(dataset: str, at: float | None = None) -> tuple[pa.Table, pa.Table]:
    """``(vertices, edges)`` of the snapshot at ``at`` (``None``: the end)."""
    vertex_rows, edge_rows = [], []
    for core in runtime(dataset).cores:
        v, e = part_rows(rebuild_part(core.store, core.shard_id, at=at))
        vertex_rows += v
        edge_rows += e
    vertices = rows_to_table(vertex_rows, ("id",)) if vertex_rows else empty_vertices()
    edges = rows_to_table(edge_rows, ("src", "dst")) if edge_rows else empty_edges()
    return vertices, edges


def nx_graph(dataset: str, at: float | None = None) -> nx.DiGraph:
    """The oracle: distinct ``(src, dst)`` pairs of the file's lines with time ``<= at``."""
    limit = float("inf") if at is None else at
    graph = nx.DiGraph()
    for (src, dst), events in oracle(dataset).items():
        if any(ts <= limit for ts, _ in events):
            graph.add_edge(src, dst)
    return graph


@functools.cache
def nx_pagerank(dataset: str) -> dict:
    return nx.pagerank(nx_graph(dataset), tol=1e-12)


@functools.cache
def pregel_pagerank(dataset: str, parts: int) -> dict:
    """Pregel PageRank of the whole data set (shared by the tests that compare with it):
    the per-vertex form with 1 partition, the array form with more."""
    from snapshot.algorithms import pagerank

    form = "vertex" if parts == 1 else "arrays"
    return pagerank(
        tables(dataset), model="pregel", form=form, num_partitions=parts, executor="local"
    ).to_dict("rank")
