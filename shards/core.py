"""``ShardCore``: one shard of the graph as a pure state machine (no Ray, no threads).

A shard hosts the vertices whose ids hash to it and runs their behaviors one at a time.
It is fed :class:`Batch` es -- stream updates from a source, or vertex messages from a
shard (itself included) -- and answers with messages for other shards, which it keeps in
per-destination outboxes until the destination acknowledges them. The Ray actor
``ShardWorker`` only moves batches between cores; tests drive cores directly.

Guarantees:

* **Acknowledged = logged.** :meth:`ShardCore.handle` writes one atomic log batch (command
  and event entries, vector clock, channel cursors) before it returns; only then are the
  batch's messages released to the outboxes. If the write fails the core raises
  :class:`ShardFailed` and must be rebuilt from its log (its memory may be ahead of it).
* **Exactly once per channel.** A batch names its channel and the position of the last
  item the sender sent on it before (``prev``). Items at or below the channel's applied
  position are duplicates and skipped; a batch whose ``prev`` is ahead of the applied
  position waits in a reorder buffer. Positions are stream offsets for sources and
  per-(sender shard, receiver shard) message sequence numbers for shards, and the applied
  positions are logged with every batch, so resends after a crash are applied once.
* **FIFO** per (sender vertex, receiver vertex): messages are numbered per channel in
  send order and applied in channel order.
* **Recovery.** A new core over an existing log rebuilds every vertex by replaying its
  event log (full state at creation and every ``checkpoint_interval`` executions of a
  vertex, deltas in between) and rebuilds the outboxes from the first entry whose
  messages were not known to be acknowledged.
"""

from __future__ import annotations

import math
import pickle
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import islice
from pickle import dumps as _dumps
from typing import Any

from shards.clocks import VectorClock
from shards.codec import (
    K_EDGE_ADDED,
    K_EDGE_REJECTED,
    K_EDGE_REMOVED,
    K_EDGE_UPDATED,
    K_SPAWN,
    K_TARGET_DELETED,
    K_UPDATE,
    K_USER,
    EventEntry,
    Message,
    decode_event,
    update_to_plain,
)
from shards.logstore import LogBatch, LogName, LogStore
from shards.observe import ShardObserver, VertexChange
from shards.routing import shard_of
from vertex.model import Context, VertexTypes
from vertex.records import Update, UpdateKind, VertexId

__all__ = [
    "Batch",
    "HandleResult",
    "ShardCore",
    "ShardFailed",
    "VertexNotFound",
    "VertexRecord",
    "ShardCheckpoint",
    "apply_event",
    "decode_shard_checkpoint",
    "list_shard_checkpoints",
    "load_shard_checkpoint",
    "replay_event",
    "source_channel",
    "shard_channel",
]

_CURSOR_KEY = "cursor"
_CHECKPOINTS_KEY = "checkpoints"
_MANIFEST_KEY = "manifest"
_EDGE_CLEANUP = (K_EDGE_REJECTED, K_TARGET_DELETED)
_NO_CREATE = (K_EDGE_REJECTED, K_TARGET_DELETED, K_EDGE_REMOVED, K_EDGE_UPDATED)
_ERRORS_KEPT = 100


class ShardFailed(RuntimeError):
    """The shard could not log a batch; its memory may be ahead of its log. Rebuild it."""


class VertexNotFound(KeyError):
    """No vertex with this id exists (now, or at the asked time)."""

    def __init__(self, vertex_id: VertexId) -> None:
        super().__init__(vertex_id)
        self.vertex_id = vertex_id

    def __str__(self) -> str:
        return f"vertex {self.vertex_id!r} not found"


def source_channel(source: str) -> str:
    """The channel name of a stream source."""
    return f"src:{source}"


def shard_channel(shard: int) -> str:
    """The channel name of messages coming from ``shard``."""
    return f"shard:{shard}"


