"""``ShardCore``: one shard of the graph as a pure state machine (no Ray, no threads).

A shard hosts the vertices whose ids hash to it and runs their behaviors one at a time.
It is fed :class:`Batch` es -- stream updates from a source, or vertex messages from a
shard (itself included) -- and answers with messages for other shards, which it keeps in
per-destination outboxes until the destination acknowledges them. The Ray actor
``ShardWorker`` only moves batches between cores; tests drive cores directly.

Guarantees:

* **Acknowledged = logged.** :meth:`ShardCore.handle` writes one atomic log batch -- one
  block of command entries, one of event entries and one block header (see
  :mod:`shards.codec`), the channel cursors, and a shard checkpoint when one is due --
  before it returns; only then are the batch's messages released to the outboxes. If the
  write fails the core raises :class:`ShardFailed` and must be rebuilt from its log (its
  memory may be ahead of it).
* **Exactly once per channel.** A batch names its channel and the position of the last
  item the sender sent on it before (``prev``). Items at or below the channel's applied
  position are duplicates and skipped; a batch whose ``prev`` is ahead of the applied
  position waits in a reorder buffer. Positions are stream offsets for sources and
  per-(sender shard, receiver shard) message sequence numbers for shards, and the applied
  positions are logged with every batch, so resends after a crash are applied once.
* **FIFO** per (sender vertex, receiver vertex): messages are numbered per channel in
  send order and applied in channel order.
* **A failing behavior applies nothing**: its entry records the error, the vertex's
  clock and time advance, nothing else changes and nothing is sent.
* **Log cost independent of degree.** An entry logs what the execution changed (state
  keys, the edges it touched, the messages it sent), never a whole vertex. The whole shard
  is checkpointed once at least ``shard_checkpoint_interval`` entries *and* as many entries
  as the checkpoint holds records (vertices and edges) were logged since the last one, so a
  checkpoint never costs more than the replay it saves.
* **Columns mean their items.** A source batch of stream ``add_edge`` halves, or of
  stream messages, may come as columns (:class:`~shards.codec.EdgeRun`,
  :class:`~shards.codec.MessageRun`); it is applied, logged and acknowledged exactly as
  its items would be -- the same effects, the same ``events`` entries, the same
  ``commands`` entries once decoded (the run is logged as its columns). It runs from the
  columns, without a message per row (messages: a batch class gets the payload columns,
  a message is built only for a per-message call), when no other source is queued or
  gated and no observer watches; otherwise its items are built and take the row path.
  Edge halves without properties at vertices of the built-in temporal class run through
  the shard's temporal columns (:mod:`shards.temporal`: one compiled pass, no Python per
  row, new vertices of that class created in it; made at the run that takes the rows of
  such runs past :data:`TEMPORAL_AFTER`) and are logged as columns too
  (:class:`~shards.codec.TemporalEntries`, the same entries once decoded); the records
  of those vertices are written back before anything reads them (:attr:`vertices`,
  queries, checkpoints) and the columns dropped before anything else runs a behavior.
* **Recovery.** A new core over an existing log rebuilds every vertex from the newest
  shard checkpoint plus the entries after it (:class:`~shards.replay.LogReplay`) and
  rebuilds the outboxes from the first entry whose messages were not known to be
  acknowledged.
"""

from __future__ import annotations

import math
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from shards.blocks import BlockWriter, SchemaTracker
from shards.clocks import VectorClock
from shards.codec import (
    CHECKPOINTS_KEY,
    CURSOR_KEY,
    FORMAT_VERSION,
    K_EDGE_ADDED,
    K_EDGE_REJECTED,
    K_EDGE_REMOVED,
    K_EDGE_UPDATED,
    K_IN_EDGE,
    K_SPAWN,
    K_TARGET_DELETED,
    K_UPDATE,
    K_USER,
    SCHEMA_KEY,
    TEMPORAL_CREATED,
    TEMPORAL_NEW,
    Channels,
    CheckpointColumns,
    Cursor,
    EdgeRun,
    LogFormatError,
    Manifest,
    Message,
    MessageRun,
    Schema,
    TemporalEntries,
    decode_cursor,
    decode_schema,
    earliest_time,
    encode_checkpoint,
    encode_checkpoint_list,
    encode_cursor,
    manifest_batch,
    owner_halves,
    run_message,
    update_messages,
)
from shards.coordinator import Promise, source_channel
from shards.execute import (
    EDGE_CLEANUP,
    HANDLERS,
    REJECT,
    Execution,
    created_type,
    creates_nothing,
    creation_props,
    settle,
    state_change,
)
from shards.logstore import LogCorrupted, LogName, LogStore
from shards.observe import ChangeBatch, ShardObserver, VertexChange, VertexView
from shards.protocol import Outcome, ShardStats
from shards.records import VertexRecord, set_edge
from shards.replay import (
    LogReplay,
    checkpoint_list,
    headers,
    last_worker_clock,
    load_shard_checkpoint,
    log_location,
    paused_gc,
    read_manifest,
)
from shards.routing import shard_of
from shards.temporal import TemporalColumns, fits, is_temporal
from vertex.annotations import mark_module_api
from vertex.batch import BatchVertex, MessageBatch, Payloads, batch_rows
from vertex.model import (
    Context,
    DirectHooks,
    TemporalVertex,
    Vertex,
    VertexTypes,
    temporal_edge,
)
from vertex.records import EDGE_KINDS, Update, UpdateKind, VertexId

__all__ = [
    "Batch",
    "Outcome",
    "ShardCore",
    "ShardFailed",
    "VertexNotFound",
    "VertexRecord",
    "source_channel",
    "shard_channel",
]

_ERRORS_KEPT = 100
TEMPORAL_AFTER = 20_000
"""Rows of column runs a shard runs the row way before it makes its temporal columns
(:mod:`shards.temporal`; the run that takes the count past it runs on them): they pay for
numba's import (about half a second of CPU per process) on a long stream, and a small
graph never makes them."""
_EDGE_KIND = {k.value: k for k in EDGE_KINDS}
_IN_EDGE_KINDS = frozenset((UpdateKind.ADD_EDGE.value, UpdateKind.UPDATE_EDGE.value))
_ADD_EDGE = UpdateKind.ADD_EDGE
_MESSAGE = UpdateKind.MESSAGE.value


class ShardFailed(RuntimeError):
    """The shard could not log a batch; its memory may be ahead of its log. Rebuild it."""


