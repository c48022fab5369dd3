"""Live single-source reachability: the BFS depth of every vertex reachable from a source.

Each vertex keeps its depth (``None``: not reached yet). The source has depth 0; a vertex
that learns a smaller depth ``d`` tells every out-neighbour ``d + 1``, and when a reached
vertex gets a new outgoing edge it tells the new target. Messages to one vertex waiting
in the same outbox are combined (the minimum), and a source that does not exist yet
starts the search when it is created.

Result per vertex: its depth (unreached vertices have none). Aggregated:
``{depth: vertices}``. Once the graph is idle, the depths equal
``networkx.single_source_shortest_path_length`` on the directed graph of the edges.
Edge and vertex *removals* are not retracted: depths only ever decrease, so after
removals a depth may be smaller than the true one (use a snapshot analysis instead).

Examples
--------
>>> from chronoray.testing import LocalRuntime
>>> from vertex import Update
>>> rt = LocalRuntime(2)
>>> live = rt.start_computation(BfsDepth(source=1))
>>> rt.ingest([Update.add_edge(1, 2), Update.add_edge(2, 3), Update.add_edge(4, 1)])
>>> live.values()
{1: 0, 2: 1, 3: 2}
>>> rt.ingest([Update.add_edge(1, 3)], source="more")
>>> live.value(3), live.result()
(1, {0: 1, 1: 2})
>>> rt.close()
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from ephemeral.computation import Computation, EphemeralContext
from shards.observe import VertexChange
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["BfsDepth"]


class BfsDepth(Computation):
    """BFS depth from ``source`` along outgoing edges, live."""

    combines: ClassVar[bool] = True
    net_changes: ClassVar[bool] = True

    def __init__(self, source: VertexId, vertex_types: Iterable[str] | None = None) -> None:
        super().__init__(vertex_types)
        self.source = source

    def on_activate(self, ctx: EphemeralContext) -> None:
        if ctx.vertex_id == self.source:
            ctx.state = 0
            ctx.send_to_out_neighbors(1)

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        if ctx.state is not None:
            for dst in change.added_out:
                ctx.send(dst, ctx.state + 1)

    def on_message(self, ctx: EphemeralContext, msg: int) -> None:
        if ctx.state is None or msg < ctx.state:
            ctx.state = msg
            ctx.send_to_out_neighbors(msg + 1)

    def combine_messages(self, a: int, b: int) -> int:
        return min(a, b)

    def summarize(self, aggregate: Any, values: Mapping[VertexId, Any]) -> Counter[int]:
        return Counter(d for d in values.values() if d is not None)

    def combine(self, parts: list[Any]) -> dict[int, int]:
        total: Counter[int] = Counter()
        for part in parts:
            total.update(part)
        return dict(sorted(total.items()))

    def finalize(self, values: dict[VertexId, Any], result: Any) -> dict[VertexId, Any]:
        return {v: d for v, d in values.items() if d is not None}


mark_module_api(globals(), public=("BfsDepth",))