@dataclass(slots=True)
class Batch:
    """Items for one shard from one channel: ``items`` are ``(position, message)`` with
    strictly increasing positions, ``prev`` the position of the sender's previous item on
    this channel (0 for none), ``vector`` the sender's vector clock (shards only).

    ``side`` holds the sender's unlogged observer items (ephemeral messages): they ride
    along with the logged items but are never logged, numbered or acknowledged (see
    :mod:`shards.observe`). A batch with only side items has no ``items`` and no vector."""

    channel: str
    prev: int
    items: list[tuple[int, Message]]
    vector: tuple[int, ...] | None = None
    side: list[Any] | None = None

    @classmethod
    def of_updates(cls, updates: list[Update], prev: int = 0) -> Batch:
        """A batch of stream updates of one source (stamped with ``(source, offset)``)."""
        if not updates:
            raise ValueError("empty batch")
        items = [(u.offset, (K_UPDATE, u.vertex, None, u, u.ts)) for u in updates]
        return cls(source_channel(updates[0].source), prev, items)


@dataclass(slots=True)
class HandleResult:
    """What :meth:`ShardCore.handle` did: executions, duplicates skipped, whether the
    batch was buffered for later (its ``prev`` is ahead), and the channel's new position."""

    executed: int = 0
    duplicates: int = 0
    buffered: bool = False
    applied: int = 0


@dataclass(slots=True)
class VertexRecord:
    """A live vertex: its class, state, edges, clock and event time."""

    type_name: str
    state: dict[str, Any]
    out_edges: dict[VertexId, dict[str, Any]]
    in_edges: dict[VertexId, dict[str, Any]]
    clock: int = 0
    time: float = -math.inf

    def snapshot(self) -> dict[str, Any]:
        """A plain, independent copy (what queries return)."""
        return {
            "type": self.type_name,
            "clock": self.clock,
            "time": self.time,
            "state": dict(self.state),
            "out_edges": {k: dict(v) for k, v in self.out_edges.items()},
            "in_edges": {k: dict(v) for k, v in self.in_edges.items()},
        }


@dataclass(slots=True)
class _Outbox:
    items: deque[tuple[int, Message, int]] = field(default_factory=deque)  # (seq, msg, wc)
    next_seq: int = 1
    sent_upto: int = 0
    acked: int = 0


