"""Edge-centric scatter/gather (X-Stream) on a snapshot.

The vertices are split into ``P`` *streaming partitions* (by the stable hash of the id);
each holds its vertices' values (a numpy array) and its vertices' out-edges (an Arrow
table, also the in-edges turned around when the program is undirected). One iteration:

1. **scatter** -- every partition streams its edges in record batches of ``chunk_rows``
   rows and calls ``program.scatter`` on each batch, which returns one update value per
   edge for its destination; updates are combined per destination with
   ``program.reduce`` (a numpy ufunc such as ``np.add`` or ``np.minimum``) and buffered
   per destination partition;
2. **shuffle** -- each partition's buffer for partition ``q`` is one ``(ids, values)``
   pair of numpy arrays, moved to ``q`` through the object store;
3. **gather** -- every partition folds the updates it received into one value per
   vertex and ``program.apply`` computes the new values.

The driver stops when no vertex value changed by more than ``tol`` (``0``: not at all) in
an iteration, or after ``max_iterations``. Guarantees: an iteration's scatter sees the
values of the previous iteration only (synchronous); with ``selective`` programs only the
edges of vertices whose value changed in the previous iteration send updates (every
edge in the first iteration). Edges are never held as one Python list: a partition
iterates over Arrow record batches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from snapshot.models.partition import GraphPartition
from snapshot.models.result import ModelResult, Progress, progress_reporter
from snapshot.models.runtime import Executor, GraphInput, start_group
from vertex.annotations import mark_module_api

__all__ = [
    "EdgeChunk",
    "EdgeProgram",
    "ScatterGatherWorker",
    "VertexBlock",
    "scatter_gather",
]


@dataclass
class VertexBlock:
    """A partition's vertices: ``ids`` (numpy), their snapshot rows, ``out_degree``
    (distinct out-edges, not counting turned-around ones) and the graph's vertex count."""

    ids: np.ndarray
    vertices: pa.Table
    out_degree: np.ndarray
    num_vertices: int


@dataclass
class EdgeChunk:
    """One streamed batch of edges: ``src_index`` (positions of the sources in the
    partition's :class:`VertexBlock`), ``src_value``, ``src_out_degree``, ``dst`` ids
    and the Arrow ``batch`` itself (edge properties)."""

    src_index: np.ndarray
    src_value: np.ndarray
    src_out_degree: np.ndarray
    dst: np.ndarray
    batch: pa.RecordBatch


class EdgeProgram(Protocol):
    """An edge-centric program (all methods vectorised over numpy arrays).

    ``reduce``: how updates to one vertex combine; its identity is ``identity``.
    ``undirected``: edges are streamed in both directions. ``selective``: only edges of
    vertices changed in the previous iteration scatter. ``name``: the value column.
    """

    name: str
    reduce: np.ufunc
    identity: float
    undirected: bool
    selective: bool

    def init(self, block: VertexBlock) -> np.ndarray:
        """The first value of every vertex of the block (float64)."""
        ...

    def aggregate(self, block: VertexBlock, values: np.ndarray) -> dict[str, float]:
        """Per-partition sums the next ``apply`` gets (summed over all partitions)."""
        ...

    def scatter(self, chunk: EdgeChunk) -> np.ndarray:
        """One update value per edge of ``chunk``, for its destination."""
        ...

    def apply(
        self,
        block: VertexBlock,
        values: np.ndarray,
        gathered: np.ndarray,
        received: np.ndarray,
        aggregates: dict[str, float],
    ) -> np.ndarray:
        """New values from the old ones and the combined updates (``gathered``; the
        identity where ``received`` is false)."""
        ...


