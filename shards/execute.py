"""One behavior execution: the value the shard's execute steps pass along, and one handler
per message kind.

``ShardCore._execute`` runs a message in small steps on one :class:`Execution`: start
(create the vertex if new, running ``on_create``), the handler of the message's kind
(:data:`HANDLERS`), :func:`settle` (a context's effects into the value), then -- only if
all of that succeeded -- number the messages, observe, commit and log. A handler runs a
vertex class's *direct* hook (:class:`~vertex.model.DirectHooks`: a built-in hook as a
function of plain values, no context, no state copy, no diff) when the class inherits
one, else the class's own hook with a :class:`~vertex.model.Context`. Nothing here
touches the vertex before the commit, so a failing behavior applies nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shards.codec import (
    K_EDGE_ADDED,
    K_EDGE_REJECTED,
    K_EDGE_REMOVED,
    K_EDGE_UPDATED,
    K_IN_EDGE,
    K_SPAWN,
    K_TARGET_DELETED,
    K_UPDATE,
    K_USER,
)
from shards.records import VertexRecord
from vertex.annotations import mark_module_api
from vertex.model import Context, DirectHooks, Vertex, temporal_edge
from vertex.records import EDGE_KINDS, UpdateKind, VertexId

__all__ = [
    "EDGE_CLEANUP",
    "HANDLERS",
    "REJECT",
    "Execution",
    "created_type",
    "creates_nothing",
    "creation_props",
    "settle",
    "state_change",
]

EDGE_CLEANUP = (K_EDGE_REJECTED, K_TARGET_DELETED)
_NO_CREATE = (K_EDGE_REJECTED, K_TARGET_DELETED, K_EDGE_REMOVED, K_EDGE_UPDATED)
_GONE_UPDATES = frozenset(
    k.value for k in (UpdateKind.REMOVE_VERTEX, UpdateKind.REMOVE_EDGE, UpdateKind.UPDATE_EDGE)
)
_KIND_OF = {kind.value: kind for kind in UpdateKind}
_RESERVED = frozenset(("count", "first_ts", "last_ts"))  # the temporal edge's own keys


class Execution:
    """One behavior execution between its steps: what it reads and what it changes.

    ``ctx`` is set when a hook runs with a :class:`Context` (it then holds the effects
    until :func:`settle` moves them here); direct hooks write here at once."""

    __slots__ = (
        "vid",
        "record",
        "created",
        "behavior",
        "direct",
        "clock",
        "time",
        "sender",
        "ctx",
        "state",
        "delta",
        "dropped",
        "edge_ops",
        "in_op",
        "sends",
        "spawns",
        "deleted",
        "late",
    )

    def __init__(
        self,
        vid: VertexId,
        record: VertexRecord,
        created: bool,
        behavior: Vertex,
        direct: DirectHooks,
        clock: int,
        time: float,
        sender: VertexId | None,
    ) -> None:
        self.vid = vid
        self.record = record
        self.created = created
        self.behavior = behavior
        self.direct = direct
        self.clock = clock
        self.time = time
        self.sender = sender
        self.ctx: Context | None = None
        self.state = record.state
        self.delta: dict[str, Any] | None = None
        self.dropped: tuple[str, ...] = ()
        self.edge_ops: tuple[tuple[VertexId, dict[str, Any] | None], ...] = ()
        self.in_op: tuple[VertexId, dict[str, Any] | None] | None = None
        self.sends: list[tuple[VertexId, Any]] | tuple[()] = ()
        self.spawns: list[tuple[VertexId, str | None, dict[str, Any]]] | tuple[()] = ()
        self.deleted = False
        self.late: float | None = None  # a late update's own event time

    def context(self) -> Context:
        """The hooks' context, created on first use (with a copy of the state)."""
        ctx = self.ctx
        if ctx is None:
            r = self.record
            ctx = self.ctx = Context(
                self.vid, self.clock, self.time, dict(r.state), r.out_edges, r.in_edges, self.sender
            )
        return ctx

    def emits(self) -> bool:
        """Whether the execution sends anything (messages, spawns, edge notices)."""
        return bool(self.sends or self.edge_ops or self.spawns or self.deleted)

    def change_state(self, changes: dict[str, Any] | None) -> None:
        """A direct hook's state changes: the new state is a new dict."""
        if changes:
            self.state = {**self.state, **changes}
            self.delta = changes