class ShardCore:
    """One shard: vertices, their behaviors, the shard's logs and clocks.

    ``store`` is the shard's :class:`~shards.logstore.LogStore` (``None`` runs without
    logging: an ephemeral graph with no history and no recovery). Creating a core over a
    non-empty store recovers the shard from it.
    """

    def __init__(
        self,
        shard_id: int,
        num_shards: int,
        store: LogStore | None,
        types: VertexTypes | None = None,
        *,
        checkpoint_interval: int = 64,
        shard_checkpoint_interval: int = 100_000,
    ) -> None:
        if not 0 <= shard_id < num_shards:
            raise ValueError(f"shard id {shard_id} outside 0..{num_shards - 1}")
        if checkpoint_interval < 1:
            raise ValueError("checkpoint_interval must be >= 1")
        self.shard_id = shard_id
        self.num_shards = num_shards
        self.store = store
        self.types = types or VertexTypes()
        self.checkpoint_interval = checkpoint_interval
        self.shard_checkpoint_interval = shard_checkpoint_interval
        self.max_time = -math.inf
        self.frontier = math.inf
        self.checkpoints: list[tuple[int, float]] = []  # (worker clock, max event time)
        self._last_checkpoint = 0
        self.vertices: dict[VertexId, VertexRecord] = {}
        self.vector = VectorClock(num_shards)
        self.applied: dict[str, int] = {}
        self.errors = 0
        self.recent_errors: deque[tuple[int, VertexId, str]] = deque(maxlen=_ERRORS_KEPT)
        self._outboxes = [_Outbox() for _ in range(num_shards)]
        self._reorder: dict[str, dict[int, Batch]] = {}
        self._vector_grew = False
        self._route: dict[VertexId, int] = {}
        self._observer: ShardObserver | None = None
        self._side_inflight = [0] * num_shards
        if store is not None:
            self._check_manifest(store)
            self._recover(store)

    def attach(self, observer: ShardObserver) -> None:
        """Attach the observer that sees every vertex change and sends side items."""
        self._observer = observer
        observer.attach(self)

    @property
    def observer(self) -> ShardObserver | None:
        """The attached observer, if any."""
        return self._observer

    # -- properties -------------------------------------------------------------------

    @property
    def worker_clock(self) -> int:
        """Number of behavior executions on this shard so far."""
        return self.vector[self.shard_id]

    def pending(self, dest: int) -> int:
        """Messages for ``dest`` not yet acknowledged."""
        return len(self._outboxes[dest].items)

    def min_pending_time(self) -> float:
        """The earliest event time of a message not yet acknowledged or applied here
        (``inf`` if none): no entry with an earlier time can still appear from them."""
        times = [msg[4] for box in self._outboxes for _, msg, _ in box.items]
        times += [m[4] for w in self._reorder.values() for b in w.values() for _, m in b.items]
        return min(times, default=math.inf)

    def pending_total(self) -> int:
        """Messages for all destinations not yet acknowledged."""
        return sum(len(o.items) for o in self._outboxes)

    def side_pending(self, dest: int) -> int:
        """Side items waiting to be sent to ``dest``."""
        observer = self._observer
        return 0 if observer is None else observer.side_pending(dest)

    def side_pending_total(self) -> int:
        """Side items waiting to be sent, or sent and not yet known to be received."""
        observer = self._observer
        if observer is None:
            return 0
        waiting = sum(observer.side_pending(d) for d in range(self.num_shards))
        return waiting + sum(self._side_inflight)

    # -- the state machine ------------------------------------------------------------

    def handle(self, batch: Batch) -> HandleResult:
        """Apply ``batch`` (and any buffered successors on its channel), log, release sends.

        Side items are handed to the observer after the logged items (at once if the
        logged items wait in the reorder buffer)."""
        channel = batch.channel
        applied = self.applied.get(channel, 0)
        if not batch.items:
            if batch.side and self._observer is not None:
                self._observer.receive_side(batch.side)
            return HandleResult(applied=applied)
        if batch.prev > applied:
            self._reorder.setdefault(channel, {})[batch.prev] = Batch(
                channel, batch.prev, batch.items, batch.vector
            )
            if batch.side and self._observer is not None:
                self._observer.receive_side(batch.side)
            return HandleResult(buffered=True, applied=applied)
        result = HandleResult()
        log = _Writes() if self.store is not None else None
        released: list[tuple[int, list[tuple[int, int, Message]]]] = []
        self._apply(batch, log, released, result)
        waiting = self._reorder.get(channel)
        while waiting:
            ready = [p for p in waiting if p <= self.applied.get(channel, 0)]
            if not ready:
                break
            for prev in sorted(ready):
                self._apply(waiting.pop(prev), log, released, result)
        if log is not None and log.events:
            batch_log = log.batch(self._cursor(released))
            if self.worker_clock - self._last_checkpoint >= self.shard_checkpoint_interval:
                wc = self.worker_clock
                batch_log.entries[LogName.CHECKPOINTS] = [(wc, self._shard_checkpoint())]
                self.checkpoints.append((wc, self.max_time))
                batch_log.put_meta(_CHECKPOINTS_KEY, _dumps(self.checkpoints, 5))
                self._last_checkpoint = wc
            try:
                self.store.append(batch_log)  # type: ignore[union-attr]
            except Exception as exc:
                raise ShardFailed(f"shard {self.shard_id}: log write failed: {exc}") from exc
        outboxes = self._outboxes
        for wc, sends in released:
            for dest, seq, msg in sends:
                outboxes[dest].items.append((seq, msg, wc))
        if batch.side and self._observer is not None:
            self._observer.receive_side(batch.side)
        result.applied = self.applied.get(channel, 0)
        return result

    def take_batch(self, dest: int, max_items: int = 10_000) -> Batch | None:
        """The next batch of unsent messages for ``dest`` (``None`` if there are none).

        They stay in the outbox until :meth:`ack`; after a failed delivery call
        :meth:`rewind` to send them again. The observer's side items for ``dest`` ride
        along (or make a side-only batch); they are counted in flight until the next
        :meth:`ack` or :meth:`rewind` for ``dest``.
        """
        box = self._outboxes[dest]
        items: list[tuple[int, Message]] = []
        if box.items and box.items[-1][0] > box.sent_upto:
            start = box.sent_upto - box.acked  # items are contiguous from acked + 1
            frontier = self.frontier
            for seq, msg, _ in islice(box.items, start, start + max_items):
                if msg[4] > frontier:
                    break
                items.append((seq, msg))
        observer = self._observer
        side = observer.take_side(dest) if observer and observer.side_pending(dest) else None
        if side:
            self._side_inflight[dest] += len(side)
        if not items:
            if not side:
                return None
            return Batch(shard_channel(self.shard_id), box.sent_upto, [], None, side)
        prev = box.sent_upto
        box.sent_upto = items[-1][0]
        return Batch(shard_channel(self.shard_id), prev, items, self.vector.as_tuple(), side)

    def set_frontier(self, time: float, *, reset: bool = False) -> None:
        """Hold back messages whose event time is above ``time`` (never lowers it, unless
        ``reset``). A source sets it to the time up to which every update it read was
        applied, so that no vertex handles a message from the future of an update it has
        not received yet -- which would push that update's entry past its own time."""
        self.frontier = time if reset else max(self.frontier, time)

    def releasable_pending(self) -> int:
        """Unacknowledged messages not held back by the frontier."""
        frontier = self.frontier
        return sum(1 for box in self._outboxes for _, msg, _ in box.items if msg[4] <= frontier)

    def ack(self, dest: int, upto: int) -> None:
        """``dest`` has applied (logged) every message up to sequence number ``upto`` and
        received the side items sent to it."""
        self._side_inflight[dest] = 0
        box = self._outboxes[dest]
        while box.items and box.items[0][0] <= upto:
            box.items.popleft()
        box.acked = max(box.acked, upto)
        box.sent_upto = max(box.sent_upto, box.acked)

    def rewind(self, dest: int) -> None:
        """Forget what was sent to ``dest`` but not acknowledged, so it is sent again
        (side items in flight are not resent: they are lost)."""
        self._side_inflight[dest] = 0
        box = self._outboxes[dest]
        box.sent_upto = box.acked

    # -- queries ----------------------------------------------------------------------

    def vertex(self, vertex_id: VertexId) -> dict[str, Any]:
        """A copy of the vertex's type, clock, time, state and edges; :class:`VertexNotFound`."""
        record = self.vertices.get(vertex_id)
        if record is None:
            raise VertexNotFound(vertex_id)
        return record.snapshot()

    def stats(self) -> dict[str, Any]:
        """Vertex and edge counts, clocks, errors and outbox sizes of this shard."""
        return {
            "shard": self.shard_id,
            "vertices": len(self.vertices),
            "edges": sum(len(r.out_edges) for r in self.vertices.values()),
            "worker_clock": self.worker_clock,
            "vector_clock": list(self.vector.as_tuple()),
            "errors": self.errors,
            "pending": self.pending_total(),
            "sent": [o.next_seq - 1 for o in self._outboxes],
            "applied": dict(self.applied),
            "side_pending": self.side_pending_total(),
            "side_processed": 0 if self._observer is None else self._observer.side_processed(),
        }

    # -- execution --------------------------------------------------------------------

    def _apply(
        self,
        batch: Batch,
        log: _Writes | None,
        released: list[tuple[int, list[tuple[int, int, Message]]]],
        result: HandleResult,
    ) -> None:
        if batch.vector is not None and self.vector.merge(batch.vector):
            self._vector_grew = True
        channel = batch.channel
        applied = self.applied.get(channel, 0)
        for position, msg in batch.items:
            if position <= applied:
                result.duplicates += 1
                continue
            self._execute(msg, channel, position, log, released)
            applied = position
            result.executed += 1
        self.applied[channel] = applied

    def _execute(
        self,
        msg: Message,
        channel: str,
        position: int,
        log: _Writes | None,
        released: list[tuple[int, list[tuple[int, int, Message]]]],
    ) -> None:
        kind, vid, sender, payload, ts = msg
        if self._shard_of(vid) != self.shard_id:
            raise ValueError(f"vertex {vid!r} does not belong to shard {self.shard_id}")
        wc = self.vector.tick(self.shard_id)
        record = self.vertices.get(vid)
        created = record is None
        error: str | None = None
        ctx: Context | None = None
        if created and _creates_nothing(kind, payload):
            record = None
        else:
            if record is None:
                vtype = _created_type(kind, payload) or self.types.default_name
                record = VertexRecord(vtype, {}, {}, {})
            ctx = Context(
                vid,
                record.clock + 1,
                max(record.time, ts),
                dict(record.state),
                record.out_edges,
                record.in_edges,
                sender,
            )
            try:
                in_op = self._dispatch(record, ctx, created, kind, sender, payload)
            except Exception as exc:  # a failing behavior applies nothing
                error = f"{type(exc).__name__}: {exc}"
        if log is not None:
            plain = update_to_plain(payload) if kind == K_UPDATE else payload
            log.commands.append(
                (
                    wc,
                    _dumps(
                        (vid, ctx.clock if ctx else 0, kind, sender, plain, ts, channel, position),
                        5,
                    ),
                )
            )
            if self._vector_grew:  # log the vector when it learnt something from another shard
                log.clocks.append((wc, _dumps(self.vector.as_tuple(), 5)))
                self._vector_grew = False
        entry_time = ts if ctx is None else ctx.time
        if entry_time > self.max_time:
            self.max_time = entry_time
        if ctx is None or record is None:
            if log is not None:
                log.events.append(
                    (wc, _dumps((vid, 0, ts, None, {}, (), (), (), (), None, False), 5))
                )
            return
        if error is not None:
            self.errors += 1
            self.recent_errors.append((wc, vid, error))
            if not created:
                record.clock, record.time = ctx.clock, ctx.time
            if log is not None:
                entry = (vid, ctx.clock, ctx.time, None, {}, (), (), (), (), error, False)
                log.events.append((wc, _dumps(entry, 5)))
            return
        old_state = record.state
        new_state = ctx.state
        state_set = {k: v for k, v in new_state.items() if k not in old_state or old_state[k] != v}
        state_del = tuple(k for k in old_state if k not in new_state)
        sends = self._effects(record, ctx, kind, sender)
        edge_ops = tuple(ctx.edge_ops.items())
        observer = self._observer
        change = None
        if observer is not None and observer.watching:
            change = _change(vid, record, wc, created, ctx.deleted, old_state, edge_ops, in_op)
        for dst, props in edge_ops:
            if props is None:
                record.out_edges.pop(dst, None)
            else:
                record.out_edges[dst] = props
        if in_op is not None:
            src, props = in_op
            if props is None:
                record.in_edges.pop(src, None)
            else:
                record.in_edges[src] = props
        record.state = new_state
        record.clock, record.time = ctx.clock, ctx.time
        if ctx.deleted:
            self.vertices.pop(vid, None)
        elif created:
            self.vertices[vid] = record
        if change is not None:
            change.clock, change.time = ctx.clock, ctx.time
            change.state = None if ctx.deleted else new_state
            observer.vertex_changed(change)  # type: ignore[union-attr]
        if log is not None:
            checkpoint = None
            if not ctx.deleted and (created or ctx.clock % self.checkpoint_interval == 0):
                checkpoint = (record.type_name, new_state, record.out_edges, record.in_edges)
            entry = (
                vid,
                ctx.clock,
                ctx.time,
                checkpoint,
                {} if checkpoint else state_set,
                () if checkpoint else state_del,
                edge_ops,
                () if in_op is None else (in_op,),
                sends,
                None,
                ctx.deleted,
            )
            log.events.append((wc, _dumps(entry, 5)))
        if sends:
            released.append((wc, sends))

    def _dispatch(
        self,
        record: VertexRecord,
        ctx: Context,
        created: bool,
        kind: int,
        sender: VertexId | None,
        payload: Any,
    ) -> tuple[VertexId, dict[str, Any] | None] | None:
        """Run the hooks for one message; returns the incoming-edge record change."""
        behavior = self.types.behavior(record.type_name)
        if created:
            behavior.on_create(ctx, _creation_props(kind, payload))
        if kind == K_UPDATE:
            upd: Update = payload
            if upd.kind is UpdateKind.ADD_VERTEX:
                if not created:
                    ctx.state.update(upd.props)
            elif upd.kind is UpdateKind.REMOVE_VERTEX:
                behavior.on_delete(ctx)
                ctx.deleted = True
            elif upd.kind is UpdateKind.MESSAGE:
                behavior.on_message(ctx, upd.props)
            else:
                behavior.on_edge_event(ctx, upd.kind, upd.dst, upd.ts, upd.props)  # type: ignore[arg-type]
        elif kind == K_USER:
            behavior.on_message(ctx, payload)
        elif kind == K_EDGE_ADDED or kind == K_EDGE_UPDATED:
            assert sender is not None
            if sender in record.in_edges:
                behavior.on_update_edge(ctx, sender, payload)
                return sender, payload
            if kind == K_EDGE_ADDED:
                if behavior.on_add_edge(ctx, sender, payload):
                    return sender, payload
                ctx.sends.append((sender, _REJECT))
        elif kind == K_EDGE_REMOVED:
            if sender in record.in_edges:
                behavior.on_remove_edge(ctx, sender)  # type: ignore[arg-type]
                return sender, None
        elif kind in _EDGE_CLEANUP:
            if ctx.edge(sender) is not None:  # type: ignore[arg-type]
                ctx.edge_ops[sender] = None  # type: ignore[index]
                behavior.on_edge_dropped(ctx, sender)  # type: ignore[arg-type]
        elif kind == K_SPAWN:
            pass  # creation (if new) already ran on_create
        return None

    def _effects(
        self, record: VertexRecord, ctx: Context, kind: int, sender: VertexId | None
    ) -> list[tuple[int, int, Message]]:
        """Number the messages an execution emits: sends, spawns, edge notices."""
        vid, time = ctx.vertex_id, ctx.time
        out: list[tuple[VertexId, Message]] = []
        for dst, payload in ctx.sends:
            if payload is _REJECT:
                out.append((dst, (K_EDGE_REJECTED, dst, vid, None, time)))
            else:
                out.append((dst, (K_USER, dst, vid, payload, time)))
        for new_id, vtype, props in ctx.spawns:
            out.append((new_id, (K_SPAWN, new_id, vid, (vtype, props), time)))
        silent = kind in _EDGE_CLEANUP  # removing an edge its target refused or lost
        for dst, props in ctx.edge_ops.items():
            if silent and dst == sender:
                continue
            if props is None:
                if dst in record.out_edges:
                    out.append((dst, (K_EDGE_REMOVED, dst, vid, None, time)))
            elif dst in record.out_edges:
                out.append((dst, (K_EDGE_UPDATED, dst, vid, props, time)))
            else:
                out.append((dst, (K_EDGE_ADDED, dst, vid, props, time)))
        if ctx.deleted:
            for dst in record.out_edges:
                if ctx.edge_ops.get(dst, _KEEP) is not None:
                    out.append((dst, (K_EDGE_REMOVED, dst, vid, None, time)))
            for src in record.in_edges:
                out.append((src, (K_TARGET_DELETED, src, vid, None, time)))
        numbered: list[tuple[int, int, Message]] = []
        for dst, msg in out:
            dest = self._shard_of(dst)
            box = self._outboxes[dest]
            numbered.append((dest, box.next_seq, msg))
            box.next_seq += 1
        return numbered

    def _shard_of(self, vertex_id: VertexId) -> int:
        shard = self._route.get(vertex_id)
        if shard is None:
            shard = self._route[vertex_id] = shard_of(vertex_id, self.num_shards)
        return shard

    # -- persistence ------------------------------------------------------------------

    def _cursor(self, released: list[tuple[int, list[tuple[int, int, Message]]]]) -> bytes:
        """Channel positions and the first entry whose messages may be unacknowledged."""
        oldest = [o.items[0][2] for o in self._outboxes if o.items]
        if released:
            oldest.append(released[0][0])
        floor = min(oldest, default=self.worker_clock + 1)
        return pickle.dumps(
            {
                "applied": self.applied,
                "next_seq": [o.next_seq for o in self._outboxes],
                "acked": [o.acked for o in self._outboxes],
                "floor": floor,
            },
            protocol=5,
        )

    def _check_manifest(self, store: LogStore) -> None:
        raw = store.get_meta(_MANIFEST_KEY)
        manifest = {"shard": self.shard_id, "num_shards": self.num_shards, "format": 1}
        if raw is None:
            if store.last_seq(LogName.EVENTS) == 0:
                log = LogBatch()
                log.put_meta(_MANIFEST_KEY, pickle.dumps(manifest, protocol=5))
                store.append(log)
            return
        found = pickle.loads(raw)
        if (found["shard"], found["num_shards"]) != (self.shard_id, self.num_shards):
            raise ValueError(
                f"log holds shard {found['shard']} of {found['num_shards']}, "
                f"opened as shard {self.shard_id} of {self.num_shards}"
            )

    def _recover(self, store: LogStore) -> None:
        raw = store.get_meta(_CURSOR_KEY)
        if raw is None:
            return
        cursor = pickle.loads(raw)
        self.applied = dict(cursor["applied"])
        for box, next_seq, acked in zip(
            self._outboxes, cursor["next_seq"], cursor["acked"], strict=True
        ):
            box.next_seq, box.acked, box.sent_upto = next_seq, acked, acked
        floor = cursor["floor"]
        last = store.last_seq(LogName.EVENTS)
        self.checkpoints = list_shard_checkpoints(store)
        checkpoint = load_shard_checkpoint(store, last)
        start = 1
        if checkpoint is not None:
            self.vertices = checkpoint.vertices
            self.errors = checkpoint.errors
            self.max_time = checkpoint.max_time
            start = checkpoint.wc + 1
            self._last_checkpoint = checkpoint.wc
        for wc, data in store.scan(LogName.EVENTS, min(start, floor)):
            entry = decode_event(data)
            if wc >= start:
                if entry.error is not None:
                    self.errors += 1
                replay_event(self.vertices, entry)
                if entry.time > self.max_time:
                    self.max_time = entry.time
            if wc >= floor:
                for dest, seq, msg in entry.sends:
                    box = self._outboxes[dest]
                    if seq > box.acked:
                        box.items.append((seq, msg, wc))
        found = store.floor(LogName.CLOCKS, last) if last else None
        if found is not None:
            self.vector.merge(pickle.loads(found[1]))
        self.vector[self.shard_id] = last

    def _shard_checkpoint(self) -> bytes:
        """The whole shard as one value: every vertex's full state, clocks, time."""
        vertices = {
            vid: (r.type_name, r.state, r.out_edges, r.in_edges, r.clock, r.time)
            for vid, r in self.vertices.items()
        }
        return _dumps(
            (self.worker_clock, self.max_time, self.vector.as_tuple(), self.errors, vertices), 5
        )


