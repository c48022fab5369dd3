"""``Graph``: what both runtimes offer -- the in-process ``LocalRuntime``
(``chronoray.testing``) and the Ray ``GraphCluster`` -- so code and tests written against it
run on either (``isinstance(graph, Graph)`` checks the methods, not the class).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from ephemeral.computation import Computation
from ephemeral.live import Index, LiveComputation, Subscription
from ephemeral.notify import StreamPosition
from vertex.annotations import mark_module_api
from vertex.records import Update, VertexId

__all__ = ["Graph"]


@runtime_checkable
class Graph(Protocol):
    """A live graph: ingest updates, query vertices, run live computations, subscribe,
    and read each shard's log."""

    num_shards: int

    def ingest(self, updates: Iterable[Update], /) -> Any:
        """Apply ``updates`` and return once they and what they caused are applied."""
        ...

    def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """Type, clock, time, state and edges of a vertex (``VertexNotFound`` if absent)."""
        ...

    def wait_idle(self) -> None:
        """Return once no message is pending anywhere."""
        ...

    def wait_until_complete(self, t: float, timeout: float = 120.0) -> None:
        """Return once every update of time ``<= t`` and what it caused is logged."""
        ...

    def start_computation(self, computation: Computation, id: str | None = None) -> LiveComputation:
        """Start an ephemeral live computation."""
        ...

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
        """A notification stream of vertex updates."""
        ...

    def index(self, name: str) -> Index:
        """A secondary index declared by the vertex classes."""
        ...

    def read_logs(
        self, function: Callable[..., Any], args: dict[int, tuple[Any, ...]]
    ) -> dict[int, Any]:
        """``function(store, *args[k])`` on a read-only view of shard ``k``'s log, for
        every ``k`` in ``args``."""
        ...

    def close(self) -> None:
        """Let go of the graph."""
        ...


mark_module_api(globals(), public=("Graph",))
