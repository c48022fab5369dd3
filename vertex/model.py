"""The vertex programming model: a ``Vertex`` base class and the ``Context`` its hooks get.

Guarantees a vertex class can rely on:

* Hooks of one vertex run one at a time, in the order its messages arrived (FIFO per
  sending vertex), so vertex code needs no locks.
* A hook works on a *copy* of the vertex state (``ctx.state``). Its effects -- the new
  state, sends, edge changes, spawns, deletion -- are buffered in ``ctx`` and applied only
  after the hook returned and its log entry was written. A hook that raises applies
  nothing: the error is recorded in the log and the shard keeps running.
* Hooks must be deterministic (no wall clock, no unseeded randomness, no I/O): the
  graph's past is rebuilt by replaying logged effects, and recovery depends on it.
* State is a ``dict`` of plain, picklable values. Replace nested containers instead of
  mutating them in place (``ctx.state["tags"] = [*old, new]``): a change is detected by
  comparing the state after the hook with the state before it.

One behavior object serves every vertex of its class, so per-vertex data belongs in
``ctx.state``, never on ``self``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from vertex.annotations import mark_module_api
from vertex.records import UpdateKind, VertexId

__all__ = ["Vertex", "Context", "DirectHooks", "TemporalVertex", "VertexTypes", "temporal_edge"]

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


class Context:
    """What a running hook sees and does.

    Reads: ``vertex_id``, ``clock`` (this vertex's execution count, this execution
    included), ``time`` (event time of this execution: the max of the vertex's previous
    time and the time of its cause), ``state`` (a mutable copy), ``out_edges`` and
    ``in_edges`` (read-only views as they were before the hook), ``sender`` (the sending
    vertex id, ``None`` for stream updates).

    Writes (buffered, applied after the entry is logged): :meth:`send`,
    :meth:`send_to_neighbors`, :meth:`add_edge`, :meth:`update_edge`,
    :meth:`remove_edge`, :meth:`spawn`, :meth:`delete`.
    """

    __slots__ = (
        "vertex_id",
        "clock",
        "time",
        "state",
        "sender",
        "_out_edges",
        "_in_edges",
        "edge_ops",
        "sends",
        "spawns",
        "deleted",
    )

    def __init__(
        self,
        vertex_id: VertexId,
        clock: int,
        time: float,
        state: dict[str, Any],
        out_edges: Mapping[VertexId, Mapping[str, Any]],
        in_edges: Mapping[VertexId, Mapping[str, Any]],
        sender: VertexId | None = None,
    ) -> None:
        self.vertex_id = vertex_id
        self.clock = clock
        self.time = time
        self.state = state
        self.sender = sender
        self._out_edges = out_edges
        self._in_edges = in_edges
        self.edge_ops: dict[VertexId, dict[str, Any] | None] = {}
        self.sends: list[tuple[VertexId, Any]] = []
        self.spawns: list[tuple[VertexId, str | None, dict[str, Any]]] = []
        self.deleted = False

    @property
    def out_edges(self) -> Mapping[VertexId, Mapping[str, Any]]:
        """Outgoing edges (target id -> properties) as they were before this hook."""
        return MappingProxyType(self._out_edges)

    @property
    def in_edges(self) -> Mapping[VertexId, Mapping[str, Any]]:
        """Incoming edge records (source id -> properties), eventually consistent."""
        return MappingProxyType(self._in_edges)

    def edge(self, dst: VertexId) -> Mapping[str, Any] | None:
        """The outgoing edge to ``dst`` including changes this hook made, or ``None``."""
        if dst in self.edge_ops:
            return self.edge_ops[dst]
        return self._out_edges.get(dst)

    def send(self, dst: VertexId, payload: Mapping[str, Any]) -> None:
        """Send ``payload`` to vertex ``dst`` (created with the default class if missing)."""
        self.sends.append((dst, dict(payload)))

    def send_to_neighbors(self, payload: Mapping[str, Any]) -> None:
        """Send ``payload`` to every target of an outgoing edge (as of the end of this hook)."""
        targets = [d for d in self._out_edges if self.edge_ops.get(d, _EMPTY) is not None]
        targets += [
            d for d, p in self.edge_ops.items() if p is not None and d not in self._out_edges
        ]
        for dst in targets:
            self.sends.append((dst, dict(payload)))

    def add_edge(self, dst: VertexId, **props: Any) -> None:
        """Create the edge ``self -> dst`` with ``props`` (replaces an existing one)."""
        self.edge_ops[dst] = dict(props)

    def update_edge(self, dst: VertexId, **props: Any) -> None:
        """Merge ``props`` into the existing edge ``self -> dst``; ``KeyError`` if there is none."""
        current = self.edge(dst)
        if current is None:
            raise KeyError(f"vertex {self.vertex_id!r} has no edge to {dst!r}")
        self.edge_ops[dst] = {**current, **props}

    def remove_edge(self, dst: VertexId) -> None:
        """Remove the edge ``self -> dst``; ``KeyError`` if there is none."""
        if self.edge(dst) is None:
            raise KeyError(f"vertex {self.vertex_id!r} has no edge to {dst!r}")
        self.edge_ops[dst] = None

    def spawn(self, vertex_id: VertexId, vertex_type: str | None = None, **props: Any) -> None:
        """Create vertex ``vertex_id`` of ``vertex_type`` (no effect if it already exists)."""
        self.spawns.append((vertex_id, vertex_type, dict(props)))

    def delete(self) -> None:
        """Delete this vertex after the hook: its outgoing edges go, its sources are told."""
        self.deleted = True


class Vertex:
    """Base class of vertex behaviors. Subclass it and override the hooks you need.

    ``type_name`` (default: the class name) is how updates, spawns and the log name the
    class. Each hook's effects go through ``ctx``; a hook that raises is recorded as
    failed and applies nothing.
    """

    type_name: ClassVar[str] = "Vertex"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type_name" not in cls.__dict__:
            cls.type_name = cls.__name__

    def on_create(self, ctx: Context, props: Mapping[str, Any]) -> None:
        """Runs once, when the vertex is created (by an update, a message or a spawn).

        ``props`` are the creating update's properties. Default: copy them into the state.
        In the same execution the creating message is then handled by its own hook.
        """
        ctx.state.update(props)

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        """Runs for each user message: a stream ``message`` update or a ``ctx.send``."""

    def on_edge_event(
        self, ctx: Context, kind: UpdateKind, dst: VertexId, ts: float, props: Mapping[str, Any]
    ) -> None:
        """Runs at the source (owner) for a stream edge update ``self -> dst`` at ``ts``.

        Default: a temporal edge. ``add_edge`` creates the edge with ``count=1``,
        ``first_ts=last_ts=ts`` and ``props``, or counts one more occurrence (``count+1``,
        first/last time widened, ``props`` overwritten); ``update_edge`` merges ``props``;
        ``remove_edge`` removes it.
        """
        ctx.edge_ops[dst] = temporal_edge(ctx.vertex_id, ctx.edge(dst), kind, dst, ts, props)

    def on_add_edge(self, ctx: Context, src: VertexId, props: Mapping[str, Any]) -> bool:
        """Runs at the target when ``src`` created an edge to it. Return ``False`` to reject.

        A rejected edge is removed again at its source. Default: accept.
        """
        return True

    def on_update_edge(self, ctx: Context, src: VertexId, props: Mapping[str, Any]) -> None:
        """Runs at the target when the incoming edge from ``src`` changed to ``props``."""

    def on_remove_edge(self, ctx: Context, src: VertexId) -> None:
        """Runs at the target when the incoming edge from ``src`` was removed."""

    def on_edge_dropped(self, ctx: Context, dst: VertexId) -> None:
        """Runs at the source after its edge to ``dst`` was dropped because ``dst``
        rejected it or was deleted. The edge is already gone from ``ctx.edge(dst)``."""

    def on_delete(self, ctx: Context) -> None:
        """Runs when the vertex is deleted (by an update or its own ``ctx.delete()``)."""


class TemporalVertex(Vertex):
    """The default vertex: a plain temporal graph.

    State: ``out_degree``, ``in_degree`` (distinct neighbours), ``sent`` and ``received``
    (edge occurrences), ``first_ts``/``last_ts`` (first and last activity). Edges carry
    ``count``, ``first_ts``, ``last_ts`` and the stream's properties (e.g. ``weight``).
    """

    type_name: ClassVar[str] = "TemporalVertex"

    def on_create(self, ctx: Context, props: Mapping[str, Any]) -> None:
        ctx.state.update(out_degree=0, in_degree=0, sent=0, received=0, **props)

    def on_edge_event(
        self, ctx: Context, kind: UpdateKind, dst: VertexId, ts: float, props: Mapping[str, Any]
    ) -> None:
        existed = ctx.edge(dst) is not None
        super().on_edge_event(ctx, kind, dst, ts, props)
        ctx.state.update(_sent(ctx.state, kind, existed, ctx.edge(dst) is not None, ts))

    def on_add_edge(self, ctx: Context, src: VertexId, props: Mapping[str, Any]) -> bool:
        ctx.state.update(_received_new(ctx.state, props, ctx.time))
        return True

    def on_update_edge(self, ctx: Context, src: VertexId, props: Mapping[str, Any]) -> None:
        ctx.state.update(_received(ctx.state, ctx.in_edges.get(src, _EMPTY), props, ctx.time))

    def on_remove_edge(self, ctx: Context, src: VertexId) -> None:
        ctx.state["in_degree"] -= 1

    def on_edge_dropped(self, ctx: Context, dst: VertexId) -> None:
        ctx.state["out_degree"] -= 1


# -- the built-in rules, as functions of plain values -------------------------------------
# The hooks above and their direct forms below (what a shard runs, without a Context, for
# a class that inherits the hooks unchanged) share these, so each rule is written once.


def temporal_edge(
    vertex_id: VertexId,
    current: Mapping[str, Any] | None,
    kind: UpdateKind,
    dst: VertexId,
    ts: float,
    props: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The edge ``vertex_id -> dst`` after a stream edge update (``None``: removed), by the
    rule of :meth:`Vertex.on_edge_event`. ``KeyError`` if an update or removal finds no
    edge, ``TypeError`` if ``props`` reuse ``count``, ``first_ts`` or ``last_ts``.

    >>> temporal_edge(1, None, UpdateKind.ADD_EDGE, 2, 5.0, {"w": 1})
    {'count': 1, 'first_ts': 5.0, 'last_ts': 5.0, 'w': 1}
    >>> edge = {'count': 1, 'first_ts': 5.0, 'last_ts': 5.0}
    >>> temporal_edge(1, edge, UpdateKind.ADD_EDGE, 2, 3.0, {})
    {'count': 2, 'first_ts': 3.0, 'last_ts': 5.0}
    """
    if kind is UpdateKind.ADD_EDGE:
        if current is None:
            return dict(count=1, first_ts=ts, last_ts=ts, **props)
        seen = dict(
            count=current["count"] + 1,
            first_ts=min(current["first_ts"], ts),
            last_ts=max(current["last_ts"], ts),
            **props,
        )
        return {**current, **seen}
    if current is None:
        raise KeyError(f"vertex {vertex_id!r} has no edge to {dst!r}")
    if kind is UpdateKind.UPDATE_EDGE:
        return {**current, **props}
    return None


