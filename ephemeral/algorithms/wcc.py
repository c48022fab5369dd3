"""Live weakly connected components by minimum-label propagation.

Each vertex keeps a label, initially its own id; labels travel both ways along edges
(to out-neighbours and to the sources of incoming edges) and a vertex adopts any smaller
label it hears of and passes it on. New edges make both ends exchange labels. Labels
are ordered ints first, then strings (so mixed id types work). Messages to one vertex
waiting in the same outbox are combined (the smallest label).

Result per vertex: its component's label, the smallest vertex id of the component.
Aggregated: ``{"components": count, "largest": size}``. Once the graph is idle the
partition equals ``networkx.weakly_connected_components``. Removals are not retracted:
after an edge or vertex removal a component that split keeps one label.

Examples
--------
>>> from chronoray.testing import LocalRuntime
>>> from vertex import Update
>>> rt = LocalRuntime(2)
>>> live = rt.start_computation(WeaklyConnectedComponents())
>>> rt.ingest([Update.add_edge(3, 2), Update.add_edge(5, 4), Update.add_edge(6, 4)])
>>> live.values()
{2: 2, 3: 2, 4: 4, 5: 4, 6: 4}
>>> rt.ingest([Update.add_edge(2, 6)], source="more")
>>> live.result()
{'components': 1, 'largest': 5}
>>> rt.close()
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from ephemeral.computation import Computation, EphemeralContext
from ephemeral.index import id_order
from shards.observe import VertexChange
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["WeaklyConnectedComponents"]


class WeaklyConnectedComponents(Computation):
    """Weakly connected components (smallest id as label), live."""

    combines: ClassVar[bool] = True
    net_changes: ClassVar[bool] = True

    def on_activate(self, ctx: EphemeralContext) -> None:
        ctx.state = ctx.vertex_id
        ctx.send_to_out_neighbors(ctx.state)
        ctx.send_to_in_neighbors(ctx.state)

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        for other in change.added_out:
            ctx.send(other, ctx.state)
        for other in change.added_in:
            ctx.send(other, ctx.state)

    def on_message(self, ctx: EphemeralContext, label: VertexId) -> None:
        if id_order(label) < id_order(ctx.state):
            ctx.state = label
            ctx.send_to_out_neighbors(label)
            ctx.send_to_in_neighbors(label)

    def combine_messages(self, a: VertexId, b: VertexId) -> VertexId:
        return a if id_order(a) <= id_order(b) else b

    def summarize(self, aggregate: Any, values: Mapping[VertexId, Any]) -> Counter[Any]:
        return Counter(values.values())

    def combine(self, parts: list[Any]) -> dict[str, int]:
        sizes: Counter[Any] = Counter()
        for part in parts:
            sizes.update(part)
        return {"components": len(sizes), "largest": max(sizes.values(), default=0)}


mark_module_api(globals(), public=("WeaklyConnectedComponents",))
