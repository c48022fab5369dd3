"""The source feed: how one source's updates become shard batches (no Ray, no I/O).

A :class:`SourceFeed` is the one place that decides, for one source,

* **batches**: updates are routed by vertex to per-shard buffers and leave as one
  :class:`~shards.core.Batch` per ``batch_size`` updates (or earlier, when flushed);
* **prev**: each batch names the offset of the source's previous update sent to that
  shard, so a shard applies batches of one channel in order and skips duplicates;
* **acks and resends**: a batch stays *open* until the shard acknowledged (logged) it;
  after a shard restart every open batch is resent, in order;
* **the frontier**: the event time up to which every update read so far was applied,
  which the shards use to hold back messages from the future of unapplied updates;
* **resume**: a feed created with the shards' applied positions (what their logs say)
  skips every update a shard already applied, so a restarted source resends exactly
  what was not acknowledged -- nothing lost, nothing doubled.

:class:`Frontiers` combines the frontiers of several sources feeding one graph into the
one frontier the shards get (the minimum over active sources).

Both runtimes drive these classes: :class:`~shards.local.LocalRuntime` in one thread,
and the Ray source actors of ``chronoray`` through Ray calls. Neither decides batching
or frontier rules itself.

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
from collections.abc import Sequence
from dataclasses import dataclass

from shards.core import Batch, source_channel
from shards.routing import shard_of
from vertex.records import Update

__all__ = ["Frontiers", "OpenBatch", "SourceFeed"]


@dataclass(slots=True)
class OpenBatch:
    """A batch sent to a shard and not yet acknowledged."""

    batch: Batch
    first: int  # offset of its first update
    last: int  # offset of its last update
    min_ts: float  # earliest event time in it


class SourceFeed:
    """Batches, ``prev`` positions, acknowledgements, resends and the frontier of one
    source feeding ``num_shards`` shards.

    One thread changes a feed; the read-only properties (:attr:`frontier`,
    :attr:`acked_offset`, :attr:`acked_updates`) may be read from another thread meanwhile
    (they copy what they iterate).

    ``applied`` gives, per shard, the highest offset of this source the shard has applied
    (from its log; zeros for a new source). Updates at or below it are skipped.
    """

    def __init__(
        self,
        source: str,
        num_shards: int,
        batch_size: int,
        applied: Sequence[int] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.source = source
        self.channel = source_channel(source)
        self.num_shards = num_shards
        self.batch_size = batch_size
        start = list(applied) if applied is not None else [0] * num_shards
        if len(start) != num_shards:
            raise ValueError(f"applied needs {num_shards} positions, got {len(start)}")
        self._start = start
        self._prev = list(start)
        self._acked = list(start)
        self._buffers: list[list[Update]] = [[] for _ in range(num_shards)]
        self._open: list[deque[OpenBatch]] = [deque() for _ in range(num_shards)]
        self.max_ts = -math.inf
        self.ordered = True
        self.read = 0
        """Updates offered so far (skipped ones included)."""
        self.skipped = 0
        """Updates skipped because their shard had applied them already (a resume)."""
        self.batches = 0
        self.resent = 0
        self._last_offset = 0

    # -- reading ----------------------------------------------------------------------

    def offer(self, update: Update) -> list[tuple[int, Batch]]:
        """Take the next update of the source; returns the batches now full, as
        ``(shard, batch)``, to send in that order (each stays open until :meth:`ack`)."""
        if update.source != self.source:
            raise ValueError(f"update of source {update.source!r} offered to feed {self.source!r}")
        if update.offset <= self._last_offset:
            raise ValueError(
                f"source {self.source!r}: offset {update.offset} does not follow "
                f"{self._last_offset} (offsets must strictly increase)"
            )
        self._last_offset = update.offset
        self.read += 1
        if update.ts < self.max_ts:
            self.ordered = False
        else:
            self.max_ts = update.ts
        shard = shard_of(update.vertex, self.num_shards)
        if update.offset <= self._start[shard]:
            self.skipped += 1
            return []
        buffer = self._buffers[shard]
        buffer.append(update)
        if len(buffer) >= self.batch_size:
            return [(shard, self._seal(shard))]
        return []

    def flush(self, through: float = math.inf) -> list[tuple[int, Batch]]:
        """Seal every buffer holding an update of time ``<= through`` (all by default)."""
        return [
            (shard, self._seal(shard))
            for shard, buffer in enumerate(self._buffers)
            if buffer and min(u.ts for u in buffer) <= through
        ]

    def _seal(self, shard: int) -> Batch:
        updates, self._buffers[shard] = self._buffers[shard], []
        batch = Batch.of_updates(updates, prev=self._prev[shard])
        self._prev[shard] = updates[-1].offset
        self._open[shard].append(
            OpenBatch(batch, updates[0].offset, updates[-1].offset, min(u.ts for u in updates))
        )
        self.batches += 1
        return batch

    # -- acknowledgements -------------------------------------------------------------

    def ack(self, shard: int, applied: int) -> None:
        """``shard`` reports this channel applied (logged) through offset ``applied``."""
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
        stats): nothing of time ``<= t`` buffered, nor in a batch a shard has not applied."""
        if any(u.ts <= t for buffer in self._buffers for u in buffer):
            return False
        for shard, opened in enumerate(self._open):
            if any(o.min_ts <= t and o.last > applied[shard] for o in opened):
                return False
        return True

    # -- progress ---------------------------------------------------------------------

    @property
    def frontier(self) -> float:
        """The event time up to which every update read so far is applied: the earliest
        time still buffered or in an open batch, else the latest time read."""
        times = [u.ts for buffer in self._buffers for u in tuple(buffer)]
        times += [o.min_ts for opened in self._open for o in tuple(opened)]
        return min(times, default=self.max_ts)

    @property
    def acked_offset(self) -> int:
        """The offset through which every update read is acknowledged (or was applied
        before this feed started): a source may resume after it."""
        firsts = [b[0].offset for b in map(tuple, self._buffers) if b]
        firsts += [o[0].first for o in map(tuple, self._open) if o]
        if firsts:
            return min(firsts) - 1
        return self._last_offset

    @property
    def idle(self) -> bool:
        """Nothing buffered and nothing open."""
        return not any(self._buffers) and not any(self._open)

    @property
    def acked_updates(self) -> int:
        """Updates read and known to be applied (buffered and open ones excluded)."""
        waiting = sum(len(b) for b in self._buffers)
        waiting += sum(len(o.batch.items) for opened in self._open for o in tuple(opened))
        return self.read - waiting


