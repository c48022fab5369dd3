"""Driver-side handles of live computations, subscriptions and indexes.

They talk to the shards' :class:`~ephemeral.host.LiveHost` s through a backend: in this
process for :class:`~ephemeral.local.LiveLocalRuntime`, over Ray for ``GraphCluster``.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Protocol

from ephemeral.computation import Computation
from ephemeral.index import id_order
from ephemeral.notify import Lagged, Notification, NotificationFilter, StreamPosition
from shards.routing import shard_of
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = [
    "Index",
    "LiveBackend",
    "LiveComputation",
    "LiveComputationLost",
    "LocalBackend",
    "RayBackend",
    "Subscription",
    "new_id",
]


_CALL_MARGIN = 30.0


class LiveComputationLost(RuntimeError):
    """A live computation's state was lost with a shard process (it is kept in memory
    only): the computation and the shard are named; ``restart()`` starts it again."""


def new_id(prefix: str) -> str:
    """A fresh id for a computation or subscription."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class LiveBackend(Protocol):
    """How handles reach the shards' hosts."""

    num_shards: int
    blocking: bool
    """Whether a poll can wait for news from elsewhere (``False`` in-process, where
    nothing happens while the caller waits)."""

    def request(self, shard: int, method: str, *args: Any, wait: float = 0.0) -> Any:
        """Start calling ``method`` on ``shard``'s host; with ``wait``, a long poll."""

    def ready(self, requests: list[Any], timeout: float) -> list[Any]:
        """The requests among ``requests`` that are done (waiting up to ``timeout`` for one)."""

    def result(self, request: Any) -> Any:
        """The result of a done request."""

    def wait_idle(self) -> None:
        """Return once no message or computation message is pending anywhere."""

    def gone(self, error: BaseException) -> bool:
        """Whether ``error`` says the shard's process died or is restarting."""


def call_all(backend: LiveBackend, method: str, *args: Any) -> list[Any]:
    """``method`` on every shard's host, results in shard order."""
    requests = [backend.request(k, method, *args) for k in range(backend.num_shards)]
    return [backend.result(r) for r in requests]


class _Done:
    __slots__ = ("value", "error")

    def __init__(self, call: Callable[[], Any]) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        try:
            self.value = call()
        except Exception as exc:
            self.error = exc


class LocalBackend:
    """Calls hosts in this process (``hosts()`` returns them in shard order)."""

    blocking = False

    def __init__(self, hosts: Callable[[], list[Any]], wait_idle: Callable[[], Any]) -> None:
        self._hosts = hosts
        self._wait_idle = wait_idle
        self.num_shards = len(hosts())

    def request(self, shard: int, method: str, *args: Any, wait: float = 0.0) -> _Done:
        host = self._hosts()[shard]
        return _Done(lambda: getattr(host, method)(*args))

    def ready(self, requests: list[Any], timeout: float) -> list[Any]:
        return list(requests)

    def result(self, request: _Done) -> Any:
        if request.error is not None:
            raise request.error
        return request.value

    def wait_idle(self) -> None:
        self._wait_idle()

    def gone(self, error: BaseException) -> bool:
        return False  # a crashed shard here is rebuilt before the call returns


class RayBackend:
    """Calls the ``live``/``live_poll`` methods of ``ShardWorker`` actors."""

    blocking = True

    def __init__(self, actors: list[Any], wait_idle: Callable[[], Any]) -> None:
        self._actors = actors
        self._wait_idle = wait_idle
        self.num_shards = len(actors)

    def request(self, shard: int, method: str, *args: Any, wait: float = 0.0) -> Any:
        actor = self._actors[shard]
        if wait > 0:
            return actor.live_poll.remote(method, wait, *args)
        return actor.live.remote(method, *args)

    def ready(self, requests: list[Any], timeout: float) -> list[Any]:
        import ray

        done, _ = ray.wait(requests, num_returns=1, timeout=timeout)
        if done:  # take whatever else is done too
            more, _ = ray.wait(requests, num_returns=len(requests), timeout=0)
            return more
        return []

    def result(self, request: Any) -> Any:
        import ray

        return ray.get(request)

    def wait_idle(self) -> None:
        self._wait_idle()

    def gone(self, error: BaseException) -> bool:
        from ray.exceptions import ActorUnavailableError, RayActorError

        return isinstance(error, (RayActorError, ActorUnavailableError))