class ScatterGatherWorker:
    """One streaming partition (pure; the Ray actor only wraps it)."""

    def __init__(self, part: GraphPartition, program: EdgeProgram, chunk_rows: int) -> None:
        self.program = program
        self.part = part
        self.chunk_rows = chunk_rows
        ids = part.vertices["id"].to_numpy(zero_copy_only=False)
        self.index = pd.Index(ids)
        edges = part.edges
        if "reversed" in edges.column_names:
            forward = np.logical_not(edges["reversed"].to_numpy(zero_copy_only=False))
        else:
            forward = np.ones(edges.num_rows, dtype=bool)
        src_index = self.index.get_indexer(edges["src"].to_numpy(zero_copy_only=False))
        out_degree = np.bincount(src_index[forward], minlength=len(ids)).astype(np.float64)
        self.block = VertexBlock(ids, part.vertices, out_degree, 0)
        self.values = np.zeros(len(ids))
        self.active = np.ones(len(ids), dtype=bool)
        self.streamed = 0

    def count(self) -> int:
        """Vertices of this partition."""
        return len(self.block.ids)

    def start(self, num_vertices: int) -> None:
        """Set the graph's vertex count and the first values."""
        self.block.num_vertices = num_vertices
        self.values = np.asarray(self.program.init(self.block), dtype=np.float64)

    def step(
        self, batches: list[Any], iteration: int, aggregates: dict[str, float]
    ) -> tuple[dict[str, Any], list[Any]]:
        """Gather the updates of the previous iteration (none at iteration 0), apply, then
        scatter from the new values; returns a summary and one batch per partition."""
        program = self.program
        change = 0.0
        changed = 0
        if iteration > 0:
            gathered = np.full(len(self.values), program.identity, dtype=np.float64)
            received = np.zeros(len(self.values), dtype=bool)
            for batch in batches:
                if batch is None:
                    continue
                ids, vals = batch
                pos = self.index.get_indexer(ids)
                program.reduce.at(gathered, pos, vals)
                received[pos] = True
            new = np.asarray(
                program.apply(self.block, self.values, gathered, received, aggregates),
                dtype=np.float64,
            )
            self.active = new != self.values
            changed = int(self.active.sum())
            if changed:  # (inf - inf is undefined: compare only the values that moved)
                change = float(np.abs(new[self.active] - self.values[self.active]).max())
            self.values = new
        summary = {
            "change": change,
            "changed": changed,
            "aggregates": program.aggregate(self.block, self.values),
        }
        return summary, self._scatter()

    def _scatter(self) -> list[Any]:
        program = self.program
        num_parts = self.part.num_parts
        buffers: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(num_parts)]
        for batch in self.part.edge_chunks(self.chunk_rows):
            src_index = self.index.get_indexer(batch.column("src").to_numpy(zero_copy_only=False))
            keep = self.active[src_index] if program.selective else None
            if keep is not None and not keep.any():
                continue
            if keep is not None and not keep.all():
                batch = batch.filter(pa.array(keep))
                src_index = src_index[keep]
            self.streamed += batch.num_rows
            dst = batch.column("dst").to_numpy(zero_copy_only=False)
            chunk = EdgeChunk(
                src_index, self.values[src_index], self.block.out_degree[src_index], dst, batch
            )
            updates = np.asarray(program.scatter(chunk), dtype=np.float64)
            dst_part = batch.column("dst_part").to_numpy()
            for q in range(num_parts):
                mask = dst_part == q
                if mask.any():
                    buffers[q].append(_combine(program, dst[mask], updates[mask]))
        out: list[Any] = []
        for chunks in buffers:
            if not chunks:
                out.append(None)
            else:
                ids = np.concatenate([c[0] for c in chunks])
                vals = np.concatenate([c[1] for c in chunks])
                out.append(_combine(program, ids, vals))
        return out

    def results(self) -> pa.Table:
        """``id`` and the value column of every vertex."""
        return pa.table({"id": self.part.vertices["id"], self.program.name: pa.array(self.values)})

    def streamed_edges(self) -> int:
        """Edges streamed so far."""
        return self.streamed