@dataclass(slots=True)
class ShardCheckpoint:
    """A shard's full state after worker clock ``wc``; ``max_time`` is the latest event time
    of any entry up to ``wc`` (so the checkpoint serves time cuts ``T >= max_time``)."""

    wc: int
    max_time: float
    vector: tuple[int, ...]
    errors: int
    vertices: dict[VertexId, VertexRecord]


def decode_shard_checkpoint(data: bytes) -> ShardCheckpoint:
    """Decode a value of the checkpoints log."""
    wc, max_time, vector, errors, raw = pickle.loads(data)
    vertices = {vid: VertexRecord(*fields) for vid, fields in raw.items()}
    return ShardCheckpoint(wc, max_time, tuple(vector), errors, vertices)


def list_shard_checkpoints(store: LogStore) -> list[tuple[int, float]]:
    """``(worker clock, max event time)`` of every shard checkpoint, oldest first."""
    raw = store.get_meta(_CHECKPOINTS_KEY)
    return [] if raw is None else list(pickle.loads(raw))


def load_shard_checkpoint(store: LogStore, upto_wc: int) -> ShardCheckpoint | None:
    """The latest shard checkpoint at or before worker clock ``upto_wc``, if any."""
    found = store.floor(LogName.CHECKPOINTS, upto_wc) if upto_wc > 0 else None
    return decode_shard_checkpoint(found[1]) if found is not None else None


