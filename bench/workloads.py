"""Benchmark workloads, after the GraphTides ring workload of the thesis (ch. 13.4.8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from vertex import Context, Update, Vertex

__all__ = ["RingVertex", "ring_seed"]


class RingVertex(Vertex):
    """A ring member: forwards every token to the next vertex until its hops run out."""

    type_name: ClassVar[str] = "RingVertex"

    def on_create(self, ctx: Context, props: Mapping[str, Any]) -> None:
        ctx.state["seen"] = 0

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        ctx.state["seen"] += 1
        if msg["hops"] > 1:
            ctx.send((ctx.vertex_id + 1) % msg["n"], {"hops": msg["hops"] - 1, "n": msg["n"]})


def ring_seed(n: int, messages: int) -> list[Update]:
    """``n`` tokens, one starting at each vertex, ``messages`` behavior executions in all.

    >>> [u.props for u in ring_seed(2, 6)]
    [{'hops': 3, 'n': 2}, {'hops': 3, 'n': 2}]
    """
    if messages % n:
        raise ValueError("messages must be a multiple of n")
    return [Update.message(v, 0, hops=messages // n, n=n) for v in range(n)]
