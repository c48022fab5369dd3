"""``LiveHost``: the shard-side home of live computations, notification streams and indexes.

One host is attached to each ``ShardCore`` (as its :class:`~shards.observe.ShardObserver`).
The core calls :meth:`LiveHost.vertex_changed` after every successful behavior execution;
the host runs the active computations on that vertex, feeds the subscriptions' buffers and
updates the indexes. While every running computation takes change batches
(:func:`~ephemeral.computation.batch_hook`), the host ``takes_batches``: the rows of
column runs come as one :meth:`LiveHost.changes` per stretch, which updates the indexes
once per touched vertex, derives the notifications of the rows the streams' filters may
select (their states rebuilt from the batch's state changes), and hands each computation
the batch (its ``on_changes``) or one net change per vertex (its ``on_change``).

Computation messages wait in per-destination-shard outboxes (combined
per vertex when the computation allows it) until the core takes them into its next batch
for that shard, as the batch's unlogged side part.

The host never touches the core's logged state: it sees the shard through a read-only
:class:`~shards.observe.ShardView` and vertices through :class:`~shards.observe.VertexView`
s. Everything it holds is in memory and lost with the shard process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ephemeral.computation import ChangesContext, Computation, EphemeralContext, batch_hook
from ephemeral.index import ShardIndex, declared_indexes
from ephemeral.notify import (
    Lagged,
    Notification,
    NotificationFilter,
    ShardStream,
    replay_notifications,
)
from shards.observe import ChangeBatch, ShardView, VertexChange, VertexView
from shards.routing import shard_of
from vertex.records import VertexId

__all__ = ["LiveHost"]

_ERRORS_KEPT = 20
_NONE = object()


@dataclass
class _Run:
    """One running computation on this shard."""

    computation: Computation
    aggregate: Any
    states: dict[VertexId, Any] = field(default_factory=dict)
    inbox: dict[VertexId, list[Any]] = field(default_factory=dict)  # for vertices not here yet
    changes: int = 0
    batches: int = 0
    messages: int = 0
    dropped: int = 0
    errors: int = 0
    recent_errors: list[str] = field(default_factory=list)
    senders: tuple[Any, Any] | None = None
    takes: str | None = None  # how it takes change batches (``batch_hook``)


class LiveHost:
    """The live-computation observer of one shard (see the module doc)."""

    def __init__(self) -> None:
        self.core: ShardView | None = None
        self.watching = False
        self.takes_batches = False
        self.wake: Callable[[], None] | None = None
        self._runs: dict[str, _Run] = {}
        self._streams: dict[str, ShardStream] = {}
        self._indexes: dict[str, ShardIndex] = {}
        self._lists: list[list[tuple[str, VertexId, Any]]] = []
        self._combined: list[dict[str, dict[VertexId, Any]]] = []  # dest -> cid -> vertex
        self._route: dict[VertexId, int] = {}
        self._received = 0

    # -- observer protocol ------------------------------------------------------------

    def attach(self, shard: ShardView) -> None:
        """Bind to ``shard`` and build the declared indexes from its vertices."""
        self.core = shard
        n = shard.num_shards
        self._lists = [[] for _ in range(n)]
        self._combined = [{} for _ in range(n)]
        for name, key_functions in declared_indexes(shard.types.classes).items():
            index = self._indexes[name] = ShardIndex(name, key_functions)
            for view in shard.vertex_views():
                index.update(view.vertex_id, view.type_name, view.state)
        self._update_watching()

    def vertex_changed(self, change: VertexChange) -> None:
        """Run computations, fill subscriptions, update indexes for one execution."""
        vid = change.vertex_id
        for index in self._indexes.values():
            index.update(vid, change.type_name, change.state)
        if self._streams:
            core = self.core
            assert core is not None
            n = Notification(
                vid,
                change.type_name,
                change.clock,
                change.time,
                core.shard_id,
                change.wc,
                change.old_state,
                change.state,
            )
            offered = False
            for stream in self._streams.values():
                offered = stream.offer(n) or offered
            if offered and self.wake is not None:
                self.wake()
        if self._runs:
            view = change.vertex
            for run in list(self._runs.values()):
                if vid in run.states:
                    run.changes += 1
                    self._run_hook(run, view, run.computation.on_change, change)
                    if change.deleted:
                        run.states.pop(vid, None)
                elif not change.deleted:
                    self._maybe_activate(run, view)

    def changes(self, batch: ChangeBatch) -> None:
        """Indexes and computations for a stretch of a column run (see the module doc)."""
        net = batch.net_changes() if self._indexes or self._wants_net() else None
        if net is not None and self._indexes:
            for change in net:
                for index in self._indexes.values():
                    index.update(change.vertex_id, change.type_name, change.state)
        if self._streams:
            self._notify(batch)
        for run in list(self._runs.values()):
            self._run_changes(run, batch, net)

    def _notify(self, batch: ChangeBatch) -> None:
        """The streams' notifications of a change batch's rows: built for the rows whose
        vertex some stream's types and ids admit, offered to every stream in row order."""
        streams = list(self._streams.values())
        admitted = [
            any(_admits(stream.spec, view) for stream in streams) for view in batch.views
        ]
        rows = np.flatnonzero(np.asarray(admitted, np.bool_)[batch.touched_index])
        if not len(rows):
            return
        core = self.core
        assert core is not None
        shard = core.shard_id
        index = batch.touched_index.tolist()
        vertex, clock, time, wc = (
            batch.vertex.tolist(),
            batch.clock.tolist(),
            batch.time.tolist(),
            batch.wc.tolist(),
        )
        types = [view.type_name for view in batch.views]
        offered = False
        for row, old, new in batch.row_states(rows):
            n = Notification(
                vertex[row], types[index[row]], clock[row], time[row], shard, wc[row], old, new
            )
            for stream in streams:
                offered = stream.offer(n) or offered
        if offered and self.wake is not None:
            self.wake()

    def _wants_net(self) -> bool:
        return any(run.takes == "net" for run in self._runs.values())

    def _run_changes(self, run: _Run, batch: ChangeBatch, net: list[VertexChange] | None) -> None:
        """One computation's part of :meth:`changes`: activate the touched vertices not
        active yet (as they are after the batch), then the others' changes."""
        states = run.states
        touched = batch.touched.tolist()
        active = np.fromiter((vid in states for vid in touched), np.bool_, len(touched))
        for k in np.flatnonzero(~active).tolist():
            self._maybe_activate(run, batch.views[k])
        run.batches += 1
        if not active.any():
            return
        comp = run.computation
        if run.takes == "columns":
            rows = active[batch.touched_index]
            run.changes += int(rows.sum())
            assert run.senders is not None
            ctx = ChangesContext(rows, states, run.aggregate, comp, *run.senders)
            try:
                comp.on_changes(ctx, batch)
            except Exception as exc:
                self._error(run, "a change batch", comp.on_changes, exc)
            run.aggregate = ctx.aggregate
            return
        assert net is not None
        for k in np.flatnonzero(active).tolist():
            change = net[k]
            if change.vertex_id in states:  # an earlier hook may have deactivated it
                run.changes += 1
                self._run_hook(run, change.vertex, comp.on_change, change)

    def side_pending(self, dest: int) -> int:
        """Computation messages waiting for shard ``dest``."""
        return len(self._lists[dest]) + sum(map(len, self._combined[dest].values()))

    def take_side(self, dest: int) -> list[Any]:
        """Hand the messages for ``dest`` to the core's next batch."""
        items = self._lists[dest][:]
        self._lists[dest].clear()
        for cid, box in self._combined[dest].items():
            if box:
                items.extend((cid, vid, msg) for vid, msg in box.items())
                box.clear()  # kept: the computation's senders hold it
        return items

    def receive_side(self, items: list[Any]) -> None:
        """Deliver computation messages that arrived for this shard's vertices."""
        shard = self.core
        assert shard is not None
        self._received += len(items)
        for cid, vid, msg in items:
            run = self._runs.get(cid)
            if run is None:
                continue  # the computation was stopped
            run.messages += 1
            view = shard.vertex_view(vid)
            if view is None:
                waiting = run.inbox.setdefault(vid, [])
                if waiting and run.computation.combines:
                    waiting[0] = run.computation.combine_messages(waiting[0], msg)
                else:
                    waiting.append(msg)
            elif vid in run.states or self._maybe_activate(run, view):
                self._run_hook(run, view, run.computation.on_message, msg)
            else:
                run.dropped += 1

    def side_processed(self) -> int:
        """Computation messages received so far."""
        return self._received

    # -- computations -----------------------------------------------------------------

    def start(self, cid: str, computation: Computation) -> int:
        """Register ``computation`` as ``cid`` and activate it on every matching vertex;
        returns how many it activated on."""
        assert self.core is not None
        if cid in self._runs:
            raise ValueError(f"a computation {cid!r} is already running")
        run = self._runs[cid] = _Run(computation, computation.new_aggregate())
        run.senders = self._sender(cid, computation)
        run.takes = batch_hook(computation)
        self._update_watching()
        return sum(self._maybe_activate(run, view) for view in self.core.vertex_views())

    def stop(self, cid: str) -> bool:
        """Stop ``cid`` and drop its state; its messages still in flight are ignored."""
        found = self._runs.pop(cid, None) is not None
        for queue in self._lists:
            queue[:] = [item for item in queue if item[0] != cid]
        for combined in self._combined:
            combined.pop(cid, None)
        self._update_watching()
        return found

    def computations(self) -> list[str]:
        """Ids of the running computations."""
        return list(self._runs)

    def values(self, cid: str, ids: list[VertexId] | None = None) -> dict[VertexId, Any]:
        """Raw per-vertex values of ``cid`` (all active vertices, or just ``ids``)."""
        run = self._run(cid)
        value = run.computation.value
        if ids is None:
            return {vid: value(state) for vid, state in run.states.items()}
        return {vid: value(run.states[vid]) for vid in ids if vid in run.states}

    def summary(self, cid: str) -> Any:
        """This shard's part of the aggregated result of ``cid``."""
        run = self._run(cid)
        return run.computation.summarize(run.aggregate, self.values(cid))

    def stats(self, cid: str) -> dict[str, Any]:
        """Counters of ``cid`` on this shard."""
        run = self._run(cid)
        return {
            "active": len(run.states),
            "changes": run.changes,
            "batches": run.batches,
            "messages": run.messages,
            "waiting": sum(len(v) for v in run.inbox.values()),
            "dropped": run.dropped,
            "errors": run.errors,
            "recent_errors": list(run.recent_errors),
        }

    def _run(self, cid: str) -> _Run:
        try:
            return self._runs[cid]
        except KeyError:
            raise KeyError(f"no computation {cid!r} is running") from None

    def _maybe_activate(self, run: _Run, view: VertexView) -> bool:
        vid = view.vertex_id
        comp = run.computation
        try:
            matches = comp.matches(view)
        except Exception as exc:
            self._error(run, vid, comp.matches, exc)
            return False
        if not matches:
            return False
        run.states[vid] = None
        self._run_hook(run, view, comp.on_activate)
        for msg in run.inbox.pop(vid, ()):
            if vid not in run.states:
                break
            self._run_hook(run, view, comp.on_message, msg)
        return True

    def _run_hook(self, run: _Run, view: VertexView, hook: Callable[..., None], *args: Any) -> None:
        """Run one hook of the computation (``on_activate``, ``on_change``, ``on_message``)
        on a vertex; an exception is counted, the rest of its effects stay."""
        vid = view.vertex_id
        assert run.senders is not None
        ctx = EphemeralContext(
            vid, run.states[vid], run.aggregate, view, run.computation, *run.senders
        )
        try:
            hook(ctx, *args)
        except Exception as exc:
            self._error(run, vid, hook, exc)
        run.aggregate = ctx.aggregate
        if ctx.inactive:
            run.states.pop(vid, None)
        else:
            run.states[vid] = ctx.state

    def _error(self, run: _Run, vid: VertexId, hook: Callable[..., Any], exc: Exception) -> None:
        run.errors += 1
        if len(run.recent_errors) < _ERRORS_KEPT:
            name = getattr(hook, "__name__", "hook").removeprefix("on_")
            run.recent_errors.append(f"{name} on {vid!r}: {type(exc).__name__}: {exc}")

    def _sender(
        self, cid: str, computation: Computation
    ) -> tuple[Callable[[VertexId, Any], None], Callable[[Iterable[VertexId], Any], None]]:
        """``send(dst, msg)`` and ``send_many(dsts, msg)`` for computation ``cid`` (hot
        paths: every message of every computation goes through them)."""
        assert self.core is not None
        num_shards = self.core.num_shards
        route = self._route
        combine = computation.combine_messages
        lists, combined = self._lists, self._combined

        def dest_of(dst: VertexId) -> int:
            dest = route.get(dst)
            if dest is None:
                dest = route[dst] = shard_of(dst, num_shards)
            return dest

        if not computation.combines:

            def send(dst: VertexId, msg: Any) -> None:
                lists[dest_of(dst)].append((cid, dst, msg))

            def send_many(dsts: Iterable[VertexId], msg: Any) -> None:
                for dst in dsts:
                    lists[dest_of(dst)].append((cid, dst, msg))

            return send, send_many

        boxes = [by_cid.setdefault(cid, {}) for by_cid in combined]  # this one's, per dest

        def send_combined(dst: VertexId, msg: Any) -> None:
            box = boxes[dest_of(dst)]
            old = box.get(dst, _NONE)
            box[dst] = msg if old is _NONE else combine(old, msg)

        def send_many_combined(dsts: Iterable[VertexId], msg: Any) -> None:
            get = route.get
            for dst in dsts:
                dest = get(dst)
                if dest is None:
                    dest = route[dst] = shard_of(dst, num_shards)
                box = boxes[dest]
                old = box.get(dst, _NONE)
                box[dst] = msg if old is _NONE else combine(old, msg)

        return send_combined, send_many_combined

    # -- notification streams ---------------------------------------------------------

    def subscribe(
        self, sub_id: str, spec: NotificationFilter, capacity: int, since: float | None
    ) -> int:
        """Open subscription ``sub_id``; with ``since``, replay this shard's log from that
        event time up to now first; with a ``spec.position`` (a resumed stream), replay
        what the log holds after it. Returns the worker clock it starts after."""
        core = self.core
        assert core is not None
        replay = None
        position = spec.position
        if since is not None or position is not None:
            if core.store is None:
                raise ValueError("replay needs a logged graph")
            bound = core.worker_clock
            after = 0 if position is None else position.after[core.shard_id]
            if after > bound or (position is not None and position.start[core.shard_id] > bound):
                raise ValueError(
                    f"stream position {position} is ahead of shard {core.shard_id}'s log "
                    f"(worker clock {bound})"
                )
            start = -math.inf if since is None else since
            replay = replay_notifications(core.store, core.shard_id, spec, start, bound, after)
        self._streams[sub_id] = ShardStream(core.shard_id, spec, capacity, replay)
        self._update_watching()
        return core.worker_clock

    def poll(self, sub_id: str, max_items: int) -> list[Notification | Lagged]:
        """Up to ``max_items`` notifications (and lag markers) of ``sub_id``."""
        stream = self._streams.get(sub_id)
        if stream is None:
            raise KeyError(f"no subscription {sub_id!r} on this shard")
        return stream.take(max_items)

    def unsubscribe(self, sub_id: str) -> bool:
        """Close ``sub_id`` and drop its buffer."""
        found = self._streams.pop(sub_id, None) is not None
        self._update_watching()
        return found

    def stream_stats(self, sub_id: str) -> dict[str, int]:
        """Delivered, missed and buffered counts of ``sub_id`` on this shard."""
        stream = self._streams[sub_id]
        return {
            "delivered": stream.delivered,
            "missed": stream.missed,
            "buffered": len(stream.buffer),
        }

    # -- indexes ----------------------------------------------------------------------

    def index_names(self) -> list[str]:
        """Names of the indexes declared by the graph's vertex classes."""
        return list(self._indexes)

    def index_lookup(self, name: str, key: Any) -> list[VertexId]:
        """Ids of this shard's vertices with ``key`` in index ``name``."""
        return self._index(name).lookup(key)

    def index_range(self, name: str, lo: Any, hi: Any) -> list[tuple[Any, VertexId]]:
        """``(key, id)`` of this shard with ``lo <= key <= hi``, sorted."""
        return self._index(name).range(lo, hi)

    def index_size(self, name: str) -> int:
        """Vertices of this shard in index ``name``."""
        return len(self._index(name))

    def _index(self, name: str) -> ShardIndex:
        try:
            return self._indexes[name]
        except KeyError:
            known = ", ".join(sorted(self._indexes)) or "none"
            raise KeyError(f"no index {name!r} (declared: {known})") from None

    def _update_watching(self) -> None:
        self.watching = bool(self._runs or self._streams or self._indexes)
        self.takes_batches = self.watching and all(
            run.takes is not None for run in self._runs.values()
        )


def _admits(spec: NotificationFilter, view: VertexView) -> bool:
    """Whether ``spec``'s types and ids admit changes of ``view``'s vertex."""
    if spec.types is not None and view.type_name not in spec.types:
        return False
    return spec.ids is None or view.vertex_id in spec.ids