def _sent(
    state: Mapping[str, Any], kind: UpdateKind, existed: bool, exists: bool, ts: float
) -> dict[str, Any]:
    """TemporalVertex's state changes at the source of an edge update."""
    changes: dict[str, Any] = {}
    degree = state["out_degree"]
    if exists != existed:
        changes["out_degree"] = degree + exists - existed
    if kind is UpdateKind.ADD_EDGE:
        changes["sent"] = state["sent"] + 1
        _touch(state, changes, ts)
    return changes


def _received_new(
    state: Mapping[str, Any], props: Mapping[str, Any], time: float
) -> dict[str, Any]:
    """TemporalVertex's state changes at the target of a new incoming edge."""
    changes = {"in_degree": state["in_degree"] + 1, "received": state["received"] + 1}
    _touch(state, changes, props.get("last_ts", time))
    return changes


def _received(
    state: Mapping[str, Any], old: Mapping[str, Any], props: Mapping[str, Any], time: float
) -> dict[str, Any]:
    """TemporalVertex's state changes at the target of a changed incoming edge."""
    changes = {"received": state["received"] + props.get("count", 0) - old.get("count", 0)}
    _touch(state, changes, props.get("last_ts", time))
    return changes


def _touch(state: Mapping[str, Any], changes: dict[str, Any], ts: float) -> None:
    """Widen ``first_ts``/``last_ts`` (first and last activity) to ``ts``."""
    first = state.get("first_ts")
    if first is None or ts < first:
        changes["first_ts"] = ts
    last = state.get("last_ts")
    if last is None or ts > last:
        changes["last_ts"] = ts


