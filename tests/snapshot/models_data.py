"""Snapshot tables of the real data sets for the processing-model tests, built once per
session in this process (``LocalRuntime``, no Ray), and their networkx oracles."""

from __future__ import annotations

import functools

import networkx as nx
import pyarrow as pa

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import BitcoinCsvSource, SnapEdgeSource
from chronoray.testing import EdgeOracle, LocalRuntime, edge_oracle
from snapshot.reconstruct import part_rows, rebuild_part
from snapshot.tables import empty_edges, empty_vertices, rows_to_table

DATASETS = ("college", "bitcoin")


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
