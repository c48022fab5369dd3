"""``LiveLocalRuntime``: the in-process runtime with live computations, streams and indexes.

The same API as ``GraphCluster`` (:meth:`~LiveLocalRuntime.start_computation`,
:meth:`~LiveLocalRuntime.subscribe`, :meth:`~LiveLocalRuntime.index`) on a graph that runs
in this thread, for tests and examples. ``chronoray.testing.LocalRuntime`` is this class.

>>> from ephemeral.algorithms.degree_histogram import DegreeHistogram
>>> from vertex import Update
>>> rt = LiveLocalRuntime(2)
>>> hist = rt.start_computation(DegreeHistogram())
>>> rt.ingest([Update.add_edge(1, 2), Update.add_edge(1, 3)])
>>> hist.result()["out"]
{0: 2, 2: 1}
>>> rt.close()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ephemeral.computation import Computation
from ephemeral.host import LiveHost
from ephemeral.live import (
    Index,
    LiveComputation,
    LocalBackend,
    Subscription,
    start_computation,
    subscribe,
)
from ephemeral.notify import NotificationFilter, StreamPosition
from shards.local import LocalRuntime
from shards.logstore import LogStore
from vertex.model import VertexTypes
from vertex.records import VertexId

__all__ = ["LiveLocalRuntime"]


class LiveLocalRuntime(LocalRuntime):
    """A :class:`~shards.local.LocalRuntime` whose shards host live computations."""

    def __init__(
        self,
        num_shards: int = 2,
        types: VertexTypes | None = None,
        store_factory: Callable[[int], LogStore | None] | None = None,
        **options: Any,
    ) -> None:
        options.setdefault("host_factory", LiveHost)
        super().__init__(num_shards, types, store_factory, **options)
        self._backend = LocalBackend(lambda: [c.observer for c in self.cores], self.wait_idle)

    def start_computation(self, computation: Computation, id: str | None = None) -> LiveComputation:
        """Register an ephemeral computation on the running graph (see ``GraphCluster``)."""
        live = start_computation(self._backend, computation, id)
        self.run_until_quiet()
        return live

    def computation(self, id: str, computation: Computation) -> LiveComputation:
        """A handle on the running computation ``id`` (``computation``: its object)."""
        return LiveComputation(self._backend, id, computation)

    def subscribe(
        self,
        types: Iterable[str] | str | None = None,
        ids: Iterable[VertexId] | VertexId | None = None,
        predicate: Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], bool]
        | None = None,
        *,
        buffer: int = 10_000,
        since: float | None = None,
        resume: StreamPosition | None = None,
    ) -> Subscription:
        """A notification stream of vertex updates (see ``GraphCluster.subscribe``)."""
        spec = NotificationFilter.of(types, ids, predicate)
        return subscribe(self._backend, spec, buffer, since, resume)

    def index(self, name: str) -> Index:
        """The secondary index ``name`` declared by the vertex classes."""
        names = self.cores[0].observer.index_names()  # type: ignore[union-attr]
        if name not in names:
            raise KeyError(f"no index {name!r} (declared: {', '.join(names) or 'none'})")
        return Index(self._backend, name)
