"""What every call passes before it reaches the graph: the token and the rate limit.

:class:`Guard` is a gRPC server interceptor. A call without the right token (metadata
``authorization: Bearer <token>``, compared in constant time) is refused with
UNAUTHENTICATED before its handler runs; only the standard health check is open (so load
balancers and orchestrators can probe the server). A call from a client address over its
rate (:class:`RateLimiter`, a token bucket per address) is refused with
RESOURCE_EXHAUSTED, saying when to retry (also in the trailing metadata
:data:`RETRY_AFTER`, which :mod:`chronoray.client` honours). Ingestion batches count
against the same bucket but wait for their turn instead (:meth:`RateLimiter.wait`): a
stream is slowed, not broken.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

__all__ = ["Guard", "OPEN_METHODS", "RETRY_AFTER", "RateLimiter", "client_address"]

OPEN_METHODS = frozenset({"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"})
"""Methods that need no token."""
RETRY_AFTER = "retry-after"
"""Trailing metadata of a call refused by the rate limit: seconds until it would pass."""


def client_address(context: grpc.ServicerContext) -> str:
    """The host part of a call's peer (``ipv4:127.0.0.1:5123`` -> ``127.0.0.1``): what a
    rate limit is counted per."""
    peer = context.peer() or "unknown"
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return rest.rpartition(":")[0].strip("[]")
    return peer


class RateLimiter:
    """A token bucket per client: ``rate`` requests per second, ``burst`` at once.

    >>> limiter = RateLimiter(rate=1.0, burst=2)
    >>> [limiter.take("a", now=0.0) for _ in range(3)]  # seconds to wait; 0: admitted
    [0.0, 0.0, 1.0]
    >>> limiter.take("a", now=1.0), limiter.take("b", now=1.0)
    (0.0, 0.0)
    """

    _IDLE = 600.0  # a bucket untouched this long is full again: forget it

    def __init__(self, rate: float, burst: int) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limit needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, client: str, now: float | None = None) -> float:
        """Take one request for ``client``: 0.0 if admitted, else the seconds until it
        would be (nothing taken then)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, at = self._buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                wait = 0.0
            else:
                self._buckets[client] = (tokens, now)
                wait = (1.0 - tokens) / self.rate
            if len(self._buckets) > 10_000:
                self._forget_idle(now)
            return wait

    def wait(self, client: str) -> None:
        """Take one request for ``client``, sleeping until it is admitted."""
        while (delay := self.take(client)) > 0:
            time.sleep(delay)

    def _forget_idle(self, now: float) -> None:
        idle = [c for c, (_, at) in self._buckets.items() if now - at > self._IDLE]
        for client in idle:
            del self._buckets[client]


def _authorized(metadata: Any, token: str) -> bool:
    expected = f"Bearer {token}".encode()
    for key, value in metadata or ():
        if key == "authorization":
            given = value.encode() if isinstance(value, str) else bytes(value)
            return hmac.compare_digest(given, expected)
    return False


class Guard(grpc.ServerInterceptor):
    """Token check and rate limit in front of every method (see the module doc).
    ``token=None``: no authentication; ``limiter=None``: no rate limit."""

    def __init__(self, token: str | None, limiter: RateLimiter | None) -> None:
        self.token = token
        self.limiter = limiter

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(details)
        if handler is None or details.method in OPEN_METHODS:
            return handler
        if self.token is not None and not _authorized(details.invocation_metadata, self.token):
            return _wrapped(handler, _refuse(grpc.StatusCode.UNAUTHENTICATED, _TOKEN_HELP))
        if self.limiter is not None:
            return _wrapped(handler, self._admit)
        return handler

    def _admit(self, context: grpc.ServicerContext) -> None:
        assert self.limiter is not None
        wait = self.limiter.take(client_address(context))
        if wait > 0:
            context.set_trailing_metadata(((RETRY_AFTER, f"{wait:.3f}"),))
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"rate limit of {self.limiter.rate:g} requests/s exceeded; retry in {wait:.2f} s",
            )


_TOKEN_HELP = (
    "missing or wrong token: send metadata 'authorization: Bearer <token>' "
    "(chronoray.client reads CHRONORAY_GATEWAY_TOKEN, CHRONORAY_GATEWAY_TOKEN_FILE or "
    "~/.chronoray/gateway-token)"
)


def _refuse(code: grpc.StatusCode, message: str) -> Callable[[grpc.ServicerContext], None]:
    def check(context: grpc.ServicerContext) -> None:
        context.abort(code, message)

    return check


def _wrapped(
    handler: grpc.RpcMethodHandler, check: Callable[[grpc.ServicerContext], None]
) -> grpc.RpcMethodHandler:
    """``handler`` with ``check(context)`` run first (it aborts the call to refuse it)."""
    if handler.request_streaming and handler.response_streaming:
        behavior, make = handler.stream_stream, grpc.stream_stream_rpc_method_handler
    elif handler.request_streaming:
        behavior, make = handler.stream_unary, grpc.stream_unary_rpc_method_handler
    elif handler.response_streaming:
        behavior, make = handler.unary_stream, grpc.unary_stream_rpc_method_handler
    else:
        behavior, make = handler.unary_unary, grpc.unary_unary_rpc_method_handler

    if handler.response_streaming:

        def streaming(request: Any, context: grpc.ServicerContext) -> Any:
            check(context)
            yield from behavior(request, context)

        guarded: Callable[..., Any] = streaming
    else:

        def guarded(request: Any, context: grpc.ServicerContext) -> Any:
            check(context)
            return behavior(request, context)

    return make(  # type: ignore[no-any-return]
        guarded,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
