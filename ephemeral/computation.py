"""The ephemeral computation model: a ``Computation`` base class and the context its hooks get.

An ephemeral computation (thesis ch. 9.3.2) is an overlay on the live, event-sourced
graph. It is registered on the running graph with an id and parameters (the attributes of
the ``Computation`` object), and then:

* **activates** on every vertex that :meth:`Computation.matches` -- the vertices there at
  registration and every vertex created later (a vertex that does not match is checked
  again at each of its changes);
* keeps **per-vertex ephemeral state** (``ctx.state``) and one **per-shard aggregate**
  (``ctx.aggregate``), both in memory only;
* reacts to **every change** of its vertices (:meth:`Computation.on_change`, right after
  the logged behavior execution, in the vertex's clock order) and to **its own messages**
  (:meth:`Computation.on_message`), sent with ``ctx.send`` to other vertices of the same
  computation; they travel in the ordinary shard-to-shard batches as their unlogged part;
* can only **read** the event-sourced vertex (``ctx.vertex``): it cannot change it, send
  it messages or write the log. Logs are byte-for-byte the same with or without it;
* is **lost on a crash** of a shard: a restarted shard comes back without the
  computation; stop it and start it again to recompute;
* can be **stopped**; its results are **queryable while it runs**, per vertex and
  aggregated (:meth:`Computation.value`, :meth:`Computation.summarize`,
  :meth:`Computation.combine`, :meth:`Computation.finalize`).

Hooks run on the shard, one at a time, so they need no locks; an exception in a hook is
counted in the computation's ``errors`` and the rest of that hook's effects still apply
(messages already sent stay sent). Hooks should be quick: they delay the shard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from shards.observe import VertexChange, VertexView
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["Computation", "EphemeralContext", "VertexView"]


class EphemeralContext:
    """What a computation hook sees and does on one vertex.

    ``vertex_id``; ``state`` (this vertex's ephemeral state: read it, or assign a new
    value); ``aggregate`` (the computation's per-shard aggregate, mutable); ``vertex`` (a
    :class:`VertexView` of the event-sourced vertex, read-only); ``computation`` (the
    computation object, with its parameters). :meth:`send` messages other vertices of the
    same computation; :meth:`deactivate` ends this vertex's participation.
    """

    __slots__ = (
        "vertex_id",
        "state",
        "aggregate",
        "vertex",
        "computation",
        "_send",
        "_send_many",
        "inactive",
    )

    def __init__(
        self,
        vertex_id: VertexId,
        state: Any,
        aggregate: Any,
        vertex: VertexView,
        computation: Computation,
        send: Callable[[VertexId, Any], None],
        send_many: Callable[[Iterable[VertexId], Any], None],
    ) -> None:
        self.vertex_id = vertex_id
        self.state = state
        self.aggregate = aggregate
        self.vertex = vertex
        self.computation = computation
        self._send = send
        self._send_many = send_many
        self.inactive = False

    def send(self, dst: VertexId, payload: Any) -> None:
        """Send ``payload`` to the computation's instance on vertex ``dst`` (no edge
        needed). Delivered once ``dst`` exists and matches; dropped if ``dst`` exists and
        does not match. Combined with other messages to ``dst`` if the computation has a
        :meth:`Computation.combine_messages`."""
        self._send(dst, payload)

    def send_to_out_neighbors(self, payload: Any) -> None:
        """Send ``payload`` to every target of an outgoing edge of this vertex."""
        self._send_many(self.vertex.out_edges, payload)

    def send_to_in_neighbors(self, payload: Any) -> None:
        """Send ``payload`` to every source of an incoming edge of this vertex."""
        self._send_many(self.vertex.in_edges, payload)

    def deactivate(self) -> None:
        """Drop this vertex's ephemeral state and stop running hooks on it."""
        self.inactive = True


class Computation:
    """Base class of ephemeral computations; override the hooks you need.

    Parameters are plain attributes set in ``__init__`` (the object is pickled to every
    shard). ``vertex_types`` restricts activation to vertex classes with those
    ``type_name`` s (``None``: every vertex); override :meth:`matches` for more.
    """

    combines: ClassVar[bool] = False
    """Whether :meth:`combine_messages` merges messages to the same vertex while they
    wait to be sent (like a Pregel combiner); order between messages is then lost."""

    def __init__(self, vertex_types: Iterable[str] | None = None) -> None:
        self.vertex_types = None if vertex_types is None else frozenset(vertex_types)

    @property
    def params(self) -> dict[str, Any]:
        """The computation's parameters (its public attributes)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    # -- on the shards ----------------------------------------------------------------

    def matches(self, vertex: VertexView) -> bool:
        """Whether the computation activates on ``vertex``. Default: by ``vertex_types``."""
        return self.vertex_types is None or vertex.type_name in self.vertex_types

    def new_aggregate(self) -> Any:
        """The initial per-shard aggregate (default ``None``)."""
        return None

    def on_activate(self, ctx: EphemeralContext) -> None:
        """Runs once per vertex, when the computation activates on it (the vertex may
        already have state and edges). ``ctx.state`` starts as ``None``."""

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        """Runs after every later successful behavior execution of the vertex, with what
        it changed (``change.added_out``, ``change.old_state``...). After a deletion
        (``change.deleted``) the vertex's ephemeral state is dropped."""

    def on_message(self, ctx: EphemeralContext, msg: Any) -> None:
        """Runs for each message of this computation sent to the vertex."""

    def combine_messages(self, a: Any, b: Any) -> Any:
        """Merge two messages to the same vertex (used when :attr:`combines` is set)."""
        raise NotImplementedError

    def value(self, state: Any) -> Any:
        """A vertex's result from its ephemeral state (default: the state itself)."""
        return state

    def summarize(self, aggregate: Any, values: Mapping[VertexId, Any]) -> Any:
        """One shard's part of the aggregated result, from its aggregate and its
        vertices' values (default: the aggregate)."""
        return aggregate

    # -- on the driver ----------------------------------------------------------------

    def combine(self, parts: list[Any]) -> Any:
        """The aggregated result from the shards' summaries (default: the list)."""
        return parts

    def finalize(self, values: dict[VertexId, Any], result: Any) -> dict[VertexId, Any]:
        """Per-vertex results from raw values and the aggregated result (default: as is).
        A vertex left out has no result (e.g. not reached)."""
        return values


mark_module_api(globals(), public=("Computation",))
