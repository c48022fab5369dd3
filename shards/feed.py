"""The source feed: how one source's updates become shard batches (no Ray, no I/O).

A :class:`SourceFeed` is the one place that decides, for one source,

* **event time** (a :class:`~shards.watermark.Reorder`): out-of-order updates are counted,
  updates are released in time order behind the source's watermark (the largest time read
  minus ``allowed_lateness``), and late ones are refused, rejected or applied re-timed;
* **positions**: every released update gets a position on its source's channel -- its
  offset while offsets increase (a source in time order), else the previous position
  plus one -- so positions increase on every shard's channel and are the same each time
  the source is read again from its start with the same options;
* **halves**: with ``halves``, a stream edge update goes to its owner's shard and, as
  ``K_IN_EDGE`` at the same position, to its target's shard (see
  :class:`~shards.core.Batch`); a graph with stream edges then needs no notice between
  shards for it, and the target's record follows the stream's order exactly;
* **batches**: items are routed to per-shard buffers and leave as one
  :class:`~shards.core.Batch` per ``batch_size`` items (or earlier, when flushed; with
  ``linger``, at the latest once an item waited that long: :meth:`SourceFeed.due`);
* **prev**: each batch names the position of the source's previous item sent to that
  shard, so a shard applies batches of one channel in order and skips duplicates;
* **acks and resends**: a batch stays *open* until the shard acknowledged (logged) it;
  after a shard restart every open batch is resent, in order;
* **the frontier**: the event time up to which every update read so far is applied,
  which the shards use to hold back messages from the future of unapplied updates;
* **barriers**: with ``halves``, after a ``remove_vertex`` nothing more is released until
  the caller saw the deletion and what it sent applied (:attr:`SourceFeed.barrier`), so
  an edge created again later never overtakes the deletion's notices;
* **resume**: a feed created with the shards' applied positions (what their logs say)
  skips every item a shard already applied, so a restarted source resends exactly what
  was not acknowledged -- nothing lost, nothing doubled.

Both runtimes drive a feed per source: :class:`~shards.local.LocalRuntime` in one thread,
and the Ray source actors of ``chronoray`` through Ray calls. Neither decides batching,
ordering or frontier rules itself.

>>> from vertex.records import Update
>>> feed = SourceFeed("s", num_shards=1, batch_size=2)
>>> feed.offer(Update.add_edge(1, 2, 10).with_origin("s", 1))
[]
>>> [(shard, b.prev, [p for p, _ in b.items])
...  for shard, b in feed.offer(Update.add_edge(1, 3, 12).with_origin("s", 2))]
[(0, 0, [1, 2])]
>>> feed.frontier, feed.acked_offset   # sent, not acknowledged: nothing applied yet
(10, 0)
>>> feed.ack(0, 2); feed.frontier, feed.acked_offset, feed.idle
(12, 2, True)
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from shards.codec import (
    EdgeRun,
    Message,
    MessageRun,
    earliest_time,
    owner_halves,
    owner_message,
    target_message,
)
from shards.coordinator import Promise, source_channel
from shards.core import Batch
from shards.replay import paused_gc
from shards.routing import shard_of, shards_of
from shards.watermark import LatePolicy, OutOfOrder, Released, Reorder
from vertex.annotations import mark_module_api
from vertex.columns import UpdateBatch
from vertex.records import Update, UpdateKind

__all__ = ["OpenBatch", "OutOfOrder", "SourceFeed"]

_ADD, _SET, _REMOVE = UpdateKind.ADD_EDGE, UpdateKind.UPDATE_EDGE, UpdateKind.REMOVE_EDGE
_REMOVE_VERTEX = UpdateKind.REMOVE_VERTEX


class _Buffer:
    """One shard's items waiting to be sealed into a batch: rows (``(position,
    message)`` items) or runs of columns of one class (:class:`~shards.codec.EdgeRun`,
    :class:`~shards.codec.MessageRun`) of one :meth:`~shards.codec.EdgeRun.kind`, never
    both -- a row or a run of another kind joining runs turns them into their items
    first, and runs joining rows join as their items -- so a batch is all columns or all
    rows, in position order either way.
    Readers in other threads see ``rows`` and ``runs`` replaced or appended to, never
    half-changed."""

    __slots__ = ("rows", "runs", "size")

    def __init__(self) -> None:
        self.rows: list[tuple[int, Message]] = []
        self.runs: list[EdgeRun | MessageRun] = []
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def append(self, item: tuple[int, Message]) -> None:
        if self.runs:
            self.rows = self.items()
            self.runs = []
        self.rows.append(item)
        self.size += 1

    def add_run(self, run: EdgeRun | MessageRun) -> None:
        if not len(run):
            return
        if self.runs and self.runs[0].kind() != run.kind():  # cannot be one run
            self.rows = self.items()
            self.runs = []
        if self.rows:
            self.rows.extend(run.items())
        else:
            self.runs.append(run)
        self.size += len(run)

    def items(self) -> list[tuple[int, Message]]:
        """The waiting items (the runs' built from their columns)."""
        rows, runs = self.rows, tuple(self.runs)
        return [item for run in runs for item in run.items()] if runs else list(rows)

    def first_position(self) -> int | None:
        rows, runs = tuple(self.rows), tuple(self.runs)
        if runs:
            return int(runs[0].position[0])
        return rows[0][0] if rows else None

    def earliest(self) -> float:
        """The earliest time waiting (``inf``: none)."""
        runs = tuple(self.runs)
        if runs:
            return min(run.earliest() for run in runs)
        rows = tuple(self.rows)
        return earliest_time(rows) if rows else math.inf

    def updates(self) -> int:
        """Items that are an owner's half (or a whole update)."""
        runs = tuple(self.runs)
        if runs:
            return sum(run.updates() for run in runs)
        return owner_halves(tuple(self.rows))

    def take(self) -> tuple[list[tuple[int, Message]], EdgeRun | MessageRun | None]:
        """Empty the buffer: its rows, or its runs as one."""
        rows, runs = self.rows, self.runs
        self.rows, self.runs, self.size = [], [], 0
        if not runs:
            return rows, None
        return rows, type(runs[0]).concat(runs)  # type: ignore[arg-type]


@dataclass(slots=True)
class OpenBatch:
    """A batch sent to a shard and not yet acknowledged."""

    batch: Batch
    first: int  # position of its first item
    last: int  # position of its last item
    min_ts: float  # earliest event time in it


class SourceFeed:
    """Event time, positions, batches, acknowledgements, resends and the frontier of one
    source feeding ``num_shards`` shards.

    One thread changes a feed; the read-only properties (:attr:`frontier`,
    :attr:`acked_offset`, :attr:`acked_updates`, :attr:`unsent_floor`) may be read from
    another thread meanwhile (they copy what they iterate).

    ``applied`` gives, per shard, the highest position of this source the shard has
    applied (from its log; zeros for a new source); items at or below it are skipped.
    ``allowed_lateness``, ``late``, ``floor`` and ``on_late`` are the
    :class:`~shards.watermark.Reorder`'s; ``where`` names the source in errors (its file);
    ``halves`` sends stream edge updates to both endpoints' shards (for a graph whose
    :attr:`~vertex.model.VertexTypes.stream_edges` holds). Offsets must increase, unless
    ``offsets_increase`` is false (a source sorted by time, whose offsets are its file's
    line numbers: distinct, in no order). ``linger`` (seconds, ``None``: no limit): how
    long an item may wait in a buffer that is not full, as the driver's clock tells
    :meth:`due` -- a large ``batch_size`` for throughput, a short wait at a low rate.
    """

    def __init__(
        self,
        source: str,
        num_shards: int,
        batch_size: int,
        applied: Sequence[int] | None = None,
        *,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        floor: float = -math.inf,
        halves: bool = False,
        where: str | None = None,
        on_late: Callable[[Update, float], None] | None = None,
        offsets_increase: bool = True,
        linger: float | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if linger is not None and not linger >= 0:
            raise ValueError(f"linger must be >= 0 seconds or None, got {linger}")
        self.source = source
        self.channel = source_channel(source)
        self.num_shards = num_shards
        self.batch_size = batch_size
        self.linger = linger
        self._waiting_since: float | None = None  # when something began to wait (see due)
        self.halves = halves
        self.offsets_increase = offsets_increase
        start = list(applied) if applied is not None else [0] * num_shards
        if len(start) != num_shards:
            raise ValueError(f"applied needs {num_shards} positions, got {len(start)}")
        self.reorder = Reorder(allowed_lateness, late, floor, where or source, on_late)
        self._start = start
        self._resuming = any(start)
        self._prev = list(start)
        self._acked = list(start)
        self._buffers = [_Buffer() for _ in range(num_shards)]
        self._open: list[deque[OpenBatch]] = [deque() for _ in range(num_shards)]
        self._held: deque[Released] = deque()  # released, waiting behind a barrier
        self.barrier: float | None = None
        """Set after a ``remove_vertex`` was released (with ``halves``): send what was
        returned, wait until it is applied and no message of time ``<= barrier`` is
        pending, then call :meth:`pass_barrier`."""
        self.ended = False
        self.read = 0
        """Updates offered so far (skipped and late ones included)."""
        self.skipped = 0
        """Updates skipped because their shards had applied them already (a resume)."""
        self.released = 0
        self.batches = 0
        self.resent = 0
        self._last_offset = 0
        self._position = 0

    # -- reading ----------------------------------------------------------------------

    def offer(self, update: Update) -> list[tuple[int, Batch]]:
        """Take the next update of the source; returns the batches now full, as
        ``(shard, batch)``, to send in that order (each stays open until :meth:`ack`).
        Raises :class:`~shards.watermark.OutOfOrder` for a late update of a source that
        must be in order."""
        if update.source != self.source:
            raise ValueError(f"update of source {update.source!r} offered to feed {self.source!r}")
        if update.offset <= self._last_offset and self.offsets_increase:
            raise ValueError(
                f"source {self.source!r}: offset {update.offset} does not follow "
                f"{self._last_offset} (offsets must strictly increase)"
            )
        self._last_offset = update.offset
        self.read += 1
        if self._resuming and self._applied_before(update, self._position):
            self.reorder.skip(update)
            self._position = update.offset
            self.skipped += 1
            return []
        released = self.reorder.offer(update)
        if not released:
            return []
        if self._held or self.barrier is not None:
            self._held.extend(released)
            return []
        return self._route(released)

    def offer_columns(self, batch: UpdateBatch) -> list[tuple[int, Batch]] | None:
        """Take the next updates of the source as columns; returns the batches now full,
        as :meth:`offer` would for the same updates one by one -- the same items, the same
        batch boundaries, the same order -- or ``None`` when the columns cannot be taken
        as a whole, and nothing was taken: offer ``batch.updates()`` one by one instead
        (the row path is the definition; it also raises its errors).

        Taken as columns: ``add_edge`` rows, or user ``message`` rows, of this source in
        time order, with increasing offsets, and no allowed lateness, barrier or resume in
        the way. Positions, the
        watermark, the owners' and targets' shards (:func:`~shards.routing.shards_of`) and
        the batch boundaries are computed on arrays; only the messages the shards read are
        built per row (in comprehensions, no call per row), with the cyclic garbage
        collector paused."""
        times, offsets = batch.column("time"), batch.column("offset")
        if not self._takes_columns(batch, times, offsets):
            return None
        with paused_gc():  # many objects, no cycles: collections would only walk them
            return self._take_columns(batch, offsets)

    def offer_batch(
        self, batch: UpdateBatch, send: Callable[[list[tuple[int, Batch]]], None]
    ) -> None:
        """Take ``batch`` as columns (:meth:`offer_columns`), else its rows one by one
        (:meth:`offer`), handing ``send`` what each step sealed: after an error of a row,
        what came before it was handed on, as for rows offered one at a time."""
        out = self.offer_columns(batch)
        if out is not None:
            send(out)
            return
        for update in batch.updates():
            send(self.offer(update))

    def _take_columns(self, batch: UpdateBatch, offsets: np.ndarray) -> list[tuple[int, Batch]]:
        """Route the batch, then count it read: a reader of the properties in another
        thread (progress, the frontier a time cut waits for) sees its updates waiting
        before it sees the watermark past them, never the other way round."""
        n = len(batch)
        vertex, time = batch.column("vertex"), batch.column("time")
        props = batch.table.column("props") if "props" in batch.table.schema.names else None
        shards = shards_of(vertex, self.num_shards)
        if batch.only_messages:  # a message goes to its vertex's shard only
            out = self._columns_out(shards, MessageRun(offsets, vertex, time, props))
        elif not self.halves:
            dst = batch.column("dst")
            run = EdgeRun(offsets, np.zeros(n, np.int8), vertex, dst, time, props)
            out = self._columns_out(shards, run)
        else:
            dst = batch.column("dst")
            run = EdgeRun(
                np.tile(offsets, 2),
                np.repeat(np.array([0, 1], np.int8), n),
                np.concatenate((vertex, dst)),
                np.concatenate((dst, vertex)),
                np.tile(time, 2),
                None if props is None else pa.concat_arrays([props, props]),
            )
            both = np.concatenate((shards, shards_of(dst, self.num_shards)))
            out = self._columns_out(both, run)
        ts = time[-1].item()
        reorder = self.reorder
        reorder.max_seen = max(reorder.max_seen, ts)
        reorder.watermark = max(reorder.watermark, ts)
        self._last_offset = self._position = int(offsets[-1])
        self.released += n
        self.read += n
        return out

    def _takes_columns(self, batch: UpdateBatch, times: np.ndarray, offsets: np.ndarray) -> bool:
        """Whether :meth:`offer_columns` can take ``batch`` whole (see there)."""
        if not len(batch) or batch.source != self.source or not self.offsets_increase:
            return False
        if self._held or self.barrier is not None or self.reorder.allowed_lateness is not None:
            return False
        if offsets[0] <= self._last_offset or (self._resuming and offsets[0] <= max(self._start)):
            return False
        if len(batch) > 1 and not ((np.diff(offsets) > 0).all() and (np.diff(times) >= 0).all()):
            return False
        if not times[0] >= self.reorder.watermark:
            return False
        return batch.only_edges_added or batch.only_messages

    def _columns_out(
        self, shards: np.ndarray, run: EdgeRun | MessageRun
    ) -> list[tuple[int, Batch]]:
        """Route the rows of ``run`` to the buffers of ``shards`` in position order,
        owner's half first; seal a buffer after the update that fills it (both halves of
        an update stay in one batch)."""
        order = np.lexsort((run.half, run.position, shards))
        run = run.take(order)
        shards, positions, half = shards[order], run.position, run.half
        bounds = np.searchsorted(shards, np.arange(self.num_shards + 1))
        sealed: list[tuple[int, int, int, Batch]] = []
        for shard in range(self.num_shards):
            lo, hi = int(bounds[shard]), int(bounds[shard + 1])
            if lo == hi:
                continue
            buffer = self._buffers[shard]
            while True:
                last = lo + self.batch_size - len(buffer) - 1  # the item that fills it
                if last >= hi:
                    break
                if last + 1 < hi and positions[last + 1] == positions[last]:
                    last += 1  # the update's other half comes along
                buffer.add_run(run.slice(lo, last + 1))
                sealed.append((int(positions[last]), -int(half[last]), shard, self._seal(shard)))
                lo = last + 1
            buffer.add_run(run.slice(lo, hi))
        sealed.sort(key=lambda s: (s[0], s[1]))  # as the row path seals: by update, target first
        return [(shard, b) for _, _, shard, b in sealed]

    def out_of_order(self, updates: Iterable[Update]) -> OutOfOrder | None:
        """The :class:`~shards.watermark.OutOfOrder` that :meth:`offer` would raise for one
        of ``updates`` (a source that must be in order), found before any is offered: a
        batch of updates can be refused whole. ``None`` if none would be refused."""
        position = self._position

        def weighed() -> Iterator[tuple[Update, bool]]:
            nonlocal position
            for update in updates:
                skipped = self._resuming and self._applied_before(update, position)
                if skipped:
                    position = update.offset
                yield update, skipped

        return self.reorder.refusal(weighed())

    def _applied_before(self, update: Update, position: int) -> bool:
        """Whether a resumed source's update was applied by every shard it goes to, told
        before it is weighed against the watermark (a source resumed after others went
        on must not find its own applied updates late); ``position``: the last offset
        skipped so. Only while the positions are the offsets: nothing reordered so far."""
        offset = update.offset
        if offset <= position or self.reorder.waiting or self._held:
            return False
        start, n = self._start, self.num_shards
        if offset > start[shard_of(update.vertex, n)]:
            return False
        kind = update.kind
        if self.halves and (kind is _ADD or kind is _SET or kind is _REMOVE):
            return offset <= start[shard_of(update.dst, n)]  # type: ignore[arg-type]
        return True

    def end(self) -> list[tuple[int, Batch]]:
        """The source has no more updates: release everything held and seal every
        buffer (stopping at a barrier, if one is reached)."""
        self.ended = True
        self._held.extend(self.reorder.advance(math.inf))
        return self.pass_barrier() if self.barrier is None else []

    def advance(self, watermark: float) -> list[tuple[int, Batch]]:
        """Raise the watermark to ``watermark`` (an idle source catching up with the
        graph's); returns the batches that released."""
        self._held.extend(self.reorder.advance(watermark))
        if self.barrier is not None:
            return []
        out = self._route([])
        return out + self.flush()

    def pass_barrier(self) -> list[tuple[int, Batch]]:
        """Continue after a barrier: release what waited behind it (up to the next one)."""
        self.barrier = None
        out = self._route([])
        if self.ended and self.barrier is None:
            out += self.flush()
        return out

    def _route(self, released: list[Released]) -> list[tuple[int, Batch]]:
        """Give positions to released updates and route them to the shards' buffers."""
        held = self._held
        if held:
            held.extend(released)
            released = list(held)
            held.clear()
        out: list[tuple[int, Batch]] = []
        buffers, start, size, halves = self._buffers, self._start, self.batch_size, self.halves
        n = self.num_shards
        for i, (update, ts, event_ts) in enumerate(released):
            offset = update.offset
            position = self._position = offset if offset > self._position else self._position + 1
            self.released += 1
            owner = shard_of(update.vertex, n)
            fresh = False
            if position > start[owner]:
                buffers[owner].append((position, owner_message(update, ts, event_ts)))
                fresh = True
            kind = update.kind
            if halves and (kind is _ADD or kind is _SET or kind is _REMOVE):
                target = shard_of(update.dst, n)  # type: ignore[arg-type]
                if position > start[target]:
                    buffers[target].append((position, target_message(update, ts, event_ts)))
                    fresh = True
                if len(buffers[target]) >= size:
                    out.append((target, self._seal(target)))
            if not fresh:
                self.skipped += 1
            if len(buffers[owner]) >= size:
                out.append((owner, self._seal(owner)))
            if halves and kind is _REMOVE_VERTEX and fresh:
                self.barrier = ts
                held.extend(released[i + 1 :])
                return out + self.flush()
        return out

    def due(self, now: float) -> list[tuple[int, Batch]]:
        """With ``linger``: every buffer sealed if something has waited ``linger`` seconds
        or more, by the caller's clock ``now`` (a monotonic clock, called after each offer
        and while the source has nothing to read), since the buffers were last all empty
        -- an item never waits much longer than that, however slowly the source reads.
        The first call that finds something waiting starts the wait. Without ``linger``
        (or nothing waiting): nothing."""
        if self.linger is None:
            return []
        if not any(buffer.size for buffer in self._buffers):
            self._waiting_since = None
            return []
        if self._waiting_since is None:
            self._waiting_since = now
        if now - self._waiting_since < self.linger:
            return []
        self._waiting_since = None
        return self.flush()

    def flush(self, through: float = math.inf) -> list[tuple[int, Batch]]:
        """Seal every buffer holding an item of time ``<= through`` (all by default)."""
        return [
            (shard, self._seal(shard))
            for shard, buffer in enumerate(self._buffers)
            if buffer.size and buffer.earliest() <= through
        ]

    def _seal(self, shard: int) -> Batch:
        items, columns = self._buffers[shard].take()
        batch = Batch(self.channel, self._prev[shard], items, None, None, self.halves, columns)
        first, last = (
            (items[0][0], items[-1][0])
            if columns is None
            else (
                int(columns.position[0]),
                columns.last_position,
            )
        )
        self._prev[shard] = last
        self._open[shard].append(OpenBatch(batch, first, last, batch.earliest()))
        self.batches += 1
        return batch

    # -- acknowledgements -------------------------------------------------------------

    def ack(self, shard: int, applied: int) -> None:
        """``shard`` reports this channel applied (logged) through position ``applied``."""
        if applied > self._acked[shard]:
            self._acked[shard] = applied
        opened = self._open[shard]
        while opened and opened[0].last <= self._acked[shard]:
            opened.popleft()

    def unacked(self, shard: int) -> list[Batch]:
        """The open batches of ``shard`` in send order: what to resend after it restarted
        (a resent batch that was applied meanwhile is skipped by the shard)."""
        pending = [o.batch for o in self._open[shard]]
        self.resent += len(pending)
        return pending

    def open_batches(self, shard: int) -> list[OpenBatch]:
        """The open batches of ``shard`` in send order."""
        return list(self._open[shard])

    def applied_through(self, t: float, applied: Sequence[int]) -> bool:
        """Whether every update of time ``<= t`` read so far is applied, given the
        shards' applied positions on this channel (``applied[shard]``, e.g. from their
        stats): nothing of time ``<= t`` held, buffered, nor in a batch a shard has not
        applied."""
        if self.reorder.earliest() <= t or any(ts <= t for _, ts, _ in tuple(self._held)):
            return False
        if any(buffer.earliest() <= t for buffer in self._buffers):
            return False
        for shard, opened in enumerate(self._open):
            if any(o.min_ts <= t and o.last > applied[shard] for o in tuple(opened)):
                return False
        return True

    # -- progress ---------------------------------------------------------------------

    @property
    def watermark(self) -> float:
        """No update released from now on has a smaller time (``inf`` once ended)."""
        return self.reorder.watermark

    @property
    def applied_before(self) -> int:
        """The highest position of this source a shard applied before this feed started
        (``0``: a new source); a source whose positions are its offsets read again up to
        it finds nothing new there to weigh against the graph's floor."""
        return max(self._start, default=0)

    @property
    def max_ts(self) -> float:
        """The largest event time read."""
        return self.reorder.max_seen

    @property
    def ordered(self) -> bool:
        """Whether every update read so far came in time order."""
        return self.reorder.out_of_order == 0

    @property
    def unsent_floor(self) -> float:
        """No update not yet sent has a smaller time: held, buffered, or still to come."""
        times = [self.reorder.earliest(), self.watermark]
        times += [ts for _, ts, _ in tuple(self._held)]
        times += [buffer.earliest() for buffer in self._buffers]
        return min(times)

    def promise(self) -> Promise:
        """What this source promises the shards (see
        :class:`~shards.coordinator.Promise`): nothing it has not sent yet is earlier than
        :attr:`unsent_floor`, whatever it sent to shard ``k`` went out through position
        ``sent[k]``."""
        return Promise(self.unsent_floor, tuple(self._prev))

    @property
    def frontier(self) -> float:
        """The event time up to which every update read so far is applied: the earliest
        time still held, buffered or in an open batch, else the watermark (every update
        still to come is at or after it)."""
        times = [o.min_ts for opened in self._open for o in tuple(opened)]
        times.append(self.unsent_floor)
        return min(times)

    @property
    def acked_offset(self) -> int:
        """The position through which every item sent is acknowledged (or was applied
        before this feed started), and nothing before it is held: a source in time
        order (positions are its offsets) may resume after it."""
        firsts = [p for p in (b.first_position() for b in self._buffers) if p is not None]
        firsts += [o[0].first for o in map(tuple, self._open) if o]
        if self.reorder.waiting or self._held:
            firsts.append(self._position + 1)
        if firsts:
            return min(firsts) - 1
        return max(self._position, self._last_offset)

    @property
    def idle(self) -> bool:
        """Nothing held, buffered or open."""
        return (
            not any(b.size for b in self._buffers)
            and not any(self._open)
            and not self._held
            and not self.reorder.waiting
        )

    @property
    def acked_updates(self) -> int:
        """Updates read and known to be applied (or skipped, or rejected as late)."""
        waiting = self.reorder.waiting + len(self._held)
        waiting += sum(b.updates() for b in self._buffers)
        waiting += sum(o.batch.updates() for opened in self._open for o in tuple(opened))
        return max(self.read - waiting, 0)  # (updates counted waiting before read)

    def counters(self) -> dict[str, float]:
        """Event-time counters: updates read out of order, the largest lateness, late
        updates rejected and applied."""
        r = self.reorder
        return {
            "out_of_order": r.out_of_order,
            "max_lateness": r.max_lateness,
            "late_rejected": r.late_rejected,
            "late_applied": r.late_applied,
        }


mark_module_api(globals())
