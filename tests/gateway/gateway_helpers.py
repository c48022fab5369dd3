"""Shared pieces of the gateway tests: a named graph with a real gRPC server in front of
it on loopback, clients, and the graph's log positions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import chronoray as cr
from chronoray.client import GatewayClient
from chronoray.gateway import Gateway, GatewaySettings

TOKEN = "gateway-test-token"


@contextmanager
def served_graph(
    name: str, tmp: Path, shards: int = 2, **settings: Any
) -> Iterator[tuple[cr.GraphCluster, Gateway]]:
    """A new named graph ``name`` with a gateway on a free loopback port (token
    :data:`TOKEN`); both stopped at the end."""
    graph = cr.GraphCluster.create(name, num_shards=shards, log_dir=str(tmp / name))
    try:
        options = {"port": 0, "token": TOKEN, "output_dir": str(tmp / "out"), **settings}
        gateway = Gateway(graph, GatewaySettings(**options)).start()
        try:
            yield graph, gateway
        finally:
            gateway.stop(grace=0)
    finally:
        graph.shutdown()


def client(gateway: Gateway, **options: Any) -> GatewayClient:
    """A client of ``gateway`` with the test token (unless ``token=`` is given)."""
    options.setdefault("token", TOKEN)
    return GatewayClient(gateway.address, **options)


def log_positions(graph: cr.GraphCluster) -> list[tuple[Any, ...]]:
    """What must not change when a request is refused: per shard, its log position (worker
    clock), what it applied per channel, its vertex and edge counts."""
    return [
        (s.worker_clock, sorted(s.applied.items()), s.vertices, s.edges)
        for s in graph.stats().shards
    ]


def graph_pairs(graph: cr.GraphCluster) -> dict[tuple[Any, Any], int]:
    """``(src, dst) -> count`` of the live graph."""
    return {(s, d): props["count"] for s, d, props in graph.edges()}