class LiveComputation:
    """A computation running on the graph, registered as :attr:`id`.

    Results are read while it runs: they reflect every change and message processed so
    far (call ``wait_idle`` on the graph first for a settled result). Its state lives in
    the shards' memory: once a shard process dies (and restarts from its log), every read
    raises :class:`LiveComputationLost` naming the computation and the shard, until
    :meth:`restart` starts it again on the graph as it is then.
    """

    def __init__(self, backend: LiveBackend, cid: str, computation: Computation) -> None:
        self._backend = backend
        self.id = cid
        self.computation = computation
        self._stopped = False

    def result(self) -> Any:
        """The aggregated result (the computation's ``combine`` of the shards' summaries)."""
        return self.computation.combine(self._on_all("summary", self.id))

    def values(self) -> dict[VertexId, Any]:
        """Every vertex's result (the computation's ``finalize`` of the raw values), by id."""
        raw: dict[VertexId, Any] = {}
        for part in self._on_all("values", self.id):
            raw.update(part)
        raw = {v: raw[v] for v in sorted(raw, key=id_order)}
        return self.computation.finalize(raw, self.result())

    def value(self, vertex_id: VertexId) -> Any:
        """One vertex's result; ``None`` if the computation has none for it."""
        shard = shard_of(vertex_id, self._backend.num_shards)
        raw = self._on(shard, "values", self.id, [vertex_id])
        if not raw:
            return None
        return self.computation.finalize(raw, self.result()).get(vertex_id)

    def stats(self) -> dict[str, Any]:
        """Counters summed over shards: active vertices, changes and messages handled,
        change batches taken (``batches``), messages waiting for a vertex not created
        yet, dropped, errors (with examples)."""
        total: dict[str, Any] = {"recent_errors": []}
        for part in self._on_all("stats", self.id):
            for key, value in part.items():
                if key == "recent_errors":
                    total[key] += value
                else:
                    total[key] = total.get(key, 0) + value
        return total

    def stop(self) -> None:
        """Stop the computation on every shard and drop its state."""
        self._stopped = True
        call_all(self._backend, "stop", self.id)

    def restart(self) -> None:
        """Start the computation again, under the same id, on every shard (stopped first
        where it still runs): it activates on the graph as it is now, as a new start
        does (what it had counted from earlier changes is not brought back)."""
        call_all(self._backend, "stop", self.id)
        start_computation(self._backend, self.computation, self.id)
        self._stopped = False

    def _on_all(self, method: str, *args: Any) -> list[Any]:
        requests = [
            self._backend.request(k, method, *args) for k in range(self._backend.num_shards)
        ]
        return [self._answer(k, r) for k, r in enumerate(requests)]

    def _on(self, shard: int, method: str, *args: Any) -> Any:
        return self._answer(shard, self._backend.request(shard, method, *args))

    def _answer(self, shard: int, request: Any) -> Any:
        """The result of a request to ``shard``'s host; :class:`LiveComputationLost` when
        the computation's state there was lost with the shard's process."""
        try:
            return self._backend.result(request)
        except Exception as exc:
            if self._stopped:
                raise
            missing = isinstance(exc, KeyError) and "no computation" in str(exc)
            if not (missing or self._backend.gone(exc)):
                raise
            how = "was lost" if missing else "is being lost"
            raise LiveComputationLost(
                f"live computation {self.id!r} ({type(self.computation).__name__}) {how} "
                f"on shard {shard}: the shard's process died and restarts from its log, and "
                f"a live computation's state is kept in memory only; call restart() to start "
                f"it again on the graph as it is now"
            ) from None

    def __repr__(self) -> str:
        return f"LiveComputation({self.id!r}, {type(self.computation).__name__})"


