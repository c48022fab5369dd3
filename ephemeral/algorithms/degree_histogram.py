"""Live in- and out-degree histogram (thesis listings 9.8-9.11, scaled out per shard).

Each vertex keeps its ``(out_degree, in_degree)`` (distinct neighbours) as ephemeral
state; each shard keeps a histogram of its vertices, updated at every change that moves a
vertex from one bin to another (the thesis's per-shard aggregators); the driver sums the
shards' histograms. No messages are exchanged.

Result: ``{"out": {degree: vertices}, "in": {degree: vertices}}`` with bins in increasing
order and empty bins left out. Per vertex: ``(out_degree, in_degree)``. In-degrees follow
the targets' incoming-edge records, which are eventually consistent: once the graph is
idle both histograms are exact (they equal networkx's ``out_degree``/``in_degree`` counts).

Examples
--------
>>> from chronoray.testing import LocalRuntime
>>> from vertex import Update
>>> rt = LocalRuntime(2)
>>> live = rt.start_computation(DegreeHistogram())
>>> rt.ingest([Update.add_edge(1, 2), Update.add_edge(1, 3), Update.add_edge(2, 3)])
>>> live.result()
{'out': {0: 1, 1: 1, 2: 1}, 'in': {0: 1, 1: 1, 2: 1}}
>>> live.value(3)
(0, 2)
>>> rt.close()
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from ephemeral.computation import ChangeBatch, ChangesContext, Computation, EphemeralContext
from shards.observe import VertexChange
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["DegreeHistogram"]


class DegreeHistogram(Computation):
    """Histograms of out- and in-degrees, live. ``vertex_types``: restrict to these."""

    def new_aggregate(self) -> tuple[Counter[int], Counter[int]]:
        return Counter(), Counter()

    def on_activate(self, ctx: EphemeralContext) -> None:
        ctx.state = (ctx.vertex.out_degree, ctx.vertex.in_degree)
        out_hist, in_hist = ctx.aggregate
        out_hist[ctx.state[0]] += 1
        in_hist[ctx.state[1]] += 1

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        if not (change.topology_changed or change.deleted):
            return
        out_hist, in_hist = ctx.aggregate
        old_out, old_in = ctx.state
        _move(out_hist, old_out, None if change.deleted else ctx.vertex.out_degree)
        _move(in_hist, old_in, None if change.deleted else ctx.vertex.in_degree)
        if not change.deleted:
            ctx.state = (ctx.vertex.out_degree, ctx.vertex.in_degree)

    def on_changes(self, ctx: ChangesContext, batch: ChangeBatch) -> None:
        """A change batch: each vertex's bins move once, from its degrees before the
        batch to the degrees after its last new edge in it."""
        rows = np.flatnonzero(ctx.rows & batch.new_edge)
        if not len(rows):
            return
        keys = batch.touched_index[rows] * 2 + batch.half[rows]  # (vertex, half)
        keys, last = np.unique(keys[::-1], return_index=True)
        degrees = batch.degree[rows][::-1][last]
        out_hist, in_hist = ctx.aggregate
        states, touched = ctx.states, batch.touched.tolist()
        for key, degree in zip(keys.tolist(), degrees.tolist(), strict=True):
            vid = touched[key >> 1]
            out_degree, in_degree = states[vid]
            if key & 1:
                _move(in_hist, in_degree, degree)
                states[vid] = (out_degree, degree)
            else:
                _move(out_hist, out_degree, degree)
                states[vid] = (degree, in_degree)

    def summarize(self, aggregate: Any, values: Mapping[VertexId, Any]) -> Any:
        out_hist, in_hist = aggregate
        return dict(out_hist), dict(in_hist)

    def combine(self, parts: list[Any]) -> dict[str, dict[int, int]]:
        out_total: Counter[int] = Counter()
        in_total: Counter[int] = Counter()
        for out_hist, in_hist in parts:
            out_total.update(out_hist)
            in_total.update(in_hist)
        return {
            "out": {d: n for d, n in sorted(out_total.items()) if n},
            "in": {d: n for d, n in sorted(in_total.items()) if n},
        }


def _move(hist: Counter[int], old: int, new: int | None) -> None:
    if old == new:
        return
    hist[old] -= 1
    if not hist[old]:
        del hist[old]
    if new is not None:
        hist[new] += 1


mark_module_api(globals(), public=("DegreeHistogram",))