def _vertex_edge_event(
    vertex_id: VertexId,
    state: Mapping[str, Any],
    current: Mapping[str, Any] | None,
    kind: UpdateKind,
    dst: VertexId,
    ts: float,
    props: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    return None, temporal_edge(vertex_id, current, kind, dst, ts, props)


def _temporal_edge_event(
    vertex_id: VertexId,
    state: Mapping[str, Any],
    current: Mapping[str, Any] | None,
    kind: UpdateKind,
    dst: VertexId,
    ts: float,
    props: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    edge = temporal_edge(vertex_id, current, kind, dst, ts, props)
    return _sent(state, kind, current is not None, edge is not None, ts), edge


def _accept(
    state: Mapping[str, Any], props: Mapping[str, Any], time: float
) -> tuple[dict[str, Any] | None, bool]:
    return None, True


def _temporal_accept(
    state: Mapping[str, Any], props: Mapping[str, Any], time: float
) -> tuple[dict[str, Any] | None, bool]:
    return _received_new(state, props, time), True


def _ignore_update(
    state: Mapping[str, Any], old: Mapping[str, Any], props: Mapping[str, Any], time: float
) -> dict[str, Any] | None:
    return None


class DirectHooks:
    """Hooks of a vertex class as plain functions of the vertex's state and edges, for the
    hooks it inherits unchanged from :class:`Vertex` or :class:`TemporalVertex` (``None``
    where the class brings its own code, which then runs with a :class:`Context`).

    ``edge_event(vertex_id, state, current_edge, kind, dst, ts, props)`` -> ``(state
    changes or None, new edge props or None)``; ``edge_added(state, props, time)`` ->
    ``(state changes or None, accepted)``; ``edge_updated(state, old_props, props, time)``
    -> state changes or ``None``; ``ignores_messages``: ``on_message`` does nothing. They
    raise what the hook would raise. Internal: the shard's execute step uses them to skip
    the state copy, the state diff and the context object.
    """

    __slots__ = ("edge_event", "edge_added", "edge_updated", "ignores_messages")

    _FORMS: ClassVar[dict[str, dict[Any, Any]]] = {}

    def __init__(self, cls: type[Vertex]) -> None:
        self.edge_event = self._form(cls, "on_edge_event")
        self.edge_added = self._form(cls, "on_add_edge")
        self.edge_updated = self._form(cls, "on_update_edge")
        self.ignores_messages = self._form(cls, "on_message") is not None

    @classmethod
    def _form(cls, vertex_class: type[Vertex], hook: str) -> Any:
        """The direct form of ``hook`` if every class defining it along ``vertex_class``'s
        MRO is a built-in one (a mixin's override reached through ``super()`` counts)."""
        owners = [k for k in vertex_class.__mro__ if hook in k.__dict__]
        if any(k not in (Vertex, TemporalVertex) for k in owners):
            return None
        return cls._FORMS[hook].get(owners[0])


DirectHooks._FORMS.update(
    on_edge_event={Vertex: _vertex_edge_event, TemporalVertex: _temporal_edge_event},
    on_add_edge={Vertex: _accept, TemporalVertex: _temporal_accept},
    on_update_edge={Vertex: _ignore_update, TemporalVertex: _received},
    on_message={Vertex: True},
)


class VertexTypes:
    """The vertex classes a graph knows, by ``type_name``, and which one is the default.

    >>> types = VertexTypes([TemporalVertex])
    >>> types.default.type_name
    'TemporalVertex'
    >>> types.get(None) is types.default
    True
    """

    def __init__(
        self, classes: list[type[Vertex]] | None = None, default: type[Vertex] | None = None
    ) -> None:
        classes = list(classes or [])
        default = default or (classes[0] if classes else TemporalVertex)
        if default not in classes:
            classes.insert(0, default)
        self._behaviors: dict[str, Vertex] = {}
        self._direct: dict[str, DirectHooks] = {}
        for cls in classes:
            if not (isinstance(cls, type) and issubclass(cls, Vertex)):
                raise TypeError(f"vertex classes must subclass chronoray.Vertex, got {cls!r}")
            name = cls.type_name
            if name in self._behaviors and type(self._behaviors[name]) is not cls:
                raise ValueError(f"two vertex classes share the type name {name!r}")
            self._behaviors[name] = cls()
            self._direct[name] = DirectHooks(cls)
        self.default_name = default.type_name
        self.classes = classes

    @property
    def stream_edges(self) -> bool:
        """Whether every class keeps the built-in ``on_edge_event`` and ``on_add_edge``.

        Then an edge's owner and its target can each apply a stream edge update by the same
        rule (:func:`temporal_edge`) and the target never refuses an edge, so the update is
        delivered to both endpoints in stream order and the target's record of the edge is
        exact at every time (*stream edges*). A class that decides its edges in its own
        code needs its owner's word first: the owner sends the target a notice (*owner
        edges*), logged at the target at ``max(its time, the notice's time)``.

        >>> VertexTypes().stream_edges, VertexTypes([Vertex]).stream_edges
        (True, True)
        """
        return all(
            d.edge_event is not None and d.edge_added is not None for d in self._direct.values()
        )

    @property
    def default(self) -> type[Vertex]:
        """The class used for vertices created implicitly (by an edge or a message)."""
        return type(self._behaviors[self.default_name])

    def get(self, type_name: str | None) -> type[Vertex]:
        """The class named ``type_name`` (``None``: the default); ``KeyError`` if unknown."""
        return type(self.behavior(type_name))

    def behavior(self, type_name: str | None) -> Vertex:
        """The shared behavior object of ``type_name``."""
        try:
            return self._behaviors[type_name or self.default_name]
        except KeyError:
            known = ", ".join(sorted(self._behaviors))
            raise KeyError(f"unknown vertex type {type_name!r} (known: {known})") from None

    def direct(self, type_name: str) -> DirectHooks:
        """The direct forms of the hooks ``type_name`` inherits unchanged (internal)."""
        return self._direct[type_name]

    def names(self) -> list[str]:
        """Registered type names."""
        return list(self._behaviors)


mark_module_api(globals(), public=("Context", "TemporalVertex", "Vertex"))
