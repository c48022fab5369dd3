"""Helpers for testing graphs and vertex classes (yours and chronoray's own).

* :class:`LocalRuntime` runs a graph in this process, without Ray, in milliseconds, with
  live computations, notification streams and indexes (``ephemeral.LiveLocalRuntime``).
* :func:`edge_oracle` reads an edge file independently of chronoray's sources, as the
  truth to compare a graph with.
* :func:`kill_shard` kills a shard actor's process (``SIGKILL``, no clean stop), the way a
  crash would.
* :class:`TokenVertex` and :func:`causality_violations` check that a past snapshot is a
  consistent cut: no vertex in it holds the effect of a message whose sending is not in it.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import ray

from ephemeral.local import LiveLocalRuntime as LocalRuntime
from vertex import Context, TemporalVertex, UpdateKind, VertexId

__all__ = [
    "EdgeOracle",
    "IndexedVertex",
    "LocalRuntime",
    "TokenVertex",
    "causality_violations",
    "edge_oracle",
    "kill_shard",
    "oracle_graph",
    "pair_counts",
    "pair_counts_between",
]

EdgeOracle = dict[tuple[int, int], list[tuple[float, float]]]


def edge_oracle(path: str | Path, fmt: Literal["snap", "bitcoin-csv"]) -> EdgeOracle:
    """``(src, dst) -> [(ts, weight), ...]`` in file order, parsed with nothing but ``split``.

    SNAP lines have no weight (0.0 is used).
    """
    sep = "," if fmt == "bitcoin-csv" else None
    pairs: EdgeOracle = {}
    with Path(path).open() as f:
        for line in f:
            fields = line.split(sep)
            if fmt == "bitcoin-csv":
                ts, weight = float(fields[3]), float(fields[2])
            else:
                ts, weight = float(fields[2]), 0.0
            pairs.setdefault((int(fields[0]), int(fields[1])), []).append((ts, weight))
    return pairs


def pair_counts(oracle: EdgeOracle) -> Counter[tuple[int, int]]:
    """Occurrences per ``(src, dst)`` pair."""
    return Counter({pair: len(events) for pair, events in oracle.items()})


def pair_counts_between(
    oracle: EdgeOracle, t1: float, t0: float = float("-inf")
) -> dict[tuple[int, int], int]:
    """Occurrences per pair with time in ``[t0, t1]`` (pairs with none left out): what a
    time cut at ``t1`` (or a window ``(t0, t1)``) must hold.

    >>> pair_counts_between({(1, 2): [(5.0, 0.0), (9.0, 0.0)], (2, 3): [(8.0, 0.0)]}, 8.0)
    {(1, 2): 1, (2, 3): 1}
    """
    counts = {}
    for pair, events in oracle.items():
        n = sum(1 for ts, _ in events if t0 <= ts <= t1)
        if n:
            counts[pair] = n
    return counts


def oracle_graph(oracle: EdgeOracle, at: float = float("inf")) -> Any:
    """The ``networkx.DiGraph`` of the pairs with an occurrence at time ``<= at``, each
    edge with its ``count``: what analyses of a time cut at ``at`` are compared with.

    >>> g = oracle_graph({(1, 2): [(5.0, 0.0), (9.0, 0.0)], (2, 3): [(8.0, 0.0)]}, 8.0)
    >>> sorted(g.edges(data="count")), sorted(g)
    ([(1, 2, 1), (2, 3, 1)], [1, 2, 3])
    """
    import networkx as nx

    graph = nx.DiGraph()
    for (src, dst), n in pair_counts_between(oracle, at).items():
        graph.add_edge(src, dst, count=n)
    return graph


def kill_shard(graph: Any, shard: int) -> int:
    """SIGKILL the process of ``graph``'s shard actor ``shard``; returns the killed pid.

    Ray restarts the actor (``max_restarts``); the new process recovers from its log.
    """
    pid: int = ray.get(graph.shards[shard].pid.remote())
    os.kill(pid, signal.SIGKILL)
    return pid


class TokenVertex(TemporalVertex):
    """A temporal vertex that, on every edge occurrence it owns, sends a token to the
    edge's target; a vertex remembers in ``state["tokens"]`` (sender -> sender clock) the
    latest token it got from each sender. Tokens cross shards like any message."""

    type_name: ClassVar[str] = "TokenVertex"

    def on_edge_event(
        self, ctx: Context, kind: UpdateKind, dst: VertexId, ts: float, props: Mapping[str, Any]
    ) -> None:
        super().on_edge_event(ctx, kind, dst, ts, props)
        ctx.send(dst, {"token": ctx.clock})

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        if "token" in msg:
            tokens = dict(ctx.state.get("tokens", {}))
            tokens[str(ctx.sender)] = max(msg["token"], tokens.get(str(ctx.sender), 0))
            ctx.state["tokens"] = tokens


class IndexedVertex(TemporalVertex):
    """A temporal vertex with secondary indexes: ``out_degree``, ``in_degree``, ``parity``
    of the messages it sent (a string key) and ``hub`` (in-degree, for vertices with at
    least 50 in-edges only)."""

    type_name: ClassVar[str] = "IndexedVertex"
    indexes: ClassVar[dict[str, Any]] = {
        "out_degree": lambda s: s["out_degree"],
        "in_degree": lambda s: s["in_degree"],
        "parity": lambda s: "even" if s["sent"] % 2 == 0 else "odd",
        "hub": lambda s: s["in_degree"] if s["in_degree"] >= 50 else None,
    }


def causality_violations(vertices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Check a cut of a :class:`TokenVertex` graph: every token a vertex holds must have
    been sent by an execution inside the cut (sender present with clock >= the token's).

    ``vertices`` are rows with ``id``, ``clock`` and ``tokens`` (a dict, or its JSON text
    as in snapshot tables). Returns a description of each violation (empty: consistent).
    """
    import json

    rows = list(vertices)
    clocks = {str(row["id"]): row["clock"] for row in rows}
    problems = []
    for row in rows:
        tokens = row.get("tokens") or {}
        if isinstance(tokens, str):
            tokens = json.loads(tokens)
        for sender, sent_at in tokens.items():
            if clocks.get(sender, 0) < sent_at:
                problems.append(
                    f"vertex {row['id']} holds a token sent by {sender} at clock {sent_at}, "
                    f"but the cut has {sender} at clock {clocks.get(sender)}"
                )
    return problems