# -- one handler per message kind ----------------------------------------------------------


def _on_update(run: Execution, sender: VertexId | None, update: tuple[Any, ...], ts: float) -> None:
    kind_value, dst, props = update[0], update[1], update[2]
    if len(update) > 4:  # a late update: the hooks see its own time
        ts = run.late = update[4]
    kind = _KIND_OF[kind_value]
    if kind in EDGE_KINDS:
        direct = run.direct.edge_event
        if direct is None or run.ctx is not None:
            run.behavior.on_edge_event(run.context(), kind, dst, ts, props)
            return
        record = run.record
        changes, edge = direct(
            run.vid, record.state, record.out_edges.get(dst), kind, dst, ts, props
        )
        run.change_state(changes)
        run.edge_ops = ((dst, edge),)
    elif kind is UpdateKind.ADD_VERTEX:
        if not run.created:
            run.context().state.update(props)
    elif kind is UpdateKind.REMOVE_VERTEX:
        ctx = run.context()
        run.behavior.on_delete(ctx)
        ctx.deleted = True
    else:
        _on_user(run, sender, props, ts)


def _on_user(
    run: Execution, sender: VertexId | None, payload: Mapping[str, Any], ts: float
) -> None:
    if run.direct.ignores_messages and run.ctx is None:
        return
    run.behavior.on_message(run.context(), payload)


def _on_edge_notice(run: Execution, sender: VertexId, props: dict[str, Any]) -> None:
    """``K_EDGE_ADDED``/``K_EDGE_UPDATED`` at the target: a new or changed in-edge."""
    record = run.record
    old = record.in_edges.get(sender)
    direct = run.direct
    if old is not None:
        if direct.edge_updated is not None and run.ctx is None:
            run.change_state(direct.edge_updated(record.state, old, props, run.time))
        else:
            run.behavior.on_update_edge(run.context(), sender, props)
        run.in_op = (sender, props)
    elif run.ctx is None and direct.edge_added is not None:
        changes, accepted = direct.edge_added(record.state, props, run.time)
        run.change_state(changes)
        _accepted(run, sender, props, accepted)
    else:
        _accepted(run, sender, props, run.behavior.on_add_edge(run.context(), sender, props))


def _on_edge_added(run: Execution, sender: VertexId, props: dict[str, Any], ts: float) -> None:
    _on_edge_notice(run, sender, props)


def _on_edge_updated(run: Execution, sender: VertexId, props: dict[str, Any], ts: float) -> None:
    if sender in run.record.in_edges:  # an update for an edge it never accepted: nothing
        _on_edge_notice(run, sender, props)


def _accepted(run: Execution, sender: VertexId, props: dict[str, Any], accepted: bool) -> None:
    if accepted:
        run.in_op = (sender, props)
    elif run.ctx is not None:
        run.ctx.sends.append((sender, REJECT))  # after what the hook sent, as it was
    else:
        run.sends = [(sender, REJECT)]


def _on_edge_removed(run: Execution, sender: VertexId, payload: None, ts: float) -> None:
    if sender in run.record.in_edges:
        run.behavior.on_remove_edge(run.context(), sender)
        run.in_op = (sender, None)


def _on_edge_lost(run: Execution, sender: VertexId, payload: None, ts: float) -> None:
    """``K_EDGE_REJECTED``/``K_TARGET_DELETED`` at the source: drop the edge to ``sender``."""
    ctx = run.context()
    if ctx.edge(sender) is not None:
        ctx.edge_ops[sender] = None
        run.behavior.on_edge_dropped(ctx, sender)


