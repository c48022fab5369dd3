"""``VertexRecord``: a vertex as a shard holds it, live or rebuilt from the log."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["VertexRecord", "set_edge"]


@dataclass(slots=True)
class VertexRecord:
    """A vertex: its class, state, edges, clock and event time.

    The shard replaces ``state`` with a new dict when an execution changes it (never
    mutates it in place), so a reference to an old state stays that state."""

    type_name: str
    state: dict[str, Any]
    out_edges: dict[VertexId, dict[str, Any]]
    in_edges: dict[VertexId, dict[str, Any]]
    clock: int = 0
    time: float = -math.inf

    def snapshot(self) -> dict[str, Any]:
        """A plain, independent copy (what queries return)."""
        return {
            "type": self.type_name,
            "clock": self.clock,
            "time": self.time,
            "state": dict(self.state),
            "out_edges": {k: dict(v) for k, v in self.out_edges.items()},
            "in_edges": {k: dict(v) for k, v in self.in_edges.items()},
        }


def set_edge(edges: dict[VertexId, dict[str, Any]], other: VertexId, props: Any) -> None:
    """Set the edge record to ``other`` to ``props``, or drop it (``props`` ``None``)."""
    if props is None:
        edges.pop(other, None)
    else:
        edges[other] = props


mark_module_api(globals())