def replay_event(vertices: dict[VertexId, VertexRecord], entry: EventEntry) -> None:
    """Apply one logged event entry to ``vertices`` (the replay step of recovery and of
    snapshot reconstruction)."""
    vid = entry.vertex
    if entry.error is not None:
        record = vertices.get(vid)
        if record is not None:
            record.clock, record.time = entry.clock, entry.time
        return
    if entry.clock == 0:  # a message that found nothing to act on
        return
    if entry.deleted:
        vertices.pop(vid, None)
        return
    if entry.checkpoint is not None:
        type_name, state, out_edges, in_edges = entry.checkpoint
        vertices[vid] = VertexRecord(type_name, state, out_edges, in_edges, entry.clock, entry.time)
        return
    apply_event(vertices[vid], entry)


def apply_event(record: VertexRecord, entry: EventEntry) -> None:
    """Apply a logged delta (an event entry without checkpoint) to ``record`` in place."""
    if entry.state_set or entry.state_del:
        state = dict(record.state)
        state.update(entry.state_set)
        for key in entry.state_del:
            state.pop(key, None)
        record.state = state
    for dst, props in entry.edge_ops:
        if props is None:
            record.out_edges.pop(dst, None)
        else:
            record.out_edges[dst] = props
    for src, props in entry.in_ops:
        if props is None:
            record.in_edges.pop(src, None)
        else:
            record.in_edges[src] = props
    record.clock, record.time = entry.clock, entry.time


