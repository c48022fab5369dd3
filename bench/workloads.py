"""Benchmark workloads, after the GraphTides ring workload of the thesis (ch. 13.4.8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from vertex import Context, Update, Vertex

__all__ = ["RingVertex", "ring_seed", "skewed_stream", "write_snap"]


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


def skewed_stream(
    events: int = 600_000,
    vertices: int = 21_000,
    edges: int = 58_000,
    *,
    seed: int = 7,
) -> list[tuple[int, int, int]]:
    """A seeded temporal edge stream with skewed endpoints, as ``(src, dst, ts)`` in time
    order: ``edges`` distinct pairs whose sources follow a Zipf law (exponent 1.4: a hub
    owns about a quarter of them) and targets a flat one (exponent 0.2), then ``events``
    occurrences of those pairs drawn with Zipf popularity (exponent 0.5); times grow by 0
    to 2 per event. With the defaults: about 20 k vertices, 57.9 k distinct edges, a hub
    with 13.8 k out-edges.

    >>> stream = skewed_stream(1_000, 200, 400)
    >>> len(stream), stream == sorted(stream, key=lambda e: e[2])
    (1000, True)
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vertices + 1, dtype=float)
    ids = rng.permutation(vertices)
    pairs: dict[tuple[int, int], None] = {}
    while len(pairs) < edges:
        src = ids[rng.choice(vertices, size=edges, p=_zipf(ranks, 1.4))]
        dst = ids[rng.choice(vertices, size=edges, p=_zipf(ranks, 0.2))]
        for a, b in zip(src.tolist(), dst.tolist(), strict=True):
            if a != b and len(pairs) < edges:
                pairs[(a, b)] = None
    chosen = rng.permutation(edges)[
        rng.choice(edges, size=events, p=_zipf(np.arange(1, edges + 1, dtype=float), 0.5))
    ]
    pool = list(pairs)
    times = (10**9 + np.cumsum(rng.integers(0, 3, size=events))).tolist()
    return [(*pool[k], t) for k, t in zip(chosen.tolist(), times, strict=True)]


def _zipf(ranks: Any, exponent: float) -> Any:
    weights = ranks**-exponent
    return weights / weights.sum()


def write_snap(path: Any, edges: list[tuple[int, int, int]]) -> None:
    """Write ``(src, dst, ts)`` edges as a SNAP temporal edge list (``SRC DST TS`` lines)."""
    with open(path, "w") as f:
        f.writelines(f"{s} {d} {t}\n" for s, d, t in edges)