def _on_spawn(run: Execution, sender: VertexId, payload: Any, ts: float) -> None:
    """Creation (if the vertex is new) already ran ``on_create``."""


def _on_in_edge(run: Execution, sender: VertexId, payload: tuple[Any, ...], ts: float) -> None:
    """``K_IN_EDGE`` at the target of a stream edge update of ``sender``'s edge to it: the
    record of the edge follows the same rule as at its owner (:func:`temporal_edge`), then
    the target's hooks run as for a notice."""
    if len(payload) > 2:
        ts = run.late = payload[2]
    record = run.record
    try:
        props = temporal_edge(
            sender, record.in_edges.get(sender), _KIND_OF[payload[0]], run.vid, ts, payload[1]
        )
    except (KeyError, TypeError):
        return  # the owner's update fails the same way: nothing changes at either end
    if props is None:
        _on_edge_removed(run, sender, None, ts)
    else:
        _on_edge_notice(run, sender, props)


HANDLERS: dict[int, Callable[[Execution, Any, Any, float], None]] = {
    K_UPDATE: _on_update,
    K_USER: _on_user,
    K_EDGE_ADDED: _on_edge_added,
    K_EDGE_UPDATED: _on_edge_updated,
    K_EDGE_REMOVED: _on_edge_removed,
    K_EDGE_REJECTED: _on_edge_lost,
    K_TARGET_DELETED: _on_edge_lost,
    K_SPAWN: _on_spawn,
    K_IN_EDGE: _on_in_edge,
}


def settle(run: Execution, logging: bool) -> None:
    """Move a context's effects into the execution's value. When logging, the state
    delta is the diff of the state after the hooks against the state before -- or, for a
    small state, the whole state (cheaper than the diff, and replayed the same way)."""
    ctx = run.ctx
    assert ctx is not None
    old, new = run.record.state, ctx.state
    run.state = new
    if run.created:
        run.delta = new
    else:
        run.delta, run.dropped = state_change(old, new, logging)
    if ctx.edge_ops:
        run.edge_ops = tuple(ctx.edge_ops.items())
    run.sends = ctx.sends
    run.spawns = ctx.spawns
    run.deleted = ctx.deleted


def state_change(
    old: dict[str, Any], new: dict[str, Any], logging: bool
) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """What the log notes of an existing vertex's state going from ``old`` to ``new``:
    the changed keys (or, for a small state, the whole state: cheaper than the diff and
    replayed the same way) and the keys dropped; nothing when not ``logging`` or when
    nothing changed."""
    if not logging or new == old:
        return None, ()
    if len(new) <= _SMALL_STATE:
        delta = new
    else:
        delta = {k: v for k, v in new.items() if k not in old or old[k] != v}
    dropped = () if old.keys() <= new.keys() else tuple(k for k in old if k not in new)
    return delta, dropped


_SMALL_STATE = 4  # keys; up to this size a changed state is logged whole
REJECT: Mapping[str, Any] = {"__chronoray__": "reject"}


def creates_nothing(kind: int, payload: Any) -> bool:
    """Messages about an edge or vertex that is gone must not create a vertex, nor must
    the target half of an edge update its owner cannot apply."""
    if kind in _NO_CREATE:
        return True
    if kind == K_IN_EDGE:
        return payload[0] in _GONE_UPDATES or not _RESERVED.isdisjoint(payload[1])
    return kind == K_UPDATE and payload[0] in _GONE_UPDATES


def created_type(kind: int, payload: Any) -> str | None:
    if kind == K_UPDATE:
        return payload[3]  # type: ignore[no-any-return]
    if kind == K_SPAWN:
        return payload[0]  # type: ignore[no-any-return]
    return None


def creation_props(kind: int, payload: Any) -> Mapping[str, Any]:
    if kind == K_UPDATE and payload[0] == UpdateKind.ADD_VERTEX.value:
        return payload[2]  # type: ignore[no-any-return]
    if kind == K_SPAWN:
        return payload[1]  # type: ignore[no-any-return]
    return {}


mark_module_api(globals())
