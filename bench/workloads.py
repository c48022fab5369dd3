"""Benchmark workloads, after the GraphTides ring workload of the thesis (ch. 13.4.8)."""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from vertex import Context, Update, Vertex

__all__ = [
    "HopVertex",
    "RingVertex",
    "SkewedGraph",
    "skewed_graph",
    "ring_seed",
    "skewed_stream",
    "topology_target",
    "write_snap",
]


class RingVertex(Vertex):
    """A ring member: forwards every token to the next vertex until its hops run out."""

    type_name: ClassVar[str] = "RingVertex"

    def on_create(self, ctx: Context, props: Mapping[str, Any]) -> None:
        ctx.state["seen"] = 0

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        ctx.state["seen"] += 1
        if msg["hops"] > 1:
            ctx.send((ctx.vertex_id + 1) % msg["n"], {"hops": msg["hops"] - 1, "n": msg["n"]})


class HopVertex(Vertex):
    """An actor of the thesis's synthetic topologies (ch. 14.2): forwards each token it
    gets to :func:`topology_target` until the token's hops run out. A token is a message
    ``{"hops", "n", "topology", "token", "seed"}`` (what :mod:`bench.generators` writes)."""

    type_name: ClassVar[str] = "HopVertex"

    def on_create(self, ctx: Context, props: Mapping[str, Any]) -> None:
        ctx.state["seen"] = 0

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        ctx.state["seen"] += 1
        hops = msg["hops"]
        if hops > 1:
            target = topology_target(
                msg["topology"], ctx.vertex_id, hops, msg["token"], msg["n"], msg["seed"]
            )
            ctx.send(target, {**msg, "hops": hops - 1})


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


class SkewedGraph(NamedTuple):
    """A stopped graph of the skewed stream (:func:`skewed_graph`)."""

    path: Path  # the stream as a SNAP file
    at: float  # the middle of its time span
    log_dir: Path  # the graph's logs (2 shards, RocksDB)
    ingest_seconds: float


def skewed_graph(workdir: Path, events: int) -> SkewedGraph:
    """The skewed stream of ``events`` events (:func:`skewed_stream`, hubs of >= 10 k
    edges at 600 k) written as ``workdir/skewed.txt`` and ingested in process into 2 shards
    with RocksDB logs under ``workdir/graph``, then closed."""
    import chronoray as cr

    stream = skewed_stream(events, edges=max(events * 58 // 600, 100))
    path = workdir / "skewed.txt"
    write_snap(path, stream)
    log_dir = workdir / "graph"
    started = time.perf_counter()
    with cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(log_dir)) as graph:
        graph.ingest(cr.SnapEdgeSource(path))
    at = float((stream[0][2] + stream[-1][2]) // 2)
    return SkewedGraph(path, at, log_dir, time.perf_counter() - started)


def topology_target(topology: str, vertex: int, hops: int, token: int, n: int, seed: int) -> int:
    """Where an actor forwards a token: the next id (``ring``), or a target drawn from a
    hash of ``(vertex, hops, token, seed)`` -- the same on every replay -- uniformly
    (``uniform``) or with Zipf popularity, exponent 1 (``zipf``; id 0 most popular).

    >>> topology_target("ring", 9, 5, 0, 10, 7)
    0
    >>> 0 <= topology_target("zipf", 3, 5, 0, 10, 7) < 10
    True
    """
    if topology == "ring":
        return (vertex + 1) % n
    u = _mix(((vertex * 1_000_003 + hops) * 1_000_033 + token) * 1_009 + seed) / 2.0**64
    if topology == "uniform":
        return int(u * n)
    if topology == "zipf":
        return min(bisect.bisect_left(_zipf_cdf(n), u), n - 1)
    raise ValueError(f"unknown topology {topology!r}")


def _mix(x: int) -> int:
    """splitmix64's finaliser: a well-spread 64-bit hash of an int."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


_CDFS: dict[int, list[float]] = {}


def _zipf_cdf(n: int) -> list[float]:
    if n not in _CDFS:
        total, acc, cdf = sum(1 / r for r in range(1, n + 1)), 0.0, []
        for r in range(1, n + 1):
            acc += 1 / r
            cdf.append(acc / total)
        _CDFS[n] = cdf
    return _CDFS[n]