class VertexNotFound(KeyError):
    """No vertex with this id exists (now, or at the asked time)."""

    def __init__(self, vertex_id: VertexId) -> None:
        super().__init__(vertex_id)
        self.vertex_id = vertex_id

    def __str__(self) -> str:
        return f"vertex {self.vertex_id!r} not found"


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
    :mod:`shards.observe`). A batch with only side items has no ``items`` and no vector.
    Messages are plain tuples (see :mod:`shards.codec`), so a batch pickles fast.

    ``halves`` (source batches): the source sends every stream edge update to its
    target's shard too (``K_IN_EDGE``, at the same position; both halves travel in one
    batch when they go to the same shard). Then, in a graph with stream edges
    (:attr:`~vertex.model.VertexTypes.stream_edges`), the owner sends its target no
    notice: the target applies the update itself, in stream order.

    ``columns`` (source batches of stream ``add_edge`` halves, or of stream messages):
    the items as an :class:`~shards.codec.EdgeRun` (a
    :class:`~shards.codec.MessageRun`) instead of tuples (``items`` is then empty); it
    means exactly the items :meth:`rows` builds from it, and crosses Ray as a few
    buffers."""

    channel: str
    prev: int
    items: list[tuple[int, Message]]
    vector: tuple[int, ...] | None = None
    side: list[Any] | None = None
    halves: bool = False
    columns: EdgeRun | MessageRun | None = None

    @property
    def size(self) -> int:
        """The number of items (rows of the columns)."""
        columns = self.columns
        return len(self.items) if columns is None else len(columns)

    def rows(self) -> list[tuple[int, Message]]:
        """The ``(position, message)`` items, built from the columns if it has them."""
        columns = self.columns
        return self.items if columns is None else columns.items()

    def earliest(self) -> float:
        """The earliest event time of an item."""
        columns = self.columns
        if columns is not None:
            return columns.earliest()
        return earliest_time(self.items)

    def updates(self) -> int:
        """Items that stand for one update each (the owner's halves, whole updates)."""
        columns = self.columns
        return owner_halves(self.items) if columns is None else columns.updates()

    @classmethod
    def of_updates(cls, updates: list[Update], prev: int = 0) -> Batch:
        """A batch of stream updates of one source (stamped with ``(source, offset)``)."""
        if not updates:
            raise ValueError("empty batch")
        return cls(source_channel(updates[0].source), prev, update_messages(updates))


@dataclass(slots=True)
class _Queue:
    """A source channel's items taken and waiting to be merged (see ``_merge``): as
    ``(position, message)`` items, or -- while only columns came -- as the column runs."""

    halves: bool
    items: deque[tuple[int, Message]] = field(default_factory=deque)
    runs: list[EdgeRun | MessageRun] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.items) + sum(map(len, self.runs))

    def head_time(self) -> Any:
        """The event time of the first waiting item."""
        return self.items[0][1][4] if self.items else self.runs[0].time[0].item()

    def add_items(self, items: list[tuple[int, Message]]) -> None:
        """Queue items after what waits (columns waiting become items first)."""
        self.as_items()
        self.items.extend(items)

    def add_run(self, run: EdgeRun | MessageRun) -> None:
        """Queue a column run after what waits (as its items if items wait)."""
        if self.items:
            self.items.extend(run.items())
        else:
            self.runs.append(run)

    def as_items(self) -> None:
        """Turn the waiting column runs into their items (for the row merge)."""
        for run in self.runs:
            self.items.extend(run.items())
        self.runs.clear()

    def count_before(self, time: Any, inclusive: bool) -> int:
        """How many leading rows of the waiting column runs have a time below ``time`` (or
        equal to it, if ``inclusive``); a channel's times never decrease."""
        side: Literal["left", "right"] = "right" if inclusive else "left"
        total = 0
        for run in self.runs:
            found = int(np.searchsorted(run.time, time, side=side))
            total += found
            if found < len(run):
                break
        return total

    def row_time(self, row: int) -> Any:
        """The time of row ``row`` of the waiting column runs."""
        for run in self.runs:
            if row < len(run):
                return run.time[row].item()
            row -= len(run)
        raise IndexError(row)

    def take_rows(self, count: int) -> EdgeRun | MessageRun:
        """The first ``count`` rows of the waiting column runs, as one run, removed."""
        taken = []
        while count:
            run = self.runs[0]
            if len(run) <= count:
                taken.append(self.runs.pop(0))
                count -= len(run)
            else:
                taken.append(run.slice(0, count))
                self.runs[0] = run.slice(count, len(run))
                count = 0
        return type(taken[0]).concat(taken)  # type: ignore[arg-type]

    def take_before(self, limit: tuple[float, str], channel: str) -> list[tuple[int, Message]]:
        """The leading items whose ``(time, channel)`` is below ``limit`` (a channel's
        times never decrease), removed from the queue."""
        items = self.items
        if limit is _NO_LIMIT:
            taken = list(items)
            items.clear()
            return taken
        taken = []
        while items and (items[0][1][4], channel) < limit:
            taken.append(items.popleft())
        return taken


def _mergeable_columns(queues: Iterable[_Queue]) -> bool:
    """Whether the queues hold column runs only, all of one kind (class, time type,
    halves and properties' type): what :meth:`ShardCore._merge_columns` merges."""
    kinds = {(run.kind(), q.halves) for q in queues for run in (() if q.items else q.runs)}
    return len(kinds) == 1 and all(not q.items for q in queues)


_NO_LIMIT = (math.inf, "")
_SOURCE_PREFIX = source_channel("")


@dataclass(slots=True)
class _Outbox:
    items: deque[tuple[int, Message, int]] = field(default_factory=deque)  # (seq, msg, wc)
    next_seq: int = 1
    sent_upto: int = 0
    acked: int = 0


@dataclass(slots=True)
class _Stretch:
    """Consecutive stream messages to existing vertices of batch classes, for
    ``ShardCore._run_batch``: per message its vertex, time, record and payload (a list
    of dicts, or :class:`~vertex.batch.Payloads` over columns); ``messages`` builds the
    messages themselves, needed only when the stretch runs again one by one."""

    vertex: list[VertexId]
    time: list[Any]
    records: list[VertexRecord]
    payloads: Sequence[Mapping[str, Any]]
    messages: Callable[[], list[Message]]

    @classmethod
    def of_messages(cls, messages: list[Message], records: list[VertexRecord]) -> _Stretch:
        """A stretch of message tuples."""
        return cls(
            [m[1] for m in messages],
            [m[4] for m in messages],
            records,
            [m[3][2] for m in messages],
            lambda: messages,
        )

    @classmethod
    def of_run(
        cls,
        run: MessageRun,
        start: int,
        stop: int,
        records: list[VertexRecord],
        payloads: Payloads,
    ) -> _Stretch:
        """Rows ``start .. stop-1`` of a run of message columns (``payloads``: the run's)."""
        part = run.slice(start, stop)
        whole = start == 0 and stop == len(run)
        return cls(
            part.vertex.tolist(),
            part.time.tolist(),
            records,
            payloads if whole else Payloads(part.props, stop - start),
            lambda: [message for _, message in part.items()],
        )

    def payloads_at(self, rows: list[int]) -> Sequence[Mapping[str, Any]]:
        """The payloads of ``rows``."""
        payloads = self.payloads
        if isinstance(payloads, Payloads):
            return payloads.take(rows)
        return [payloads[i] for i in rows]

    def states(self, rows: list[int] | None = None) -> list[Mapping[str, Any]]:
        """The states (read-only views) of the vertices of ``rows`` (all by default),
        one per vertex in first-seen order, as :class:`~vertex.batch.MessageBatch`
        indexes them."""
        vids, records = self.vertex, self.records
        if rows is not None:
            vids, records = [vids[i] for i in rows], [records[i] for i in rows]
        firsts = dict(zip(vids, records, strict=True))  # one record per vertex, first-seen order
        return [MappingProxyType(record.state) for record in firsts.values()]