class Subscription:
    """A notification stream (see :mod:`ephemeral.notify` for its guarantees).

    ``poll`` returns what arrived; iterating yields items as they come (over Ray it
    blocks for more; in-process it stops once every buffer is empty). Items are
    :class:`~ephemeral.notify.Notification` s and :class:`~ephemeral.notify.Lagged`
    markers. Close it (or use it as a context manager) to free the shards' buffers.

    :attr:`position` is where the stream stands after the items returned so far; a
    subscription made with ``resume=`` that position goes on from there.
    """

    def __init__(
        self,
        backend: LiveBackend,
        sub_id: str,
        spec: NotificationFilter,
        position: StreamPosition,
    ) -> None:
        self._backend = backend
        self.id = sub_id
        self.spec = spec
        self.position = position
        self._requests: list[Any] = [None] * backend.num_shards
        self._closed = False

    def poll(self, timeout: float = 0.0, max_items: int = 10_000) -> list[Notification | Lagged]:
        """Items available now; if none, wait up to ``timeout`` seconds for some."""
        backend = self._backend
        wait = timeout if backend.blocking else 0.0
        for k, req in enumerate(self._requests):
            if req is None:
                self._requests[k] = backend.request(k, "poll", self.id, max_items, wait=wait)
        pending = [r for r in self._requests if r is not None]
        # a long poll answers within `wait`; the margin covers the call itself
        done = backend.ready(pending, wait + _CALL_MARGIN)
        out: list[Notification | Lagged] = []
        for k, req in enumerate(self._requests):
            if req is not None and any(req is d for d in done):
                self._requests[k] = None
                out.extend(backend.result(req))
        for item in out:
            if isinstance(item, Notification):
                self.position = self.position.advanced(item)
        return out

    def __iter__(self) -> Iterator[Notification | Lagged]:
        while not self._closed:
            items = self.poll(timeout=1.0)
            if not items and not self._backend.blocking:
                return
            yield from items

    def drain(self) -> list[Notification | Lagged]:
        """Everything buffered now on every shard: polls until one round brings nothing."""
        out: list[Notification | Lagged] = []
        while True:
            items = self.poll(timeout=0.0)
            out.extend(items)
            if not items and all(r is None for r in self._requests):
                return out

    def stats(self) -> dict[str, int]:
        """Delivered, missed (reported as lag) and buffered counts, summed over shards."""
        total: dict[str, int] = {}
        for part in call_all(self._backend, "stream_stats", self.id):
            for key, value in part.items():
                total[key] = total.get(key, 0) + value
        return total

    def close(self) -> None:
        """Stop the subscription on every shard."""
        if not self._closed:
            self._closed = True
            call_all(self._backend, "unsubscribe", self.id)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Index:
    """A secondary index of the graph (see :mod:`ephemeral.index`), gathered over shards."""

    def __init__(self, backend: LiveBackend, name: str) -> None:
        self._backend = backend
        self.name = name

    def lookup(self, key: Any) -> list[VertexId]:
        """Ids of the vertices whose key is ``key`` (ints first, then strings, sorted)."""
        ids = [v for part in call_all(self._backend, "index_lookup", self.name, key) for v in part]
        return sorted(ids, key=id_order)

    def range(self, lo: Any = None, hi: Any = None) -> list[VertexId]:
        """Ids of the vertices with ``lo <= key <= hi`` (``None``: unbounded), by key."""
        return [v for _, v in self.range_items(lo, hi)]

    def range_items(self, lo: Any = None, hi: Any = None) -> list[tuple[Any, VertexId]]:
        """``(key, id)`` pairs with ``lo <= key <= hi``, by key then id."""
        parts = call_all(self._backend, "index_range", self.name, lo, hi)
        return list(heapq.merge(*parts, key=lambda kv: (kv[0], id_order(kv[1]))))

    def __len__(self) -> int:
        return sum(call_all(self._backend, "index_size", self.name))


def start_computation(
    backend: LiveBackend, computation: Computation, cid: str | None = None
) -> LiveComputation:
    """Register ``computation`` on every shard (as ``cid``, default: a fresh id)."""
    if not isinstance(computation, Computation):
        raise TypeError(f"expected an ephemeral Computation, got {computation!r}")
    cid = cid or new_id(type(computation).__name__.lower())
    started: list[int] = []
    try:
        for k in range(backend.num_shards):
            backend.result(backend.request(k, "start", cid, computation))
            started.append(k)
    except Exception:
        for k in started:
            backend.result(backend.request(k, "stop", cid))
        raise
    return LiveComputation(backend, cid, computation)


def subscribe(
    backend: LiveBackend,
    spec: NotificationFilter,
    buffer: int,
    since: float | None,
    resume: StreamPosition | None = None,
) -> Subscription:
    """Open a subscription on every shard (``resume``: go on from that position of an
    earlier stream of the same filter; ``since`` is then the earlier stream's)."""
    sub_id = new_id("sub")
    if resume is not None:
        if len(resume.after) != backend.num_shards:
            raise ValueError(
                f"a stream position of {len(resume.after)} shards for a graph of "
                f"{backend.num_shards}"
            )
        spec = replace(spec, position=resume)
        since = None
    starts = call_all(backend, "subscribe", sub_id, spec, buffer, since)
    if resume is None:
        after = tuple(starts) if since is None else (0,) * len(starts)
        resume = StreamPosition(tuple(starts), after, since)
    return Subscription(backend, sub_id, spec, resume)


mark_module_api(
    globals(),
    public=(
        "Index",
        "LiveComputation",
        "LiveComputationLost",
        "Subscription",
    ),
)
