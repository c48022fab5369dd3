"""Fused supersteps for built-in array programs: one partition superstep as a few numpy
calls on buffers prepared once, instead of the generic path's program call, message
routing and slot reduction (about 40 numpy calls and their temporaries).

A :class:`~snapshot.models.pregel_arrays.PregelArrays` program may carry a ``fused``
step (:class:`FusedStep`); its worker then runs :meth:`FusedKernel.step` in each
superstep and falls back to the generic path when the kernel returns ``None``. A fused
step must give what the generic path gives for the same program: the same vertex
states, summaries (active, sent, dropped, aggregates) and outgoing batches.

:class:`PageRankStep` is :func:`snapshot.algorithms.pagerank.pagerank_arrays`' superstep:
the rank update, the stopping rule and the ``change``/``dangling`` aggregates as in its
``compute``, and the messages as one sparse product ``M @ (rank / out_degree)`` where
``M`` (targets' slots x vertices) holds a 1 per edge, its rows in the generic path's
edge order, so every slot's sum adds the same numbers in the same order: the ranks are
the generic path's, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import scipy.sparse as sp

from snapshot.models.pregel import fold_summaries

if TYPE_CHECKING:
    from snapshot.models.pregel_arrays import PregelArraysWorker

__all__ = ["FusedKernel", "FusedStep", "PageRankStep"]

StepResult = tuple[dict[str, Any], list[Any]]


class FusedKernel(Protocol):
    """A fused superstep bound to one partition worker."""

    def step(
        self, batches: list[Any], superstep: int, previous: list[dict[str, Any]]
    ) -> StepResult | None:
        """The worker's :meth:`superstep`, or ``None`` to let the generic path run it."""
        ...


class FusedStep(Protocol):
    """What a program carries: it binds a kernel to each partition worker."""

    def bind(self, worker: PregelArraysWorker) -> FusedKernel | None:
        """A kernel for ``worker`` (``None``: this partition runs the generic path)."""
        ...


@dataclass(frozen=True)
class PageRankStep:
    """The fused superstep of ``pagerank_arrays(alpha, tol)`` (same parameters)."""

    alpha: float
    tol: float

    def bind(self, worker: PregelArraysWorker) -> FusedKernel | None:
        if worker.program.undirected or len(worker.ids) == 0:
            return None
        return _PageRankKernel(worker, self.alpha, self.tol)


class _PageRankKernel:
    """Buffers of one partition: the slot matrix, the divisors, the dangling mask, the
    inflow and next-rank buffers (reused every superstep)."""

    def __init__(self, worker: PregelArraysWorker, alpha: float, tol: float) -> None:
        self.worker, self.alpha, self.tol = worker, alpha, tol
        n, slots = len(worker.ids), len(worker.slot_dst)
        self.divisor = np.maximum(worker.out_degree, 1)
        self.dangling = worker.out_degree == 0
        self.any_dangling = bool(self.dangling.any())
        order = np.argsort(worker.edge_slot, kind="stable")  # edge order within a slot
        indptr = np.zeros(slots + 1, dtype=np.int64)
        np.cumsum(np.bincount(worker.edge_slot, minlength=slots), out=indptr[1:])
        self.matrix = sp.csr_matrix(
            (np.ones(len(order)), worker.edge_src[order], indptr), shape=(slots, n)
        )
        self.sent = len(order)
        self.inflow = np.zeros(n)
        self.spare = np.zeros(n)
        self.bounds = [
            (int(worker.slot_bounds[q]), int(worker.slot_bounds[q + 1]))
            for q in range(worker.num_parts)
        ]

    def step(
        self, batches: list[Any], superstep: int, previous: list[dict[str, Any]]
    ) -> StepResult | None:
        worker = self.worker
        if worker.halted.any():  # halted (the job's last superstep): the generic path
            return None
        (total, _), aggregated = fold_summaries(worker.aggregators, previous)
        partial = {k: a.zero for k, a in worker.aggregators.items()}
        dropped = self._deliver(batches)
        if superstep >= 2 and aggregated["change"] <= self.tol:
            worker.halted[:] = True
            return worker.summary(0, 0, dropped, partial), [None] * worker.num_parts
        rank = self._update(superstep, total, aggregated, partial)
        messages = self.matrix @ (rank / self.divisor)
        if self.any_dangling:
            partial["dangling"] = worker.aggregators["dangling"].combine(
                partial["dangling"], np.add.reduce(rank[self.dangling]).item()
            )
        out = [
            (worker.slot_dst[lo:hi], messages[lo:hi]) if hi > lo else None for lo, hi in self.bounds
        ]
        summary = worker.summary(len(rank), self.sent, dropped, partial)
        return summary, out

    def _update(
        self, superstep: int, total: int, aggregated: dict[str, Any], partial: dict[str, Any]
    ) -> np.ndarray:
        """The new ranks (kept as the state), with ``change`` folded into ``partial``;
        the same expression as the program's ``compute``."""
        state = self.worker.state
        if superstep == 0:
            state["rank"][:] = 1.0 / total
            return state["rank"]
        new, old = self.spare, state["rank"]
        np.add(self.inflow, aggregated["dangling"] / total, out=new)
        new *= self.alpha
        new += (1 - self.alpha) / total
        change = np.abs(np.subtract(new, old, out=old), out=old)
        partial["change"] = self.worker.aggregators["change"].combine(
            partial["change"], np.maximum.reduce(change).item()
        )
        state["rank"], self.spare = new, old
        return new

    def _deliver(self, batches: list[Any]) -> int:
        """Sum the messages into :attr:`inflow` (a sender's batch names each target
        once: it is combined on the sender's side); returns how many were dropped."""
        inflow, dropped = self.inflow, 0
        inflow.fill(0.0)
        for sender, batch in enumerate(batches):
            if batch is None:
                continue
            positions = self.worker._positions_from(sender, batch[0])
            values = batch[1]
            known = positions >= 0
            if not known.all():
                dropped += int(len(known) - known.sum())
                positions, values = positions[known], values[known]
            inflow[positions] += values
        return dropped
