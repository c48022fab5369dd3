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

**Change batches.** While a shard applies a run of stream edges through its columns
(:mod:`shards.temporal`: the built-in temporal class, edges without properties), building a
:class:`~shards.observe.VertexChange` per execution would cost more than the execution.
A computation that can take the run's changes together lets the shard keep that path:

* override :meth:`Computation.on_changes` to read the run's :class:`ChangeBatch` as
  columns (what :class:`~ephemeral.algorithms.DegreeHistogram` does), or
* set :attr:`Computation.net_changes` when :meth:`Computation.on_change` is right when
  it gets, per vertex and batch, *one* change with the batch's net effect (what WCC, BFS
  and PageRank do).

Either holds only where it is declared by the class that defines ``on_change`` or a
subclass of it (a subclass that overrides ``on_change`` alone goes back to one change per
execution). In a batch, vertices the batch created (or that did not match before) are
activated first, as they are after the batch; the changes of the others follow. While
any running computation needs every execution one by one, the shard runs such runs row
by row and calls :meth:`Computation.on_change` per execution, as it always did.
(Notification streams and indexes do not need that: they are fed from the batches.)

Hooks run on the shard, one at a time, so they need no locks; an exception in a hook is
counted in the computation's ``errors`` and the rest of that hook's effects still apply
(messages already sent stay sent). Hooks should be quick: they delay the shard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal

import numpy as np

from shards.observe import ChangeBatch, VertexChange, VertexView
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = [
    "ChangeBatch",
    "ChangesContext",
    "Computation",
    "EphemeralContext",
    "VertexView",
    "batch_hook",
]


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


class ChangesContext:
    """What :meth:`Computation.on_changes` sees for one batch.

    ``rows``: a bool mask of the batch's rows whose vertex was active before the batch
    (those the hook is for; the others' vertices were just activated); ``states``: the
    computation's per-vertex ephemeral states on this shard, by vertex id (read and assign
    them); ``aggregate``: the per-shard aggregate (mutable, or assign a new one);
    ``computation``: the computation object. :meth:`send` and :meth:`send_many` send
    messages as :class:`EphemeralContext` does; :meth:`deactivate` ends a vertex's
    participation.
    """

    __slots__ = ("rows", "states", "aggregate", "computation", "_send", "_send_many")

    def __init__(
        self,
        rows: np.ndarray,
        states: dict[VertexId, Any],
        aggregate: Any,
        computation: Computation,
        send: Callable[[VertexId, Any], None],
        send_many: Callable[[Iterable[VertexId], Any], None],
    ) -> None:
        self.rows = rows
        self.states = states
        self.aggregate = aggregate
        self.computation = computation
        self._send = send
        self._send_many = send_many

    def send(self, dst: VertexId, payload: Any) -> None:
        """Send ``payload`` to the computation's instance on vertex ``dst``."""
        self._send(dst, payload)

    def send_many(self, dsts: Iterable[VertexId], payload: Any) -> None:
        """Send ``payload`` to each of ``dsts``."""
        self._send_many(dsts, payload)

    def deactivate(self, vertex_id: VertexId) -> None:
        """Drop ``vertex_id``'s ephemeral state and stop running hooks on it."""
        self.states.pop(vertex_id, None)


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

    net_changes: ClassVar[bool] = False
    """Whether :meth:`on_change` is right when a vertex's executions in one change batch
    reach it as one change, their net effect (see the module doc, *Change batches*)."""

    def on_changes(self, ctx: ChangesContext, batch: ChangeBatch) -> None:
        """Runs once per change batch with its columns (see the module doc, *Change
        batches*), for the rows in ``ctx.rows``. Not overridden: the shard runs such runs
        row by row for this computation, unless :attr:`net_changes` is set."""
        raise NotImplementedError

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


def batch_hook(computation: Computation) -> Literal["columns", "net"] | None:
    """How ``computation`` takes change batches: ``"columns"`` (its own
    :meth:`Computation.on_changes`), ``"net"`` (one net change per vertex and batch to
    :meth:`Computation.on_change`) or ``None`` (one change per execution). A declaration
    counts only where the class that makes it defines ``on_change`` or derives from the
    one that does."""
    cls = type(computation)
    change_owner = _owner(cls, "on_change")
    changes_owner = _owner(cls, "on_changes")
    if changes_owner is not Computation and issubclass(changes_owner, change_owner):
        return "columns"
    if cls.net_changes and issubclass(_owner(cls, "net_changes"), change_owner):
        return "net"
    return None


def _owner(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO whose body defines ``name``."""
    return next(c for c in cls.__mro__ if name in vars(c))


mark_module_api(globals(), public=("Computation",))
