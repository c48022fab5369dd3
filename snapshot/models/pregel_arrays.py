"""Pregel's array program form: ``compute`` runs once per partition and superstep over
arrays of its active vertices and their messages, not once per vertex.

A :class:`PregelArrays` program has the guarantees of :mod:`snapshot.models.pregel`
(messages of superstep ``s`` arrive in ``s + 1``; halted vertices are skipped until a
message wakes them; aggregates and counts of ``s`` are readable in ``s + 1``; the job ends
when every vertex halted and nothing is pending, or after ``max_supersteps``), with these
contracts instead of the per-vertex ones:

* ``init(table) -> {column: array}``: the first state of every vertex of a partition
  (:class:`VertexTable`: ids, snapshot rows, out-degrees);
* ``compute(batch) -> {column: array}``: the new state of the **active** vertices of the
  partition (:class:`VertexBatch`: their ids, state, combined messages), in the order of
  ``batch.ids``; it sends with ``batch.send_to_neighbors(values)`` and
  ``batch.send(ids, values)``, contributes with ``batch.aggregate(name, values)`` and
  halts with ``batch.vote_to_halt(where)``;
* ``combiner``: a numpy ufunc (``np.add``, ``np.minimum``, ``np.maximum``) that reduces the
  messages to one vertex to one value; without one, ``batch.message_counts`` and
  ``batch.message_values`` hold every message grouped by vertex;
* no topology changes (use the per-vertex form for those); ``undirected=True`` gives every
  vertex its in-edges as neighbours too.

Messages travel as arrays: per superstep one ``(destination ids, values)`` pair of numpy
arrays per (sender, receiver) partition pair, combined on the sender's side already.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from snapshot.models.partition import GraphPartition, partitions_of
from snapshot.models.pregel import Aggregator, fold_summaries
from snapshot.models.pregel_fused import FusedKernel, FusedStep

__all__ = ["PregelArrays", "PregelArraysWorker", "VertexBatch", "VertexTable", "combine"]

_ARRAY_REDUCTIONS: dict[Any, np.ufunc] = {
    operator.add: np.add,
    max: np.maximum,
    min: np.minimum,
}


def _reduction(aggregator: Aggregator) -> np.ufunc:
    combine = aggregator.combine
    if isinstance(combine, np.ufunc):
        return combine
    if combine in _ARRAY_REDUCTIONS:
        return _ARRAY_REDUCTIONS[combine]
    raise TypeError(f"an array program's aggregator needs a numpy ufunc, got {combine!r}")


@dataclass
class VertexTable:
    """What ``init`` sees of a partition: ``ids`` (numpy), the snapshot ``rows`` (Arrow,
    same order) and ``out_degree`` (distinct out-neighbours, numpy)."""

    ids: np.ndarray
    rows: pa.Table
    out_degree: np.ndarray
    constants: Mapping[str, Any]


@dataclass
class PregelArrays:
    """A Pregel program in array form (see the module docstring). ``output``: the state
    columns of the result (default: all). ``fused``: a fused superstep of this very
    program (:mod:`snapshot.models.pregel_fused`, built-in programs only), run instead of
    ``compute`` and the generic message path; it gives the same states and messages."""

    compute: Callable[[VertexBatch], Mapping[str, np.ndarray]]
    init: Callable[[VertexTable], Mapping[str, np.ndarray]]
    combiner: np.ufunc | None = None
    aggregators: Mapping[str, Aggregator] = field(default_factory=dict)
    max_supersteps: int = 100
    undirected: bool = False
    constants: Mapping[str, Any] = field(default_factory=dict)
    output: Sequence[str] | None = None
    name: str = "pregel"
    fused: FusedStep | None = None

    @property
    def worker(self) -> type[PregelArraysWorker]:
        """The partition worker that runs this form."""
        return PregelArraysWorker


class VertexBatch:
    """What ``compute`` sees: the active vertices of one partition in one superstep."""

    def __init__(
        self,
        worker: PregelArraysWorker,
        positions: np.ndarray,
        superstep: int,
        counts: tuple[int, int],
        aggregated: Mapping[str, Any],
        inbox: _Inbox,
    ) -> None:
        self._worker = worker
        self._positions = positions
        self.superstep = superstep
        self.num_vertices, self.num_edges = counts
        self._aggregated = aggregated
        self.constants = worker.program.constants
        self.ids: np.ndarray = worker.ids[positions]
        self.state: dict[str, np.ndarray] = {k: v[positions] for k, v in worker.state.items()}
        self.out_degree: np.ndarray = worker.out_degree[positions]
        self.has_messages: np.ndarray = inbox.received[positions]
        self.messages: np.ndarray | None = (
            None if inbox.combined is None else inbox.combined[positions]
        )
        self.message_counts: np.ndarray = inbox.counts[positions]
        self.message_values: np.ndarray | None = inbox.values
        self.halt = np.zeros(len(positions), dtype=bool)

    def __len__(self) -> int:
        return len(self.ids)

    def aggregated(self, name: str) -> Any:
        """Aggregator ``name``'s value from the previous superstep (its zero at first)."""
        return self._aggregated[name]

    def aggregate(self, name: str, values: Any) -> None:
        """Contribute ``values`` (an array or a scalar) to aggregator ``name``."""
        worker = self._worker
        values = np.asarray(values)
        if values.size:
            reduced = _reduction(worker.aggregators[name]).reduce(values, axis=None)
            worker.partial[name] = worker.aggregators[name].combine(
                worker.partial[name], reduced.item()
            )

    def send_to_neighbors(self, values: Any, where: np.ndarray | None = None) -> None:
        """Send ``values[i]`` (or one scalar) along every out-edge of active vertex ``i``
        (of those where ``where`` is true)."""
        values = np.broadcast_to(np.asarray(values), (len(self),))
        positions = self._positions
        if where is not None:
            positions, values = positions[where], values[where]
        self._worker.send_along_edges(positions, values)

    def send(self, dst: np.ndarray, values: Any) -> None:
        """Send ``values[i]`` (or one scalar) to vertex ``dst[i]``, wherever it is."""
        dst = np.asarray(dst)
        values = np.broadcast_to(np.asarray(values), dst.shape)
        self._worker.post(dst, values, partitions_of(dst, self._worker.num_parts))

    def vote_to_halt(self, where: np.ndarray | None = None) -> None:
        """Halt the active vertices (those where ``where`` is true) until a message."""
        if where is None:
            self.halt[:] = True
        else:
            self.halt |= where