class Frontiers:
    """The graph's frontier over several sources: the minimum of the active sources'
    frontiers (``inf`` when none is active, so nothing is held back).

    :meth:`open`, :meth:`update` and :meth:`close` return the frontier to give the
    shards and whether it went down (then the shards must be told with ``reset``), or
    ``None`` when it did not change.

    >>> f = Frontiers()
    >>> f.open("a"), f.update("a", 5.0), f.open("b"), f.update("b", 7.0), f.close("a")
    ((-inf, True), (5.0, False), (-inf, True), (5.0, False), (7.0, False))
    """

    def __init__(self) -> None:
        self._by_source: dict[str, float] = {}
        self._value = math.inf

    @property
    def value(self) -> float:
        """The current frontier."""
        return self._value

    @property
    def sources(self) -> list[str]:
        """The active sources."""
        return list(self._by_source)

    def open(self, source: str) -> tuple[float, bool] | None:
        """``source`` starts feeding (nothing of it applied yet)."""
        self._by_source[source] = -math.inf
        return self._recompute()

    def update(self, source: str, t: float) -> tuple[float, bool] | None:
        """``source``'s own frontier is now ``t`` (it never goes back)."""
        if source not in self._by_source:
            return None
        self._by_source[source] = max(self._by_source[source], t)
        return self._recompute()

    def close(self, source: str) -> tuple[float, bool] | None:
        """``source`` ended: it holds nothing back any more."""
        if self._by_source.pop(source, None) is None:
            return None
        return self._recompute()

    def _recompute(self) -> tuple[float, bool] | None:
        value = min(self._by_source.values(), default=math.inf)
        if value == self._value:
            return None
        lowered = value < self._value
        self._value = value
        return value, lowered