class ShardCore:
    """One shard: vertices, their behaviors, the shard's logs and clocks.

    ``store`` is the shard's :class:`~shards.logstore.LogStore` (``None`` runs without
    logging: an ephemeral graph with no history and no recovery). Creating a core over a
    non-empty store recovers the shard from it; a store written in another format version
    is refused (:class:`~shards.codec.LogFormatError`), and a log value that fails its
    checksum or does not decode stops the recovery with
    :class:`~shards.logstore.LogCorrupted` naming this shard, the log's path, the column
    family and the key (no core is made). A vertex is never written whole;
    see the module doc for when the shard is.
    """

    def __init__(
        self,
        shard_id: int,
        num_shards: int,
        store: LogStore | None,
        types: VertexTypes | None = None,
        *,
        shard_checkpoint_interval: int = 100_000,
    ) -> None:
        if not 0 <= shard_id < num_shards:
            raise ValueError(f"shard id {shard_id} outside 0..{num_shards - 1}")
        if shard_checkpoint_interval < 1:
            raise ValueError("shard_checkpoint_interval must be >= 1")
        self.shard_id = shard_id
        self.num_shards = num_shards
        self.store = store
        self.types = types or VertexTypes()
        self.shard_checkpoint_interval = shard_checkpoint_interval
        self.max_time = -math.inf
        self.frontier = math.inf
        self.checkpoints: list[tuple[int, float]] = []  # (worker clock, max event time)
        self._last_checkpoint = 0
        self._next_checkpoint = shard_checkpoint_interval
        self._vertices: dict[VertexId, VertexRecord] = {}
        self._temporal: TemporalColumns | None = None
        """The built-in temporal class's vertices as columns, while column runs use them."""
        self._column_rows = 0  # rows of column runs that fit them, run the row way
        self.edge_count = 0
        """Out-edges of the vertices, kept as they change."""
        self.vector = VectorClock(num_shards)
        self._wc = 0
        self.applied: dict[str, int] = {}
        self.errors = 0
        self.recent_errors: deque[tuple[int, VertexId, str]] = deque(maxlen=_ERRORS_KEPT)
        self._outboxes = [_Outbox() for _ in range(num_shards)]
        self._reorder: dict[str, dict[int, Batch]] = {}
        self._vector_grew = False
        self.stream_edges = self.types.stream_edges
        self._batch_types = _batch_types(self.types)  # classes whose messages run as batches
        self._stream_batch = False  # the batch being applied carries stream edge halves
        self.times: dict[str, float] = {}  # time of the last update applied per source channel
        self.gate: dict[str, Promise] | None = None  # several sources: their promises
        self.received: dict[str, int] = {}  # per channel: the last position applied or queued
        self._queued: dict[str, _Queue] = {}
        self.incarnation = uuid.uuid4().hex[:12]
        """This instance's id: a core rebuilt from the log (a restart) has a new one."""
        self._route: dict[VertexId, int] = {}
        self._plans: dict[str, tuple[Vertex, DirectHooks]] = {}
        self._schema = SchemaTracker(Schema.empty())
        self._observer: ShardObserver | None = None
        self._side_inflight = [0] * num_shards
        self._failure: str | None = None  # a failed log write: memory is ahead of the log
        if store is not None:
            try:
                self._check_manifest(store)
                self._recover(store)
            except LogCorrupted as exc:
                raise exc.at(log_location(store), shard=shard_id) from exc

    def attach(self, observer: ShardObserver) -> None:
        """Attach the observer that sees every vertex change and sends side items."""
        self._observer = observer
        observer.attach(self)

    @property
    def observer(self) -> ShardObserver | None:
        """The attached observer, if any."""
        return self._observer

    @property
    def vertices(self) -> dict[VertexId, VertexRecord]:
        """The vertices of this shard by id, current (reading them writes back and drops
        the temporal columns, :mod:`shards.temporal`: the caller may change them)."""
        self._settle()
        return self._vertices

    def _settle(self) -> None:
        """Write the temporal columns back into the records and drop them: from here on
        the records alone hold the vertices (before anything but the columns' own pass
        runs behaviors or hands records out)."""
        columns = self._temporal
        if columns is not None:
            columns.flush()
            self._temporal = None

    def _flush(self) -> None:
        """Write the temporal columns back into the records, keeping them (before the
        records are read, not changed)."""
        if self._temporal is not None:
            self._temporal.flush()

    # -- properties -------------------------------------------------------------------

    @property
    def worker_clock(self) -> int:
        """Number of behavior executions on this shard so far."""
        return self._wc

    def pending(self, dest: int) -> int:
        """Messages for ``dest`` not yet acknowledged."""
        return len(self._outboxes[dest].items)

    def min_pending_time(self) -> float:
        """The earliest event time of a message not yet acknowledged or applied here
        (``inf`` if none): no entry with an earlier time can still appear from them."""
        times = [msg[4] for box in self._outboxes for _, msg, _ in box.items]
        times += [b.earliest() for w in self._reorder.values() for b in w.values()]
        times += [queue.head_time() for queue in self._queued.values()]
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

    def handle(self, batch: Batch) -> Outcome:
        """Apply ``batch`` (and any buffered successors on its channel), log, release sends.

        A source batch is taken into its channel's queue and merged with the other
        sources' (:meth:`set_gate`); what the gate lets run now runs in this call. Side
        items are handed to the observer after the logged items (at once if the logged
        items wait in the reorder buffer). The cyclic garbage collector pauses meanwhile:
        a batch's many short-lived objects would otherwise be scanned again and again
        while they are alive (cycles user code makes are collected right after).
        After a failed log write every call raises :class:`ShardFailed` again: the core
        never goes on from a state its log does not hold."""
        self._check_not_failed()
        with paused_gc():
            outcome = self._handle(batch)
        if batch.side and self._observer is not None:
            self._flush()  # the observer reads the vertices it got messages for
            self._observer.receive_side(batch.side)
        return outcome

    def _handle(self, batch: Batch) -> Outcome:
        channel = batch.channel
        if batch.size and batch.prev > self._received(channel):
            self._reorder.setdefault(channel, {})[batch.prev] = replace(batch, side=None)
            return self._outcome(channel, buffered=True)
        if not batch.size:
            return self._outcome(channel)
        block, released = self._begin()
        executed, duplicates = self._take(batch, block, released)
        waiting = self._reorder.get(channel)
        while waiting:
            ready = sorted(p for p in waiting if p <= self._received(channel))
            if not ready:
                break
            for prev in ready:
                ran, skipped = self._take(waiting.pop(prev), block, released)
                executed, duplicates = executed + ran, duplicates + skipped
        self._finish(block, released)
        return self._outcome(channel, executed, duplicates)

    def position(self, channel: str) -> Outcome:
        """Where ``channel`` stands: its applied and received positions (and this core's
        incarnation), nothing executed."""
        return self._outcome(channel)

    def _outcome(
        self, channel: str, executed: int = 0, duplicates: int = 0, buffered: bool = False
    ) -> Outcome:
        applied = self.applied.get(channel, 0)
        received = self.received.get(channel, applied)
        return Outcome(executed, duplicates, buffered, applied, received, self.incarnation)

    def _begin(self) -> tuple[BlockWriter | None, list[tuple[int, int, Message, int]]]:
        """The block one handled call logs, and the messages it releases once logged."""
        block = None
        if self.store is not None:
            block = BlockWriter(self._wc + 1, [o.next_seq for o in self._outboxes])
        return block, []

    def _finish(
        self, block: BlockWriter | None, released: list[tuple[int, int, Message, int]]
    ) -> None:
        """Log the block (if anything ran), then release its messages to the outboxes."""
        if block is not None and block.events:
            self._write(block, released)
        outboxes = self._outboxes
        for dest, seq, msg, wc in released:
            outboxes[dest].items.append((seq, msg, wc))

    def _received(self, channel: str) -> int:
        """The last position taken from ``channel``: applied, or queued to be merged."""
        return self.received.get(channel, 0)

    def _take(
        self,
        batch: Batch,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> tuple[int, int]:
        """Take a batch whose predecessors were taken: messages from a shard run at once,
        stream updates join their source's queue and merge (:meth:`_merge`). Returns the
        executions and the duplicates skipped."""
        channel, columns = batch.channel, batch.columns
        if columns is not None:
            return self._take_columns(channel, columns, batch.halves, block, released)
        items = batch.items
        received = self._received(channel)
        duplicates = 0
        if items[0][0] <= received:  # positions increase: the duplicates come first
            fresh = [item for item in items if item[0] > received]
            duplicates = len(items) - len(fresh)
            items = fresh
        if not items:
            return 0, duplicates
        self.received[channel] = items[-1][0]
        if batch.vector is not None:
            if self.vector.merge(batch.vector):
                self._vector_grew = True
            return self._run(channel, items, False, block, released), duplicates
        return self._enqueue(channel, items, batch.halves, block, released), duplicates

    def _enqueue(
        self,
        channel: str,
        items: list[tuple[int, Message]],
        halves: bool,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> int:
        """Queue a source's items and merge the queues (:meth:`_merge`)."""
        self._queue(channel, halves).add_items(items)
        return self._merge(block, released)

    def _queue(self, channel: str, halves: bool) -> _Queue:
        queue = self._queued.get(channel)
        if queue is None:
            queue = self._queued[channel] = _Queue(halves)
        return queue

    def _take_columns(
        self,
        channel: str,
        columns: EdgeRun | MessageRun,
        halves: bool,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> tuple[int, int]:
        """Take a source batch of columns: duplicates cut on the positions, then run as
        columns when nothing needs merging -- no other source queued or gated (the merge
        would run it whole at once anyway) -- else the run joins its channel's queue."""
        fresh = columns.after(self._received(channel))
        duplicates = len(columns) - len(fresh)
        if not len(fresh):
            return 0, duplicates
        self.received[channel] = fresh.last_position
        if self.gate is not None or self._queued:
            self._queue(channel, halves).add_run(fresh)
            return self._merge(block, released), duplicates
        return self._run_columns(channel, fresh, halves, block, released), duplicates

    def set_gate(self, gate: Mapping[str, Promise] | None) -> Outcome:
        """Several sources feed the graph: ``gate`` maps each active source's channel to
        its :class:`~shards.coordinator.Promise`, and their updates run in ``(time,
        channel)`` order, each only once no other source can still send one before it
        (a promise counts only once this shard received everything it was made after).
        ``None``: one source, whose updates run as they come. Returns what ran (queued
        updates a raised promise releases; they are logged before this returns). A core
        whose log write failed only records the gate: it runs nothing until it is rebuilt
        from its log."""
        self.gate = None if gate is None else dict(gate)
        if not self._queued or self._failure is not None:
            return Outcome(incarnation=self.incarnation)
        with paused_gc():
            block, released = self._begin()
            executed = self._merge(block, released)
            self._finish(block, released)
        return Outcome(executed, incarnation=self.incarnation)

    def _check_not_failed(self) -> None:
        """Refuse to run anything after a failed log write (memory may be ahead of the log)."""
        if self._failure is not None:
            raise ShardFailed(f"{self._failure} (rebuild the shard from its log)")

    def _merge(
        self, block: BlockWriter | None, released: list[tuple[int, int, Message, int]]
    ) -> int:
        """Run queued source updates in ``(time, channel)`` order, each once no other
        source can still bring an earlier one here: each vertex sees the updates of every
        source in event-time order, the same order on any shard count. Returns the
        executions."""
        queues = self._queued
        if _mergeable_columns(queues.values()):
            return self._merge_columns(block, released)
        for queue in queues.values():
            queue.as_items()
        executed = 0
        while queues:
            channel = min(queues, key=lambda c: (queues[c].items[0][1][4], c))
            queue = queues[channel]
            items = queue.take_before(self._limit(channel), channel)
            if not items:
                break
            if not queue.items:
                del queues[channel]
            executed += self._run(channel, items, queue.halves, block, released)
        return executed

    def _merge_columns(
        self, block: BlockWriter | None, released: list[tuple[int, int, Message, int]]
    ) -> int:
        """:meth:`_merge` where every queue holds column runs of one kind: the rows that
        come, in ``(time, channel)`` order, before the first row a promise holds back
        (each queue's count found by binary search) are taken from their queues, sorted
        by ``(time, channel)`` in numpy (each channel's in its order) and run as one run
        -- merged from several channels (:class:`~shards.codec.Channels`) where they are
        of several. The same executions in the same order as the row merge, without an
        item per row; only the rows that run are sorted."""
        queues = self._queued
        names = sorted(queues)
        halves = queues[names[0]].halves
        held = self._first_held(names)
        counts = [
            len(queues[c]) if held is None else queues[c].count_before(held[0], c < held[1])
            for c in names
        ]
        taken = [(c, queues[c].take_rows(n)) for c, n in zip(names, counts, strict=True) if n]
        for channel in names:
            if not len(queues[channel]):
                del queues[channel]
        if not taken:
            return 0
        if len(taken) == 1:
            return self._run_columns(*taken[0], halves, block, released)
        runs = [run for _, run in taken]
        index = np.repeat(np.arange(len(runs), dtype=np.int32), [len(r) for r in runs])
        order = np.lexsort((index, np.concatenate([r.time for r in runs])))  # stable
        merged = type(runs[0]).concat(runs).take(order)  # type: ignore[arg-type]
        channels = Channels(tuple(c for c, _ in taken), index[order])
        return self._run_columns(channels, merged, halves, block, released)

    def _first_held(self, names: list[str]) -> tuple[Any, str] | None:
        """The ``(time, channel)`` key of the first queued row, in merge order, that a
        promise holds back (``None``: none is): each queue's first held row is found by
        a binary search of its times against its limit (:meth:`_gate_limit`)."""
        held = None
        for channel in names:
            limit, by = self._gate_limit(channel)
            if limit == math.inf:
                continue
            queue = self._queued[channel]
            first = queue.count_before(limit, channel < by)  # rows keyed below the limit
            if first < len(queue):
                key = (queue.row_time(first), channel)
                held = key if held is None or key < held else held
        return held

    def _limit(self, channel: str) -> tuple[float, str]:
        """The smallest ``(time, channel)`` key another source may still bring here: the
        heads of their queues and their promises."""
        keys = [(q.items[0][1][4], c) for c, q in self._queued.items() if c != channel]
        keys.append(self._gate_limit(channel))
        return min(keys)

    def _gate_limit(self, channel: str) -> tuple[float, str]:
        """The smallest ``(time, channel)`` key another source's promise allows here."""
        gate = self.gate
        if gate is None:
            return _NO_LIMIT
        shard, received = self.shard_id, self._received
        keys = [(p.on(shard, received(c)), c) for c, p in gate.items() if c != channel]
        return min(keys, default=_NO_LIMIT)

    def _run(
        self,
        channel: str | Channels,
        items: list[tuple[int, Message]],
        halves: bool,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
        logged: EdgeRun | MessageRun | None = None,
    ) -> int:
        """Execute ``items`` of ``channel`` in order, then account for them once
        (:meth:`_account`; ``logged``: the columns they were built from, logged instead).
        Returns the executions."""
        self._settle()
        first = self._wc + 1
        execute = self._execute
        self._stream_batch = halves and self.stream_edges
        watching = self._observer is not None and self._observer.watching
        if self._batch_types and not watching:
            self._run_with_batches(items, block, released)
        elif self._stream_batch and not watching:
            direct = self._execute_direct
            for _, msg in items:
                if not direct(msg, block):
                    execute(msg, block, released)
        else:
            for _, msg in items:
                execute(msg, block, released)
        self._stream_batch = False
        last = items[-1]
        self._account(channel, first, last[0], last[1][4], block, logged or items)
        return len(items)

    def _run_with_batches(
        self,
        items: list[tuple[int, Message]],
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> None:
        """:meth:`_run`'s loop where the graph has batch classes: each stretch of
        consecutive stream messages to existing vertices of batch classes runs as one
        :meth:`_run_batch`; every other item as in :meth:`_run`, in order between them."""
        execute, vertices, batch_types = self._execute, self._vertices, self._batch_types
        direct = self._execute_direct if self._stream_batch else None
        stretch: list[Message] = []
        records: list[VertexRecord] = []
        for _, msg in items:
            if msg[0] == K_UPDATE:
                payload = msg[3]
                if payload[0] == _MESSAGE and len(payload) == 4:  # not late: its own time
                    record = vertices.get(msg[1])
                    if record is not None and record.type_name in batch_types:
                        stretch.append(msg)
                        records.append(record)
                        continue
            if stretch:
                self._run_batch(_Stretch.of_messages(stretch, records), block, released)
                stretch, records = [], []
            if direct is None or not direct(msg, block):
                execute(msg, block, released)
        if stretch:
            self._run_batch(_Stretch.of_messages(stretch, records), block, released)

    def _run_batch(
        self,
        stretch: _Stretch,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> None:
        """Stream messages to existing vertices of batch classes, in order: one
        ``on_updates`` call per class, then one log entry per message (its clock, time
        and the fields it set), as :meth:`_execute` would have logged them one by one.
        Where a class's ``on_updates`` raises or returns a malformed result, nothing of
        the stretch was applied yet: it runs again message by message (the failing one
        is recorded as failed, the others apply)."""
        vids, records = stretch.vertex, stretch.records
        n = len(vids)
        clocks: list[int] = []
        times: list[float] = []
        seen: dict[VertexId, tuple[int, float]] = {}
        rows_of: dict[str, list[int]] = {}
        for i, (vid, ts, record) in enumerate(zip(vids, stretch.time, records, strict=True)):
            clock, time = seen.get(vid, (record.clock, record.time))
            clock, time = clock + 1, (time if time > ts else ts)
            seen[vid] = clock, time
            clocks.append(clock)
            times.append(time)
            rows_of.setdefault(record.type_name, []).append(i)
        changes: list[dict[str, Any]] = [{}] * n
        try:
            for type_name, rows in rows_of.items():
                behavior = self.types.behavior(type_name)
                assert isinstance(behavior, BatchVertex)
                if len(rows) == n:  # the common case: one class, the stretch as it is
                    batch = MessageBatch(vids, times, clocks, stretch.payloads, stretch.states())
                else:
                    batch = MessageBatch(
                        [vids[i] for i in rows],
                        [times[i] for i in rows],
                        [clocks[i] for i in rows],
                        stretch.payloads_at(rows),
                        stretch.states(rows),
                    )
                for i, row in zip(rows, batch_rows(behavior, batch), strict=True):
                    changes[i] = row
        except Exception:  # one message at a time: the failing one is recorded as failed
            for msg in stretch.messages():
                self._execute(msg, block, released)
            return
        events = None if block is None else block.events
        for i, (vid, record) in enumerate(zip(vids, records, strict=True)):
            self._wc += 1
            time, row = times[i], changes[i]
            if time > self.max_time:
                self.max_time = time
            if row:
                record.state = {**record.state, **row}
            record.clock, record.time = clocks[i], time
            if events is not None:
                events.append((vid, clocks[i], time, row or None, None, None))

    def _run_message_columns(
        self,
        channel: str | Channels,
        run: MessageRun,
        halves: bool,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> int:
        """Execute a run of stream messages from its columns, as :meth:`_run` would its
        items: each stretch of rows to existing vertices of batch classes runs as one
        :meth:`_run_batch` that hands the payload columns to ``on_updates``; any other row
        gets its message's payload and :meth:`_execute_message`. Where an observer
        watches, the items run as :meth:`_run`'s. Logged as its columns."""
        observer = self._observer
        if observer is not None and observer.watching:
            # no row is a stream edge half: no direct step to try first (``halves`` only
            # says whether the source sends edges' target halves)
            return self._run(channel, run.items(), False, block, released, run)
        self._settle()
        first = self._wc + 1
        execute, vertices, batch_types = self._execute_message, self._vertices, self._batch_types
        vids, times = run.vertex.tolist(), run.time.tolist()
        payloads = Payloads(run.props, len(run))
        start = -1  # the first row of the current stretch
        records: list[VertexRecord] = []
        for i, vid in enumerate(vids):
            record = vertices.get(vid)
            if record is not None and record.type_name in batch_types:
                if start < 0:
                    start = i
                records.append(record)
                continue
            if start >= 0:
                self._run_batch(_Stretch.of_run(run, start, i, records, payloads), block, released)
                start, records = -1, []
            execute(vid, record, payloads[i], times[i], block, released)
        if start >= 0:
            stretch = _Stretch.of_run(run, start, len(vids), records, payloads)
            self._run_batch(stretch, block, released)
        self._account(channel, first, run.last_position, run.last_time, block, run)
        return len(run)

    def _run_columns(
        self,
        channel: str | Channels,
        run: EdgeRun | MessageRun,
        halves: bool,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> int:
        """Execute a run of stream edge halves (of messages: :meth:`_run_message_columns`)
        from its columns, as :meth:`_run` would its items: each row a hot case
        (:meth:`_direct_owner`, :meth:`_direct_target`) runs with no message built; any
        other row -- a new vertex, a class without the built-in direct hooks, a hook that
        raises -- gets its exact message and the general path. Where nothing can run
        direct (no stream edges, an observer watching) the items run as :meth:`_run`'s.
        An observer that takes change batches does not stop the temporal columns: their
        rows reach it as :class:`~shards.observe.ChangeBatch` es. Logged as its columns."""
        if isinstance(run, MessageRun):
            return self._run_message_columns(channel, run, halves, block, released)
        observer = self._observer
        watched = observer is not None and observer.watching
        if not (halves and self.stream_edges) or (watched and not observer.takes_batches):  # type: ignore[union-attr]
            return self._run(channel, run.items(), halves, block, released, run)
        if fits(run):
            self._column_rows += len(run)
            if self._temporal is not None or self._column_rows > TEMPORAL_AFTER:
                return self._run_temporal(channel, run, block, released)
        if watched:  # every other row is seen one by one
            return self._run(channel, run.items(), halves, block, released, run)
        self._settle()
        first = self._wc + 1
        run_row = self._run_row
        self._stream_batch = True
        try:
            for _, half, vid, other, props, ts in run.rows():
                run_row(half, vid, other, props, ts, block, released)
        finally:
            self._stream_batch = False
        self._account(channel, first, run.last_position, run.last_time, block, run)
        return len(run)

    def _run_temporal(
        self,
        channel: str | Channels,
        run: EdgeRun,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> int:
        """:meth:`_run_columns` through the temporal columns (:mod:`shards.temporal`):
        the rows of vertices in them run in one compiled pass, logged as columns; at a row
        whose vertex is not in them the pass stops, the row runs as in
        :meth:`_run_columns` (a new vertex is created), its vertex is taken in if it
        fits, and the pass goes on after it. Where an observer watches (it takes change
        batches, :meth:`_run_columns`), each stretch the pass ran is written back and
        handed to it as a :class:`~shards.observe.ChangeBatch`, and a row between
        stretches takes the general path, which shows it its change."""
        columns = self._temporal
        if columns is None or columns.dtype != run.time.dtype:
            self._settle()
            columns = self._temporal = TemporalColumns(run.time.dtype)
        creates = self._creates()
        shard = (self.shard_id, self.num_shards)
        columns.enter(run, self._vertices, self._is_temporal, creates, shard)
        first = self._wc + 1
        out = columns.outputs(len(run))
        n, i = len(run), 0
        halves, vids, others, times = run.half, run.vertex, run.other, run.time
        observer = self._observer
        if observer is not None and not observer.watching:
            observer = None
        elif observer is not None:  # it may have begun to watch since the last pass
            columns.flush()  # ran: the records hold what came before this run
        self._stream_batch = True
        try:
            while i < n:
                stop, new_edges = columns.apply(run, i, out)
                if stop > i:
                    self._vertices.update(columns.created(run, out, i, stop))
                    entries = columns.entries(run, out, i, stop)
                    wc = self._wc + 1
                    self._ran_temporal(entries, new_edges, creates, block)
                    if observer is not None:
                        observer.changes(self._changed(columns, entries, out, run, i, wc))
                if stop == n:
                    break
                vid = vids[stop].item()
                half, other, ts = int(halves[stop]), others[stop].item(), times[stop].item()
                if observer is None:
                    self._run_row(half, vid, other, {}, ts, block, released)
                else:
                    self._execute(run_message(half, vid, other, {}, ts), block, released)
                i = stop + 1
                if creates is None:  # the first vertex of its type makes its plan
                    creates = self._creates()
                    if creates is not None:
                        rest = run.slice(i, n)
                        columns.enter(rest, self._vertices, self._is_temporal, creates, shard)
                record = self._vertices.get(vid)
                if record is not None and vid not in columns.excluded and vid not in columns:
                    columns.take(vid, record, self._is_temporal)
        finally:
            self._stream_batch = False
        self._account(channel, first, run.last_position, run.last_time, block, run)
        return n

    def _ran_temporal(
        self,
        entries: TemporalEntries,
        new_edges: int,
        creates: str | None,
        block: BlockWriter | None,
    ) -> None:
        """Account for rows the temporal columns ran: worker clock, latest time, edge
        count, and their entries in the block."""
        self._wc += len(entries)
        self.edge_count += new_edges
        latest = entries.time.max().item()
        if latest > self.max_time:
            self.max_time = latest
        if block is not None:
            block.add_temporal(entries, creates)

    @staticmethod
    def _changed(
        columns: TemporalColumns,
        entries: TemporalEntries,
        out: tuple[np.ndarray, np.ndarray],
        run: EdgeRun,
        start: int,
        wc: int,
    ) -> ChangeBatch:
        """What a stretch of the temporal pass changed (rows ``start ..``, the first at
        worker clock ``wc``), for an observer: made (the touched vertices' states before
        it taken), then the columns are written back into the records."""
        n = len(entries)
        flags = entries.flags
        columns_of = {
            "vertex": entries.vertex,
            "other": entries.other,
            "half": entries.half,
            "new_edge": (flags & TEMPORAL_NEW) != 0,
            "created": (flags & TEMPORAL_CREATED) != 0,
            "degree": entries.degree,
            "clock": entries.clock,
            "time": entries.time,
            "event_time": run.time[start : start + n],
            "wc": np.arange(wc, wc + n, dtype=np.int64),
        }
        rows = columns.record_rows(out, start, start + n)
        batch = ChangeBatch(columns_of, columns.records, rows, entries)
        columns.flush()
        return batch

    def _run_row(
        self,
        half: int,
        vid: VertexId,
        other: VertexId,
        props: dict[str, Any],
        ts: Any,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> None:
        """One row of a run of stream edge halves: a hot case direct
        (:meth:`_direct_owner`, :meth:`_direct_target`), any other its exact message on the
        general path."""
        if half == 0:
            if self._direct_owner(vid, _ADD_EDGE, other, props, ts, block):
                return
        elif self._direct_target(vid, _ADD_EDGE, other, props, ts, block):
            return
        self._execute(run_message(half, vid, other, props, ts), block, released)

    def _creates(self) -> str | None:
        """The type new vertices of stream edges get, if the temporal columns can create
        them: it keeps the built-in temporal hooks and ``on_create`` (its plan is made)."""
        name = self.types.default_name
        plan = self._plans.get(name)
        if plan is None or not is_temporal(plan[1]):
            return None
        return name if type(plan[0]).on_create is TemporalVertex.on_create else None

    def _is_temporal(self, type_name: str) -> bool:
        """Whether the class ``type_name`` keeps the built-in temporal hooks (its plan is
        made the first time one of its vertices is created here)."""
        plan = self._plans.get(type_name)
        return plan is not None and is_temporal(plan[1])

    def _account(
        self,
        channel: str | Channels,
        first: int,
        position: int,
        time: float,
        block: BlockWriter | None,
        logged: list[tuple[int, Message]] | EdgeRun | MessageRun,
    ) -> None:
        """Account for a run once: the channel's applied position and time, the shard's
        own clock component, the run in the block (and the vector it ran under, if it
        grew; a merged run's channels each at its last row)."""
        if isinstance(channel, Channels):
            assert isinstance(logged, EdgeRun | MessageRun), "a merged run is columns"
            for name, row in channel.last_rows():
                self._applied_to(name, int(logged.position[row]), logged.time[row].item())
        else:
            self._applied_to(channel, position, time)
        self.vector[self.shard_id] = self._wc
        if block is not None:
            block.runs.append((channel, logged))
            if self._vector_grew:  # the vector the entries from `first` on ran under
                vector = list(self.vector.as_tuple())
                vector[self.shard_id] = first
                block.vectors.append((first, tuple(vector)))
                self._vector_grew = False

    def _applied_to(self, channel: str, position: int, time: Any) -> None:
        self.applied[channel] = position
        if channel.startswith(_SOURCE_PREFIX):
            self.times[channel] = time

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
        self._flush()
        record = self._vertices.get(vertex_id)
        if record is None:
            raise VertexNotFound(vertex_id)
        return record.snapshot()

    def vertex_view(self, vertex_id: VertexId) -> VertexView | None:
        """A read-only view of a live vertex (``None``: not on this shard). The temporal
        columns are not written back here (per call, that would cost a scan of them): the
        core writes them back before it hands its observer anything to read."""
        record = self._vertices.get(vertex_id)
        return None if record is None else VertexView(vertex_id, record)

    def vertex_views(self) -> Iterator[VertexView]:
        """Read-only views of every live vertex of this shard."""
        return (VertexView(vid, record) for vid, record in list(self.vertices.items()))

    def stats(self) -> ShardStats:
        """Vertex and edge counts, clocks, errors, outbox sizes and channel positions of
        this shard (counters kept as it runs: no scan of the vertices)."""
        observer = self._observer
        return ShardStats(
            shard=self.shard_id,
            vertices=len(self._vertices),
            edges=self.edge_count,
            worker_clock=self.worker_clock,
            vector_clock=list(self.vector.as_tuple()),
            errors=self.errors,
            pending=self.pending_total(),
            sent=[o.next_seq - 1 for o in self._outboxes],
            applied=dict(self.applied),
            side_pending=self.side_pending_total(),
            times=dict(self.times),
            queued=sum(map(len, self._queued.values())),
            gate=self.gate,
            side_processed=0 if observer is None else observer.side_processed(),
            incarnation=self.incarnation,
        )

    # -- execution: apply a batch, then one small step after the other per message ------

    def _execute(
        self,
        msg: Message,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> None:
        """Run one message: start, hooks, messages, then (only if all of that succeeded)
        number, observe, commit and log."""
        kind, vid, sender, payload, ts = msg
        shard = self._route.get(vid)
        if shard is None:
            shard = self._route[vid] = shard_of(vid, self.num_shards)
        if shard != self.shard_id:
            raise ValueError(f"vertex {vid!r} does not belong to shard {self.shard_id}")
        wc = self._wc = self._wc + 1
        record = self._vertices.get(vid)
        if record is None and creates_nothing(kind, payload):
            if ts > self.max_time:
                self.max_time = ts
            if block is not None:
                block.events.append((vid, 0, ts, None, None, None))
            return
        try:
            run = self._start(kind, vid, record, sender, payload, ts)
            HANDLERS[kind](run, sender, payload, ts)
        except Exception as exc:  # a failing behavior applies nothing
            self._failed(wc, vid, record, ts, exc, block)
            return
        self._complete(run, wc, kind, payload, record, ts, block, released)

    def _complete(
        self,
        run: Execution,
        wc: int,
        kind: int,
        payload: Any,
        record: VertexRecord | None,
        ts: float,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> None:
        """:meth:`_execute`'s steps once the hooks ran: settle, messages, then (only if
        all of that succeeded) number, observe, commit and log. ``record`` is the vertex's
        record before (``None``: the execution created it)."""
        vid = run.vid
        try:
            if run.ctx is not None:
                settle(run, block is not None)
            messages = None
            if run.emits():
                # a stream edge's target applies the update itself: no notice for it
                skip = payload[1] if self._stream_batch and kind == K_UPDATE else None
                messages = self._messages(run, kind, skip)
        except Exception as exc:  # a failing behavior applies nothing
            self._failed(wc, vid, record, ts, exc, block)
            return
        if run.time > self.max_time:
            self.max_time = run.time
        sends = self._number(run, messages, wc, released) if messages else None
        observer = self._observer
        change = self._observe(run, wc) if observer is not None and observer.watching else None
        self._commit(run)
        if change is not None:
            observer.vertex_changed(change)  # type: ignore[union-attr]
        if block is not None:
            i = len(block.events)
            if run.created:
                block.created[i] = run.record.type_name
            if run.deleted:
                block.deleted.append(i)
            if run.dropped:
                block.dropped[i] = run.dropped
            if run.late is not None:
                block.late[i] = run.late
            if sends:
                block.sends[i] = sends
            edge_ops = run.edge_ops
            if len(edge_ops) > 1:
                block.edges[i] = edge_ops
            edge = edge_ops[0] if len(edge_ops) == 1 else None
            block.events.append((vid, run.clock, run.time, run.delta, edge, run.in_op))

    def _execute_message(
        self,
        vid: VertexId,
        record: VertexRecord | None,
        payload: Mapping[str, Any],
        ts: float,
        block: BlockWriter | None,
        released: list[tuple[int, int, Message, int]],
    ) -> None:
        """A stream message (not late) to ``vid`` (``record``: its record here, if any),
        with no observer watching: :meth:`_execute`'s steps for it without the general
        start and dispatch -- a class that ignores messages is clocked and logged, one with
        ``on_message`` gets its context; where the hook changed only the state, the state
        is committed and logged here, else the general steps go on (:meth:`_complete`).
        Same effects, same entry as :meth:`_execute` (a new vertex, or a class without its
        plan yet, takes that path)."""
        plan = None if record is None else self._plans.get(record.type_name)
        if plan is None:
            message = (K_UPDATE, vid, None, (_MESSAGE, None, payload, None), ts)
            self._execute(message, block, released)
            return
        assert record is not None
        behavior, direct = plan
        if direct.ignores_messages:
            time = self._direct_commit(record, None, ts)
            if block is not None:
                block.events.append((vid, record.clock, time, None, None, None))
            return
        wc = self._wc = self._wc + 1
        clock = record.clock + 1
        time = record.time if record.time > ts else ts
        if time > self.max_time:
            self.max_time = time
        old = record.state
        ctx = Context(vid, clock, time, dict(old), record.out_edges, record.in_edges, None)
        try:
            behavior.on_message(ctx, payload)
        except Exception as exc:  # a failing behavior applies nothing
            self._failed(wc, vid, record, ts, exc, block)
            return
        if ctx.edge_ops or ctx.sends or ctx.spawns or ctx.deleted:
            run = Execution(vid, record, False, behavior, direct, clock, time, None)
            run.ctx = ctx
            update = (_MESSAGE, None, payload, None)  # the message's payload, as _execute's
            self._complete(run, wc, K_UPDATE, update, record, ts, block, released)
            return
        new = ctx.state
        delta, dropped = state_change(old, new, block is not None)
        record.state, record.clock, record.time = new, clock, time
        if block is not None:
            if dropped:
                block.dropped[len(block.events)] = dropped
            block.events.append((vid, clock, time, delta, None, None))

    def _execute_direct(self, msg: Message, block: BlockWriter | None) -> bool:
        """Run a stream edge update's half in one step, where it is one of the two hot
        cases and nothing else can happen: an edge update at its existing owner
        (:meth:`_direct_owner`), or the target's half of an added or updated edge at its
        existing target (:meth:`_direct_target`), in a batch with both halves (no notice
        is sent), for a class whose hooks are the built-in direct ones, with no observer
        watching. Returns ``False``, having changed nothing, for any other message, or
        where a hook raises (:meth:`_execute` then runs it, failure included). Same
        effects, same log entry as :meth:`_execute` -- the same direct hooks compute
        them; only the :class:`~shards.execute.Execution` value, the handler dispatch
        and the general commit are left out."""
        kind, vid, sender, payload, ts = msg
        if kind == K_UPDATE:
            if len(payload) != 4:
                return False  # a late update: its own time rides along
            edge_kind = _EDGE_KIND.get(payload[0])
            if edge_kind is None:
                return False
            return self._direct_owner(vid, edge_kind, payload[1], payload[2], ts, block)
        if kind != K_IN_EDGE or len(payload) != 2 or sender is None:
            return False
        if payload[0] not in _IN_EDGE_KINDS:
            return False
        return self._direct_target(vid, _EDGE_KIND[payload[0]], sender, payload[1], ts, block)

    def _direct_plan(self, vid: VertexId) -> tuple[VertexRecord, DirectHooks] | None:
        """The existing record of ``vid`` and its class's direct hooks, if it has a
        record on this shard and its class's plan is made (creation runs ``on_create``)."""
        record = self._vertices.get(vid)
        if record is None:
            return None
        plan = self._plans.get(record.type_name)
        if plan is None:
            return None
        shard = self._route.get(vid)
        if shard is None:
            shard = self._route[vid] = shard_of(vid, self.num_shards)
        if shard != self.shard_id:
            return None
        return record, plan[1]

    def _direct_owner(
        self,
        vid: VertexId,
        edge_kind: UpdateKind,
        dst: VertexId,
        props: dict[str, Any],
        ts: float,
        block: BlockWriter | None,
    ) -> bool:
        """The owner's half of a stream edge update, direct (see :meth:`_execute_direct`)."""
        found = self._direct_plan(vid)
        if found is None:
            return False
        record, direct = found
        hook = direct.edge_event
        if hook is None:
            return False
        try:
            old = record.out_edges.get(dst)
            changes, edge = hook(vid, record.state, old, edge_kind, dst, ts, props)
        except Exception:
            return False  # the general path records the failure
        time = self._direct_commit(record, changes, ts)
        out = record.out_edges
        before = len(out)
        set_edge(out, dst, edge)
        self.edge_count += len(out) - before
        if block is not None:
            block.events.append((vid, record.clock, time, changes or None, (dst, edge), None))
        return True

    def _direct_target(
        self,
        vid: VertexId,
        edge_kind: UpdateKind,
        sender: VertexId,
        props: dict[str, Any],
        ts: float,
        block: BlockWriter | None,
    ) -> bool:
        """The target's half of an added or updated stream edge, direct (see
        :meth:`_execute_direct`)."""
        found = self._direct_plan(vid)
        if found is None:
            return False
        record, direct = found
        state = record.state
        time = record.time if record.time > ts else ts
        old = record.in_edges.get(sender)
        try:
            edge = temporal_edge(sender, old, edge_kind, vid, ts, props)
            if old is None:
                added = direct.edge_added
                if added is None:
                    return False
                changes, accepted = added(state, edge, time)
                if not accepted:
                    return False
            else:
                updated = direct.edge_updated
                if updated is None:
                    return False
                changes = updated(state, old, edge, time)
        except Exception:
            return False  # the general path records the failure
        self._direct_commit(record, changes, ts)
        in_op = (sender, edge)
        set_edge(record.in_edges, sender, edge)
        if block is not None:
            block.events.append((vid, record.clock, time, changes or None, None, in_op))
        return True

    def _direct_commit(
        self, record: VertexRecord, changes: dict[str, Any] | None, ts: float
    ) -> float:
        """Count a direct execution and apply its state changes, clock and time to the
        record; returns the entry's time."""
        self._wc += 1
        time = record.time if record.time > ts else ts
        if time > self.max_time:
            self.max_time = time
        if changes:
            record.state = {**record.state, **changes}
        record.clock += 1
        record.time = time
        return time

    def _start(
        self,
        kind: int,
        vid: VertexId,
        record: VertexRecord | None,
        sender: VertexId | None,
        payload: Any,
        ts: float,
    ) -> Execution:
        """The execution's value; creates the vertex (running ``on_create``) if new."""
        created = record is None
        if record is None:
            type_name = created_type(kind, payload) or self.types.default_name
            record = VertexRecord(type_name, {}, {}, {})
        plan = self._plans.get(record.type_name)
        if plan is None:
            name = record.type_name
            plan = self._plans[name] = (self.types.behavior(name), self.types.direct(name))
        time = record.time if record.time > ts else ts
        run = Execution(vid, record, created, plan[0], plan[1], record.clock + 1, time, sender)
        if created:
            run.behavior.on_create(run.context(), creation_props(kind, payload))
        return run

    def _failed(
        self,
        wc: int,
        vid: VertexId,
        record: VertexRecord | None,
        ts: float,
        exc: Exception,
        block: BlockWriter | None,
    ) -> None:
        clock = 1 if record is None else record.clock + 1
        time = ts if record is None else max(record.time, ts)
        if time > self.max_time:
            self.max_time = time
        self.errors += 1
        error = f"{type(exc).__name__}: {exc}"
        self.recent_errors.append((wc, vid, error))
        if record is not None:
            record.clock, record.time = clock, time
        if block is not None:
            block.failed[len(block.events)] = error
            block.events.append((vid, clock, time, None, None, None))

    def _messages(
        self, run: Execution, kind: int, skip: VertexId | None = None
    ) -> list[tuple[int, int, VertexId, Any]] | None:
        """The messages the execution emits -- sends, spawns, edge notices -- as
        ``(dest shard, kind, target, payload)`` (raises, as a failure of the behavior, on
        a target id that cannot be routed). ``skip``: the target of a stream edge update
        that applies it itself (it gets no notice of that edge)."""
        out_edges = run.record.out_edges
        out: list[tuple[int, VertexId, Any]] = []
        for dst, payload in run.sends:
            if payload is REJECT:
                out.append((K_EDGE_REJECTED, dst, None))
            else:
                out.append((K_USER, dst, payload))
        for new_id, vtype, spawned in run.spawns:
            out.append((K_SPAWN, new_id, (vtype, spawned)))
        silent = kind in EDGE_CLEANUP  # removing an edge its target refused or lost
        for dst, props in run.edge_ops:
            if (silent and dst == run.sender) or dst == skip:
                continue
            if props is None:
                if dst in out_edges:
                    out.append((K_EDGE_REMOVED, dst, None))
            else:
                out.append((K_EDGE_UPDATED if dst in out_edges else K_EDGE_ADDED, dst, props))
        if run.deleted:
            removed = {dst for dst, props in run.edge_ops if props is None}
            out += [(K_EDGE_REMOVED, dst, None) for dst in out_edges if dst not in removed]
            out += [(K_TARGET_DELETED, src, None) for src in run.record.in_edges]
        if not out:
            return None
        route, num_shards = self._route, self.num_shards
        messages = []
        for msg_kind, dst, payload in out:
            dest = route.get(dst)
            if dest is None:
                dest = route[dst] = shard_of(dst, num_shards)
            messages.append((dest, msg_kind, dst, payload))
        return messages

    def _number(
        self,
        run: Execution,
        messages: list[tuple[int, int, VertexId, Any]],
        wc: int,
        released: list[tuple[int, int, Message, int]],
    ) -> tuple[tuple[int, int, VertexId, Any], ...]:
        """Number the messages on their outboxes; they are released once the block is
        logged. Returns their logged form."""
        vid, time, outboxes = run.vid, run.time, self._outboxes
        for dest, msg_kind, dst, payload in messages:
            box = outboxes[dest]
            released.append((dest, box.next_seq, (msg_kind, dst, vid, payload, time), wc))
            box.next_seq += 1
        return tuple(messages)

    def _observe(self, run: Execution, wc: int) -> VertexChange:
        """The change the observer will see, computed before the edges change."""
        record = run.record
        out, ins = record.out_edges, record.in_edges
        added_in: tuple[VertexId, ...] = ()
        removed_in: tuple[VertexId, ...] = ()
        added_out: tuple[VertexId, ...] = ()
        if run.deleted:
            removed_out = tuple(out)
            removed_in = tuple(ins)
        else:
            added_out = tuple(d for d, p in run.edge_ops if p is not None and d not in out)
            removed_out = tuple(d for d, p in run.edge_ops if p is None and d in out)
            if run.in_op is not None:
                src, props = run.in_op
                if props is None:
                    removed_in = (src,) if src in ins else ()
                elif src not in ins:
                    added_in = (src,)
        return VertexChange(
            VertexView(run.vid, record),
            run.clock,
            run.time,
            wc,
            None if run.created else record.state,
            None if run.deleted else run.state,
            added_out,
            removed_out,
            added_in,
            removed_in,
        )

    def _commit(self, run: Execution) -> None:
        """Apply the execution's effects to the vertex in memory (and to the edge count)."""
        record = run.record
        out = record.out_edges
        counts = bool(run.edge_ops) or run.deleted or run.created  # else: no edge count change
        counted = 0 if run.created or not counts else len(out)
        for dst, props in run.edge_ops:
            set_edge(out, dst, props)
        if run.in_op is not None:
            set_edge(record.in_edges, *run.in_op)
        record.state = run.state
        record.clock = run.clock
        record.time = run.time
        if run.deleted:
            self._vertices.pop(run.vid, None)
        elif run.created:
            self._vertices[run.vid] = record
        if counts:
            self.edge_count += (0 if run.deleted else len(out)) - counted

    # -- persistence ------------------------------------------------------------------

    def _write(self, block: BlockWriter, released: list[tuple[int, int, Message, int]]) -> None:
        """Log the block (one atomic write) and, when one is due, a shard checkpoint."""
        log = block.encode(self.frontier, self._cursor(released), self._schema)
        if self._checkpoint_due():
            wc = self._wc
            log.entries[LogName.CHECKPOINTS] = [(wc, self._shard_checkpoint())]
            self.checkpoints.append((wc, self.max_time))
            log.put_meta(CHECKPOINTS_KEY, encode_checkpoint_list(self.checkpoints))
            self._last_checkpoint = wc
            self._next_checkpoint = wc + self.shard_checkpoint_interval
        try:
            self.store.append(log)  # type: ignore[union-attr]
        except Exception as exc:
            self._failure = f"shard {self.shard_id}: log write failed: {exc}"
            raise ShardFailed(self._failure) from exc

    def _checkpoint_due(self) -> bool:
        """At least ``shard_checkpoint_interval`` entries since the last checkpoint, and
        at least as many as the checkpoint would hold records (so it pays for itself)."""
        if self._wc < self._next_checkpoint:
            return False
        self._flush()
        records = len(self._vertices) + sum(
            len(r.out_edges) + len(r.in_edges) for r in self._vertices.values()
        )
        due = self._last_checkpoint + max(self.shard_checkpoint_interval, records)
        if self._wc >= due:
            return True
        self._next_checkpoint = due
        return False

    def _cursor(self, released: list[tuple[int, int, Message, int]]) -> bytes:
        """Channel positions and the first entry whose messages may be unacknowledged."""
        oldest = [o.items[0][2] for o in self._outboxes if o.items]
        if released:
            oldest.append(released[0][3])
        floor = min(oldest, default=self._wc + 1)
        return encode_cursor(
            Cursor(
                self.applied,
                [o.next_seq for o in self._outboxes],
                [o.acked for o in self._outboxes],
                floor,
                self.times,
            )
        )

    def _shard_checkpoint(self) -> bytes:
        """The whole shard as one value: every vertex's full state, clocks, time."""
        self._flush()
        records = list(self._vertices.values())
        return encode_checkpoint(
            CheckpointColumns(
                self._wc,
                self.max_time,
                self.vector.as_tuple(),
                self.errors,
                list(self._vertices),
                [r.type_name for r in records],
                [r.state for r in records],
                [r.out_edges for r in records],
                [r.in_edges for r in records],
                [r.clock for r in records],
                [r.time for r in records],
            )
        )

    def _check_manifest(self, store: LogStore) -> None:
        found = read_manifest(store)
        if found is None:
            if last_worker_clock(store) or store.get_meta(CURSOR_KEY) is not None:
                raise LogFormatError(
                    f"{store!r} holds log entries but no manifest: not a chronoray log of "
                    f"format {FORMAT_VERSION}"
                )
            store.append(manifest_batch(Manifest(FORMAT_VERSION, self.shard_id, self.num_shards)))
            return
        if (found.shard, found.num_shards) != (self.shard_id, self.num_shards):
            raise ValueError(
                f"log holds shard {found.shard} of {found.num_shards}, "
                f"opened as shard {self.shard_id} of {self.num_shards}"
            )
        if found.format != FORMAT_VERSION:  # an older readable one: it is one of this
            # format too; say so before writing what it could not read
            store.append(manifest_batch(found._replace(format=FORMAT_VERSION)))

    def _recover(self, store: LogStore) -> None:
        with paused_gc():
            self._replay_log(store)

    def _replay_log(self, store: LogStore) -> None:
        raw = store.get_meta(CURSOR_KEY)
        if raw is None:
            return
        self._schema = SchemaTracker(decode_schema(store.get_meta(SCHEMA_KEY)))
        cursor = decode_cursor(raw)
        if not len(cursor.next_seq) == len(cursor.acked) == self.num_shards:
            raise LogCorrupted(
                f"the cursor has {len(cursor.next_seq)} sequence numbers for "
                f"{self.num_shards} shards",
                "meta",
                CURSOR_KEY,
            )
        self.applied = dict(cursor.applied)
        self.received = dict(cursor.applied)
        self.times = dict(cursor.times)
        for box, next_seq, acked in zip(self._outboxes, cursor.next_seq, cursor.acked, strict=True):
            box.next_seq, box.acked, box.sent_upto = next_seq, acked, acked
        replay = LogReplay(store)
        start = replay.start
        self.checkpoints = checkpoint_list(store)
        self._last_checkpoint = self.checkpoints[-1][0] if self.checkpoints else 0
        self._next_checkpoint = self._last_checkpoint + self.shard_checkpoint_interval
        if start:
            checkpoint = load_shard_checkpoint(store, start)
            assert checkpoint is not None
            self.errors, self.max_time = checkpoint.errors, checkpoint.max_time
            self.vector.merge(checkpoint.vector)
        for header in headers(store, start + 1):
            for _, vector in header.vectors:
                self.vector.merge(vector)
        floor = cursor.floor
        for block in replay.blocks(min(start + 1, floor)):
            replay.apply(block, pending=True)  # spans of several blocks applied together
            lo = max(start + 1 - block.first, 0)
            if lo < len(block.time):
                self.max_time = max(self.max_time, *block.time[lo:])
                self.errors += sum(1 for i in block.failed if i >= lo)
            for i, dest, seq, msg in block.messages():
                box = self._outboxes[dest]
                if block.first + i >= floor and seq > box.acked:
                    box.items.append((seq, msg, block.first + i))
        replay.finish()
        self._vertices = replay.vertices
        self.edge_count = sum(len(r.out_edges) for r in self._vertices.values())
        self._wc = last_worker_clock(store)
        self.vector[self.shard_id] = self._wc


def _batch_types(types: VertexTypes) -> frozenset[str]:
    """The type names whose stream messages run as batches: :class:`BatchVertex`
    classes that keep its ``on_message`` (which runs ``on_updates`` on one message)."""
    return frozenset(
        name
        for name in types.names()
        if isinstance(types.behavior(name), BatchVertex)
        and type(types.behavior(name)).on_message is BatchVertex.on_message
    )


mark_module_api(globals(), public=("VertexNotFound",))