@dataclass
class _Inbox:
    """The messages delivered to one partition, by position: combined (with a combiner)
    or grouped (``values`` in position order, ``counts`` per position)."""

    received: np.ndarray
    counts: np.ndarray
    combined: np.ndarray | None
    values: np.ndarray | None
    dropped: int


def _reduce_slots(
    size: int, slots: np.ndarray, values: np.ndarray, combiner: np.ufunc | None
) -> tuple[np.ndarray, np.ndarray]:
    """``(counts, reduced)``: how many values fell into each of ``size`` slots, and their
    reduction with ``combiner`` (meaningless where the count is 0). Numbers are reduced
    in place (``bincount``, ``ufunc.at``); other values (e.g. string labels) by sorting."""
    counts = np.bincount(slots, minlength=size)
    kind = values.dtype.kind
    if combiner is np.add and kind in "fiu":
        return counts, np.bincount(slots, weights=values, minlength=size).astype(values.dtype)
    if combiner in (np.minimum, np.maximum) and kind in "fiu":
        info = np.finfo(values.dtype) if kind == "f" else np.iinfo(values.dtype)
        start = info.max if combiner is np.minimum else info.min
        reduced = np.full(size, np.inf if kind == "f" and combiner is np.minimum else start)
        if kind == "f" and combiner is np.maximum:
            reduced[:] = -np.inf
        reduced = reduced.astype(values.dtype)
        combiner.at(reduced, slots, values)
        return counts, reduced
    reduced = np.empty(size, dtype=values.dtype)
    if len(slots):
        order = np.argsort(slots, kind="stable")
        ordered = slots[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        assert combiner is not None
        reduced[ordered[starts]] = combiner.reduceat(values[order], starts)
    return counts, reduced


def combine(
    keys: np.ndarray, values: np.ndarray, combiner: np.ufunc
) -> tuple[np.ndarray, np.ndarray]:
    """One value per distinct key, reduced with ``combiner``."""
    if len(keys) == 0:
        return keys, values
    inverse, unique = pd.factorize(keys)
    counts, reduced = _reduce_slots(len(unique), inverse, values, combiner)
    return np.asarray(unique), reduced


class PregelArraysWorker:
    """One partition of a Pregel job in array form (pure; the Ray actor only wraps it)."""

    def __init__(self, part: GraphPartition, program: PregelArrays) -> None:
        self.program = program
        self.index, self.num_parts = part.index, part.num_parts
        self.aggregators = dict(program.aggregators)
        self.partial: dict[str, Any] = {}
        vertices = part.vertices
        if vertices.num_rows and pa.types.is_integer(vertices.schema.field("id").type):
            vertices = vertices.sort_by("id")  # positions of integer ids by binary search
        self.ids = vertices["id"].to_numpy(zero_copy_only=False)
        self.lookup = pd.Index(self.ids)
        self._load_edges(part.edges)
        table = VertexTable(self.ids, vertices, self.out_degree, program.constants)
        self.state = {k: np.asarray(v) for k, v in program.init(table).items()}
        self.halted = np.zeros(len(self.ids), dtype=bool)
        self._outbox: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._along: list[tuple[np.ndarray, np.ndarray]] = []  # (edges, values)
        self._seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # sender -> (ids, positions)
        self.sent = 0
        self._fused: FusedKernel | None = (
            None if program.fused is None else program.fused.bind(self)
        )

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """The positions of ``ids`` in this partition (-1: not here)."""
        if self.ids.dtype.kind in "iu" and ids.dtype.kind in "iu":
            found = np.searchsorted(self.ids, ids)
            found[found == len(self.ids)] = 0
            hit = self.ids[found] == ids if len(self.ids) else np.zeros(len(ids), dtype=bool)
            return np.where(hit, found, -1)
        return self.lookup.get_indexer(ids)

    def _load_edges(self, edges: pa.Table) -> None:
        """Out-edges (and, undirected, in-edges turned around) as CSR over positions;
        a pair listed twice counts once, as in the per-vertex form's edge dict."""
        frame = pd.DataFrame(
            {
                "src": self.positions(edges["src"].to_numpy(zero_copy_only=False)),
                "dst": edges["dst"].to_numpy(zero_copy_only=False),
                "part": edges["dst_part"].to_numpy(zero_copy_only=False),
                "forward": ~edges["reversed"].to_numpy(zero_copy_only=False)
                if "reversed" in edges.column_names
                else np.ones(edges.num_rows, dtype=bool),
            }
        )
        frame = frame.drop_duplicates(["src", "dst", "forward"], keep="last")
        forward = frame["forward"].to_numpy()
        n = len(self.ids)
        self.out_degree = np.bincount(frame["src"].to_numpy()[forward], minlength=n)
        if not self.program.undirected:
            frame = frame[forward]
        else:  # a neighbour both ways is one neighbour
            frame = frame.drop_duplicates(["src", "dst"])
        frame = frame.sort_values("src", kind="stable")
        self.edge_src = frame["src"].to_numpy()
        self.edge_dst = frame["dst"].to_numpy()
        self.edge_part = frame["part"].to_numpy()
        # every distinct target gets one slot, grouped by its partition: messages along
        # edges are combined into slots without sorting (the targets never change)
        by_part = pd.DataFrame({"part": self.edge_part, "dst": self.edge_dst})
        targets = by_part.drop_duplicates().sort_values("part", kind="stable")
        self.slot_dst = targets["dst"].to_numpy()
        self.slot_bounds = np.searchsorted(
            targets["part"].to_numpy(), np.arange(self.num_parts + 1), side="left"
        )
        self.slot_part = np.repeat(np.arange(self.num_parts), np.diff(self.slot_bounds))
        self.edge_slot = pd.MultiIndex.from_frame(targets).get_indexer(
            pd.MultiIndex.from_frame(by_part)
        )
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.edge_src, minlength=n), out=self.indptr[1:])
        self.num_edges = int(self.out_degree.sum())

    def counts(self) -> tuple[int, int]:
        """``(vertices, edges)`` of this partition."""
        return len(self.ids), self.num_edges

    def post(self, dst: np.ndarray, values: np.ndarray, parts: np.ndarray) -> None:
        """Queue messages ``values`` to ``dst`` (in partitions ``parts``)."""
        if len(dst):
            self._outbox.append((dst, values, parts))
            self.sent += len(dst)

    def send_along_edges(self, positions: np.ndarray, values: np.ndarray) -> None:
        """Queue ``values[i]`` along every edge of the vertex at ``positions[i]``."""
        starts, ends = self.indptr[positions], self.indptr[positions + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        if total == len(self.edge_dst):
            edges = np.arange(total)  # every edge (all vertices send, in order)
        else:
            edges = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        if total:
            self._along.append((edges, np.repeat(values, lengths)))
            self.sent += total

    def _positions_from(self, sender: int, dst: np.ndarray) -> np.ndarray:
        """:meth:`positions` of the ids partition ``sender`` sent to; the last lookup per
        sender is kept (messages along edges go to the same targets every superstep)."""
        seen = self._seen.get(sender)
        if seen is not None and np.array_equal(seen[0], dst):
            return seen[1]
        found = self.positions(dst)
        self._seen[sender] = (dst, found)
        return found

    def _deliver(self, batches: list[Any]) -> _Inbox:
        n = len(self.ids)
        pieces = [b for b in batches if b is not None]
        combiner = self.program.combiner
        if not pieces:
            zeros = np.zeros(n, dtype=np.int64)
            if combiner is None:
                return _Inbox(zeros.astype(bool), zeros, None, np.zeros(0), 0)
            return _Inbox(zeros.astype(bool), zeros, np.zeros(n), None, 0)
        positions = np.concatenate(
            [self._positions_from(p, b[0]) for p, b in enumerate(batches) if b is not None]
        )
        values = np.concatenate([b[1] for b in pieces])
        known = positions >= 0
        dropped = int((~known).sum())
        positions, values = positions[known], values[known]
        if combiner is None:
            counts = np.bincount(positions, minlength=n)
            order = np.argsort(positions, kind="stable")
            return _Inbox(counts > 0, counts, None, values[order], dropped)
        counts, combined = _reduce_slots(n, positions, values, combiner)
        return _Inbox(counts > 0, counts, combined, None, dropped)

    def superstep(
        self, batches: list[Any], superstep: int, previous: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], list[Any]]:
        """Run one superstep on the message arrays sent to this partition in the previous
        one (``previous``: every partition's summary of it); returns a summary and one
        ``(ids, values)`` batch per destination partition."""
        if self._fused is not None:
            fused = self._fused.step(batches, superstep, previous)
            if fused is not None:
                return fused
        counts, aggregated = fold_summaries(self.aggregators, previous)
        self.partial = {k: a.zero for k, a in self.aggregators.items()}
        inbox = self._deliver(batches)
        active = np.flatnonzero(~self.halted | inbox.received)
        if len(active):
            batch = VertexBatch(self, active, superstep, counts, aggregated, inbox)
            new = self.program.compute(batch)
            for name, values in new.items():
                if name not in self.state:
                    self.state[name] = np.zeros(len(self.ids), dtype=np.asarray(values).dtype)
                self.state[name][active] = values
            self.halted[active] = batch.halt
        summary = self.summary(int((~self.halted).sum()), self.sent, inbox.dropped, self.partial)
        return summary, self._flush()

    def summary(
        self, active: int, sent: int, dropped: int, aggregates: dict[str, Any]
    ) -> dict[str, Any]:
        """A superstep's summary of this partition, as every side folds it."""
        return {
            "active": active,
            "sent": sent,
            "dropped": dropped,
            "vertices": len(self.ids),
            "edges": self.num_edges,
            "aggregates": aggregates,
        }

    def _flush(self) -> list[Any]:
        """This superstep's messages as one ``(ids, values)`` batch per partition."""
        along, outbox = self._along, self._outbox
        self._along, self._outbox, self.sent = [], [], 0
        combiner = self.program.combiner
        if along and combiner is not None:  # combined into the targets' slots
            edges = np.concatenate([a[0] for a in along])
            counts, reduced = _reduce_slots(
                len(self.slot_dst), self.edge_slot[edges],
                np.concatenate([a[1] for a in along]), combiner,
            )  # fmt: skip
            if not outbox:  # the slots are grouped by partition already
                return [self._slot_batch(q, counts, reduced) for q in range(self.num_parts)]
            hit = counts > 0
            outbox.append((self.slot_dst[hit], reduced[hit], self.slot_part[hit]))
        elif along:
            edges = np.concatenate([a[0] for a in along])
            values = np.concatenate([a[1] for a in along])
            outbox.append((self.edge_dst[edges], values, self.edge_part[edges]))
        if not outbox:
            return [None] * self.num_parts
        if len(outbox) == 1:
            dst, values, parts = outbox[0]
            combined = along and combiner is not None
        else:
            dst, values, parts = (np.concatenate([o[k] for o in outbox]) for k in range(3))
            combined = False
        out: list[Any] = []
        for q in range(self.num_parts):
            mine = parts == q
            if not mine.any():
                out.append(None)
            elif combiner is None or combined:
                out.append((dst[mine], values[mine]))
            else:
                out.append(combine(dst[mine], values[mine], combiner))
        return out

    def _slot_batch(self, q: int, counts: np.ndarray, reduced: np.ndarray) -> Any:
        """The combined messages of partition ``q``'s slots (``None``: no message)."""
        lo, hi = self.slot_bounds[q], self.slot_bounds[q + 1]
        hit = counts[lo:hi] > 0
        if hit.all():
            return (self.slot_dst[lo:hi], reduced[lo:hi]) if hi > lo else None
        return (self.slot_dst[lo:hi][hit], reduced[lo:hi][hit]) if hit.any() else None

    def results(self) -> pa.Table:
        """``id`` and the output state columns of every vertex."""
        names = self.program.output or list(self.state)
        return pa.table({"id": self.ids, **{k: self.state[k] for k in names}})
