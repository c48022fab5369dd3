"""The network gateway: chronoray's gRPC API (``chronoray.v1``) in front of a running
named graph -- ingestion acknowledged once logged, queries now and in the past,
snapshots, subscriptions with resume, Spark analyses -- with token authentication, TLS,
message-size and rate limits.

* :class:`Gateway` (:mod:`~chronoray.gateway.server`): the server, in this process or as a
  detached Ray actor (:func:`start_gateway_actor`); ``chronoray serve`` runs it.
* :class:`GatewaySettings` (:mod:`~chronoray.gateway.settings`): how it listens,
  authenticates and limits.
* :mod:`~chronoray.gateway.service`: the RPC handlers; :mod:`~chronoray.gateway.wire`:
  Python values <-> messages; :mod:`~chronoray.gateway.arrow_wire`: ingestion batches as
  Arrow IPC columns, checked as vectors; :mod:`~chronoray.gateway.guard`: token and rate limit;
  :mod:`~chronoray.gateway.predicates`: named subscription predicates.

The client is :mod:`chronoray.client`.
"""

from chronoray.gateway.predicates import PREDICATES, register_predicate
from chronoray.gateway.server import (
    Gateway,
    GatewayActor,
    GatewayRunning,
    serve,
    start_gateway_actor,
    stop_gateway_actor,
)
from chronoray.gateway.settings import GatewaySettings

__all__ = [
    "PREDICATES",
    "Gateway",
    "GatewayActor",
    "GatewayRunning",
    "GatewaySettings",
    "register_predicate",
    "serve",
    "start_gateway_actor",
    "stop_gateway_actor",
]
