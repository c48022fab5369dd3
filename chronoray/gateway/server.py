"""The gateway server: a gRPC server in front of one running named graph.

:class:`Gateway` builds it -- the ``chronoray.v1.Gateway`` service, the standard health
service and server reflection, behind :class:`~chronoray.gateway.guard.Guard` (token,
rate limit), listening in plaintext or TLS -- and runs it in this process
(``chronoray serve --graph NAME``, which also runs as a ``ray job submit`` job); a
:class:`GatewayActor` runs it as a detached Ray actor of the graph instead
(``chronoray serve --graph NAME --detach``).

Limits (:class:`~chronoray.gateway.settings.GatewaySettings`): the largest message either
way; the HTTP/2 window of each stream (with bandwidth-delay probing off, so the window
cannot grow: a client sends at most that far ahead of what the server took); calls served
at once; requests per second per client address.

Graceful shutdown (:meth:`Gateway.stop`): health turns NOT_SERVING, no new call is
accepted, ingestion streams take no new batch and end after the ones they took (each
acknowledged if it was logged in time, else not: the client resends it after reconnecting
and the graph skips what it applied), calls get ``grace`` seconds; then the server waits
for every handler to finish its batches and closes the sources it fed. An acknowledgement
is only ever sent for a batch the shards logged.

The gateway watches its graph: while a shard's node is gone or a shard has not answered
for 15 s, the health status of ``chronoray.v1.Gateway`` is NOT_SERVING; when the graph is
stopped (``chronoray stop``), a gateway actor stops too.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import ray
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from chronoray.config import Config
from chronoray.connect import ensure_ray
from chronoray.controller import graph_namespace
from chronoray.gateway.guard import Guard, RateLimiter
from chronoray.gateway.service import GatewayService
from chronoray.gateway.settings import GatewaySettings
from chronoray.graph import GraphCluster
from chronoray.v1 import gateway_pb2 as pb
from chronoray.v1 import gateway_pb2_grpc as pbg
from shards.remote import actor_class
from shards.worker import ACTOR_ERRORS

__all__ = [
    "GATEWAY_ACTOR",
    "SERVICE_NAME",
    "Gateway",
    "GatewayActor",
    "GatewayRunning",
    "serve",
    "start_gateway_actor",
    "stop_gateway_actor",
]

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Gateway"].full_name
"""``chronoray.v1.Gateway``."""
GATEWAY_ACTOR = "gateway"
"""The name of a graph's gateway actor, in the graph's namespace."""
_WATCH = 2.0  # seconds between looks at the graph
_PATIENCE = 15.0  # seconds a shard may be silent (busy with a batch) before NOT_SERVING


class GatewayRunning(ValueError):
    """A gateway actor serves the graph already."""


def _options(s: GatewaySettings) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", s.max_message_bytes),
        ("grpc.max_send_message_length", s.max_message_bytes),
        ("grpc.http2.bdp_probe", 0),  # a fixed window: what a client sends ahead is bounded
        ("grpc.http2.lookahead_bytes", s.stream_window_bytes),
        ("grpc.so_reuseport", 0),  # a port in use is refused, not shared with another server
    ]


class Gateway:
    """A gRPC server in front of the running graph ``graph`` (a name, attached to; or a
    handle). :meth:`start` it, :meth:`stop` it (or use it as a context manager);
    :attr:`port` is the port it listens on (useful with ``port=0``)."""

    def __init__(
        self,
        graph: GraphCluster | str,
        settings: GatewaySettings | None = None,
        config: Config | None = None,
    ) -> None:
        self.settings = s = settings or GatewaySettings.load()
        self._owns_graph = not isinstance(graph, GraphCluster)
        self.graph = GraphCluster.attach(graph, config) if isinstance(graph, str) else graph
        self.token = s.server_token()
        limiter = RateLimiter(s.rate_limit, s.rate_burst) if s.rate_limit > 0 else None
        self.service = GatewayService(self.graph, s, limiter)
        self.health = health.HealthServicer()
        self.server = grpc.server(
            ThreadPoolExecutor(max_workers=s.max_calls + 4, thread_name_prefix="gateway"),
            interceptors=[Guard(self.token, limiter)],
            options=_options(s),
            maximum_concurrent_rpcs=s.max_calls,
        )
        pbg.add_GatewayServicer_to_server(self.service, self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        names = (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, self.server)
        self.port = self._listen()
        self.on_graph_gone: Any = None
        """Called (no arguments) once the graph is found stopped."""
        self._stopped = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="gateway-watch", daemon=True)

    def _listen(self) -> int:
        s = self.settings
        host = f"[{s.host}]" if ":" in s.host else s.host
        address = f"{host}:{s.port}"
        try:
            if s.tls:
                assert s.tls_cert is not None and s.tls_key is not None
                key, cert = Path(s.tls_key).read_bytes(), Path(s.tls_cert).read_bytes()
                port = self.server.add_secure_port(
                    address, grpc.ssl_server_credentials([(key, cert)])
                )
            else:
                port = self.server.add_insecure_port(address)
        except RuntimeError:
            port = 0
        if not port:
            raise OSError(f"cannot listen on {address} (is the port in use?)")
        return port  # type: ignore[no-any-return]

    @property
    def address(self) -> str:
        """``HOST:PORT`` clients connect to."""
        host = f"[{self.settings.host}]" if ":" in self.settings.host else self.settings.host
        return f"{host}:{self.port}"

    def describe(self) -> str:
        """One line: graph, address, TLS, authentication (and a warning when a token would
        travel in clear beyond this machine)."""
        s = self.settings
        auth = "token authentication" if self.token else "NO authentication"
        where = "TLS" if s.tls else "plaintext"
        line = f"serving graph {self.graph.name or '?'} on {self.address} ({where}, {auth})"
        if self.token and not s.tls and not _loopback(s.host):
            line += "; WARNING: the token travels in clear, use --tls-cert/--tls-key"
        return line

    def start(self) -> Gateway:
        """Start serving; returns self. Starting a started gateway does nothing, so
        ``with Gateway(...).start() as g:`` and ``with Gateway(...) as g:`` both work."""
        if self._watcher.ident is not None and not self._stopped.is_set():
            return self  # started already (a stopped gateway is not restarted: gRPC refuses)
        self.server.start()
        self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        self._watcher.start()
        return self

    def stop(self, grace: float | None = None) -> None:
        """Stop serving (see the module doc); ``grace`` seconds for calls in progress
        (default: the settings'). Detaches from a graph it attached to by name."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.health.enter_graceful_shutdown()
        self.service.draining.set()
        self.server.stop(self.settings.grace if grace is None else grace).wait()
        if not self.service.counters.wait_closed(timeout=120.0):
            log.warning("gateway stopped with streams still finishing their batch")
        if self._owns_graph:
            self.graph.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stopped (``True``) or ``timeout`` passed (``False``)."""
        return not self.server.wait_for_termination(timeout)

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _watch(self) -> None:
        """Health follows the graph: NOT_SERVING while a shard's node is gone or a shard
        has not answered for ``_PATIENCE`` seconds (a shard busy with a large batch on a
        loaded machine misses a look or two and is still serving); the graph gone calls
        :attr:`on_graph_gone`."""
        status = health_pb2.HealthCheckResponse
        silent_since: dict[int, float] = {}
        while not self._stopped.wait(_WATCH):
            try:
                missing = self.graph.status(timeout=_WATCH).missing
            except ACTOR_ERRORS:
                self.health.set(SERVICE_NAME, status.NOT_SERVING)
                if self.on_graph_gone is not None:
                    self.on_graph_gone()
                return
            serving = _serving(missing, silent_since, time.monotonic())
            self.health.set(SERVICE_NAME, status.SERVING if serving else status.NOT_SERVING)


def _serving(missing: list[dict[str, Any]], silent_since: dict[int, float], now: float) -> bool:
    """Whether the graph serves, given the shards that did not answer this look;
    ``silent_since`` (updated) holds when each of them first stopped answering."""
    silent = {s["shard"] for s in missing}
    for shard in set(silent_since) - silent:  # it answered: its count ends
        del silent_since[shard]
    for shard in silent:  # every silent shard's count starts now, whatever the verdict
        silent_since.setdefault(shard, now)
    return all(s["node_alive"] and now - silent_since[s["shard"]] < _PATIENCE for s in missing)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(
    graph: str,
    settings: GatewaySettings | None = None,
    config: Config | None = None,
    announce: Callable[[str], Any] = print,
) -> Gateway:
    """Run a gateway for ``graph`` in this process until SIGINT or SIGTERM (or until the
    graph stops), then stop it gracefully; returns the stopped gateway. ``announce`` gets
    the line saying where it serves."""
    gateway = Gateway(graph, settings, config)
    done = threading.Event()
    gateway.on_graph_gone = done.set
    previous = {
        sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        gateway.start()
        announce(gateway.describe())
        done.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        gateway.stop()
    return gateway


class GatewayActor:
    """A gateway running as a detached Ray actor in its graph's namespace
    (``ray.remote(GatewayActor)``, threaded; see :func:`start_gateway_actor`). It stops
    when the graph stops."""

    def __init__(self, graph: str, settings: dict[str, Any]) -> None:
        self.gateway = Gateway(graph, GatewaySettings(**settings))
        self.gateway.on_graph_gone = self._end
        self.gateway.start()

    def address(self) -> str:
        """``HOST:PORT`` of the server."""
        return self.gateway.address

    def describe(self) -> str:
        """One line: graph, address, TLS, authentication."""
        return self.gateway.describe()

    def pid(self) -> int:
        """The actor's process id (benchmarks read its CPU time; tests may kill it)."""
        return os.getpid()

    def stop(self, grace: float | None = None) -> None:
        """Stop the server gracefully, then the actor."""
        self.gateway.stop(grace)
        ray.actor.exit_actor()

    def _end(self) -> None:
        self.gateway.stop(0)
        ray.kill(ray.get_runtime_context().current_actor, no_restart=True)


def start_gateway_actor(
    graph: str, settings: GatewaySettings | None = None, config: Config | None = None
) -> str:
    """Start a :class:`GatewayActor` for the running graph ``graph`` on this driver's node
    (where its host and port are); returns the line describing it.
    :class:`GatewayRunning` if the graph has one already, ``GraphNotFound`` if the graph
    does not run. The token travels to the actor as an argument, inside the cluster."""
    settings = settings or GatewaySettings.load()
    GraphCluster.attach(graph, config).close()  # GraphNotFound, in one line
    namespace = graph_namespace(graph)
    try:
        running = ray.get_actor(GATEWAY_ACTOR, namespace=namespace)
    except ValueError:
        running = None
    if running is not None:
        where = ray.get(running.describe.remote())
        raise GatewayRunning(f"a gateway actor is {where} already")
    resolved = settings.as_dict() | {"token": settings.server_token(), "auth": settings.auth}
    actor = (
        actor_class(GatewayActor)
        .options(
            name=GATEWAY_ACTOR,
            namespace=namespace,
            lifetime="detached",
            num_cpus=0,
            max_concurrency=4,
            scheduling_strategy=NodeAffinitySchedulingStrategy(
                ray.get_runtime_context().get_node_id(), soft=False
            ),
        )
        .remote(graph, resolved)
    )
    try:
        return ray.get(actor.describe.remote())  # type: ignore[no-any-return]
    except ray.exceptions.ActorDiedError as exc:
        raise RuntimeError(_cause_line(exc)) from None


def stop_gateway_actor(graph: str, config: Config | None = None, grace: float = 10.0) -> bool:
    """Stop the gateway actor of ``graph`` gracefully; ``False`` if there is none."""
    ensure_ray(config or Config.load())
    try:
        actor = ray.get_actor(GATEWAY_ACTOR, namespace=graph_namespace(graph))
    except ValueError:
        return False
    try:
        ray.get(actor.stop.remote(grace))  # the actor ends itself
    except ACTOR_ERRORS:
        pass
    return True


def _cause_line(exc: BaseException) -> str:
    """The last line of the error that ended an actor's constructor."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error:" in ln or "Exception:" in ln]
    return (errors or lines or [type(exc).__name__])[-1]