class _Writes:
    """The log entries of one ``handle`` call, appended in worker-clock order."""

    __slots__ = ("commands", "events", "clocks")

    def __init__(self) -> None:
        self.commands: list[tuple[int, bytes]] = []
        self.events: list[tuple[int, bytes]] = []
        self.clocks: list[tuple[int, bytes]] = []

    def batch(self, cursor: bytes) -> LogBatch:
        entries = {LogName.COMMANDS: self.commands, LogName.EVENTS: self.events}
        if self.clocks:
            entries[LogName.CLOCKS] = self.clocks
        return LogBatch(entries, {_CURSOR_KEY: cursor})


def _change(
    vid: VertexId,
    record: VertexRecord,
    wc: int,
    created: bool,
    deleted: bool,
    old_state: dict[str, Any],
    edge_ops: tuple[tuple[VertexId, dict[str, Any] | None], ...],
    in_op: tuple[VertexId, dict[str, Any] | None] | None,
) -> VertexChange:
    """The change an execution makes, computed before its edge operations are applied."""
    out = record.out_edges
    if deleted:
        removed_out, added_out = tuple(out), ()
    else:
        added_out = tuple(d for d, p in edge_ops if p is not None and d not in out)
        removed_out = tuple(d for d, p in edge_ops if p is None and d in out)
    added_in: tuple[VertexId, ...] = ()
    removed_in: tuple[VertexId, ...] = ()
    if deleted:
        removed_in = tuple(record.in_edges)
    elif in_op is not None:
        src, props = in_op
        if props is None:
            removed_in = (src,) if src in record.in_edges else ()
        elif src not in record.in_edges:
            added_in = (src,)
    return VertexChange(
        vid,
        record,
        wc,
        None if created else old_state,
        None,
        added_out,
        removed_out,
        added_in,
        removed_in,
    )


_REJECT: Mapping[str, Any] = {"__chronoray__": "reject"}
_KEEP: dict[str, Any] = {}


def _creates_nothing(kind: int, payload: Any) -> bool:
    """Messages about an edge or vertex that is gone must not create a vertex."""
    if kind in _NO_CREATE:
        return True
    return kind == K_UPDATE and payload.kind in (
        UpdateKind.REMOVE_VERTEX,
        UpdateKind.REMOVE_EDGE,
        UpdateKind.UPDATE_EDGE,
    )


def _created_type(kind: int, payload: Any) -> str | None:
    if kind == K_UPDATE:
        return payload.vertex_type  # type: ignore[no-any-return]
    if kind == K_SPAWN:
        return payload[0]  # type: ignore[no-any-return]
    return None


def _creation_props(kind: int, payload: Any) -> Mapping[str, Any]:
    if kind == K_UPDATE and payload.kind is UpdateKind.ADD_VERTEX:
        return payload.props  # type: ignore[no-any-return]
    if kind == K_SPAWN:
        return payload[1]  # type: ignore[no-any-return]
    return {}