def _combine(program: EdgeProgram, ids: np.ndarray, vals: np.ndarray) -> tuple[Any, Any]:
    """One update per destination id (combined with ``program.reduce``)."""
    unique, inverse = np.unique(ids, return_inverse=True)
    if len(unique) == len(ids):
        return ids, vals
    out = np.full(len(unique), program.identity, dtype=np.float64)
    program.reduce.at(out, inverse, vals)
    return unique, out


def scatter_gather(
    graph: GraphInput,
    program: EdgeProgram,
    *,
    num_partitions: int = 4,
    max_iterations: int = 100,
    tol: float = 0.0,
    chunk_rows: int = 4096,
    executor: Executor = "auto",
    progress: Progress = False,
) -> ModelResult:
    """Run ``program`` on ``graph`` (a :class:`~snapshot.Snapshot` or ``(vertices,
    edges)`` tables) until no value changes by more than ``tol`` or ``max_iterations``
    iterations (gathers) ran. One row per vertex: ``id`` and ``program.name``;
    ``info["iterations"]``, ``info["converged"]``, ``info["streamed_edges"]``.

    >>> import numpy as np, pyarrow as pa
    >>> class Reach:  # which vertices 1 reaches, streaming one edge per chunk
    ...     name, reduce, identity, undirected, selective = "reached", np.maximum, 0.0, False, True
    ...     def init(self, block): return (block.ids == 1).astype(float)
    ...     def aggregate(self, block, values): return {}
    ...     def scatter(self, chunk): return chunk.src_value
    ...     def apply(self, block, values, gathered, received, aggregates):
    ...         return np.maximum(values, gathered)
    >>> graph = (pa.table({"id": [1, 2, 3, 4]}), pa.table({"src": [1, 2], "dst": [2, 3]}))
    >>> result = scatter_gather(graph, Reach(), num_partitions=2, chunk_rows=1)
    >>> result.to_dict(), result.info["iterations"]
    ({1: 1.0, 2: 1.0, 3: 1.0, 4: 0.0}, 3)
    """
    started = time.perf_counter()
    direction = "both" if program.undirected else "out"
    group = start_group(
        graph, num_partitions, ScatterGatherWorker, program, chunk_rows,
        executor=executor, direction=direction,
    )  # fmt: skip
    group.call("start", sum(group.call("count")))
    setup = time.perf_counter() - started
    report = progress_reporter(progress, f"scatter/gather {program.name}", max_iterations)
    steps: list[dict[str, Any]] = []
    try:
        inbox = group.empty_inbox()
        aggregates: dict[str, float] = {}
        converged = False
        iteration = 0
        while True:
            t = time.perf_counter()
            summaries, inbox = group.exchange("step", inbox, iteration, aggregates)
            aggregates = _sum(s["aggregates"] for s in summaries)
            if iteration > 0:
                figures = {
                    "step": iteration - 1,
                    "changed": sum(s["changed"] for s in summaries),
                    "change": max(s["change"] for s in summaries),
                    "seconds": time.perf_counter() - t,
                }
                steps.append(figures)
                report(figures)
                converged = figures["changed"] == 0 or figures["change"] <= tol
                if converged or iteration >= max_iterations:
                    break
            iteration += 1
        table = pa.concat_tables(group.call("results"))
        streamed = sum(group.call("streamed_edges"))
    finally:
        report.close()
        group.close()
    table = table.sort_by("id") if table.num_rows else table
    return ModelResult(
        table,
        "scatter_gather",
        num_partitions,
        time.perf_counter() - started,
        steps,
        {
            "iterations": iteration,
            "converged": converged,
            "streamed_edges": streamed,
            "setup_seconds": setup,
        },
    )


def _sum(parts: Any) -> dict[str, float]:
    total: dict[str, float] = {}
    for part in parts:
        for k, v in part.items():
            total[k] = total.get(k, 0.0) + v
    return total


mark_module_api(globals(), public=("scatter_gather",))
