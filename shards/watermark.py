"""Event time at a source: detection, reordering behind a watermark, late updates.

A :class:`Reorder` sits between a source and its :class:`~shards.feed.SourceFeed`. It sees
every update in the order the source read it and releases them in event-time order:

* **detection**: every update whose time is below the largest time seen before it counts as
  *out of order* (:attr:`Reorder.out_of_order`), by how much as its *lateness*
  (:attr:`Reorder.max_lateness` is the largest);
* **the watermark** ``W`` is the largest time seen minus ``allowed_lateness`` (never lower
  than the source's *floor*: what the graph already holds from other sources). Updates wait
  in a heap and leave in ``(time, offset)`` order once their time is ``<= W``; every
  update released later has a time ``>= W``, so what leaves is in time order;
* an update whose time is below ``W`` when it arrives is **late**. Without an
  ``allowed_lateness`` the source must be in order: the first late update raises
  :class:`OutOfOrder` (naming where, the time and the time it went back from). With one,
  the ``late`` policy decides: ``"reject"`` (counted and handed to ``on_late``, e.g. the
  rejects file) or ``"apply"`` (released at once, *re-timed* to ``W`` -- it is applied
  after every update it is late to, and time cuts at or after ``W`` include it -- and
  carrying its own time as its *event time*, which the log keeps).

With ``allowed_lateness=0`` (or ``None``) an in-order stream passes straight through: no
heap, no delay. Decisions depend only on the updates read and the options (plus the
floor, and :meth:`Reorder.advance` when a source is idle), so a source read again from its
start releases the same updates in the same order -- what resuming after a crash relies on.

>>> from vertex.records import Update
>>> r = Reorder(allowed_lateness=5)
>>> [u.ts for u, _, _ in r.offer(Update.add_edge(1, 2, 10).with_origin("s", 1))]
[]
>>> [u.ts for u, _, _ in r.offer(Update.add_edge(1, 2, 8).with_origin("s", 2))]
[]
>>> [(u.ts, ts) for u, ts, _ in r.offer(Update.add_edge(1, 2, 16).with_origin("s", 3))]
[(8, 8), (10, 10)]
>>> r.offer(Update.add_edge(1, 2, 4).with_origin("s", 4)), r.late_rejected, r.max_lateness
([], 1, 12)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from vertex.annotations import mark_module_api
from vertex.records import Update

__all__ = [
    "LATE_POLICIES",
    "LatePolicy",
    "OutOfOrder",
    "Released",
    "Reorder",
    "show_date",
    "show_time",
]

LatePolicy = Literal["reject", "apply"]
LATE_POLICIES: tuple[str, ...] = ("reject", "apply")

Released = tuple[Update, float, "float | None"]
"""An update leaving the reorder buffer: ``(update, time to log it at, event time if it
was re-timed)``."""


def show_time(t: float) -> str:
    """An event time as written in a stream: whole seconds without a fraction, others
    exactly (``repr``).

    >>> show_time(1082040961.0), show_time(1289241911.72836), show_time(-math.inf)
    ('1082040961', '1289241911.72836', '-inf')
    """
    if math.isfinite(t) and t == int(t):
        return str(int(t))
    return repr(float(t))


DATES = (1e8, 4.1e9)  # Unix seconds shown as dates: 1973-03-03 .. 2099-12-01


def show_date(t: Any) -> str:
    """An event time for people: an ISO 8601 date (UTC, ``Z``) if it reads as Unix seconds
    of 1973-2099, else the number as written in a stream.

    >>> show_date(1082040961.0), show_date(1082040961.5), show_date(42.0), show_date("x")
    ('2004-04-15T14:56:01Z', '2004-04-15T14:56:01.500Z', '42', 'x')
    """
    if isinstance(t, bool) or not isinstance(t, int | float):
        return str(t)
    if not (math.isfinite(t) and DATES[0] <= t < DATES[1]):
        return show_time(float(t))
    when = datetime.fromtimestamp(t, tz=UTC)
    text = when.isoformat(timespec="milliseconds" if t != int(t) else "seconds")
    return text.replace("+00:00", "Z")


class OutOfOrder(ValueError):
    """An update goes back in time where the source must be in order.

    ``where`` is the file (or source name), ``line`` the update's offset (a file's line),
    ``ts`` its time and ``previous`` the time it went back from: the largest time read
    before it, or -- ``floor`` true -- the time up to which the graph already holds updates
    from other sources.
    """

    def __init__(
        self, where: str, line: int, ts: float, previous: float, floor: bool = False
    ) -> None:
        super().__init__(where, line, ts, previous, floor)  # args as given: picklable
        self.where = where
        self.line = line
        self.ts = ts
        self.previous = previous
        self.floor = floor

    def __str__(self) -> str:
        if self.floor:
            return (
                f"{self.where}:{self.line}: time {show_time(self.ts)} is before "
                f"{show_time(self.previous)}, up to which the graph already holds updates from "
                "other sources (to apply such updates as late ones: --allowed-lateness with "
                "--late apply / allowed_lateness=, late='apply')"
            )
        return (
            f"{self.where}:{self.line}: time {show_time(self.ts)} goes back from "
            f"{show_time(self.previous)}; the source is not in time order (sort it with --sort / "
            "SortedSource, or give an allowed lateness)"
        )


class Reorder:
    """Detection, the watermark and the late policy of one source (see the module doc).

    ``allowed_lateness``: seconds of disorder absorbed (``None``: none, and going back is an
    error); ``late``: ``"reject"`` or ``"apply"``; ``floor``: the lowest watermark (a
    source joining a graph that already holds later updates from other sources);
    ``where``: how errors name the source; ``on_late(update, watermark)``: called for each
    rejected update.
    """

    def __init__(
        self,
        allowed_lateness: float | None = None,
        late: LatePolicy = "reject",
        floor: float = -math.inf,
        where: str = "source",
        on_late: Callable[[Update, float], None] | None = None,
    ) -> None:
        if allowed_lateness is not None and not allowed_lateness >= 0:
            raise ValueError(f"allowed_lateness must be >= 0 seconds, got {allowed_lateness!r}")
        if late not in LATE_POLICIES:
            raise ValueError(f"late must be one of {LATE_POLICIES}, got {late!r}")
        self.allowed_lateness = allowed_lateness
        self.late = late
        self.floor = floor
        self.where = where
        self.on_late = on_late
        self._lateness = allowed_lateness or 0
        self.watermark = floor
        """No update released from now on has a smaller time."""
        self.max_seen = -math.inf
        self.out_of_order = 0
        """Updates whose time is below the largest time read before them."""
        self.max_lateness = 0.0
        """The largest gap between the largest time read before an update and its time."""
        self.late_rejected = 0
        self.late_applied = 0
        self._heap: list[tuple[float, int, Update]] = []

    @property
    def waiting(self) -> int:
        """Updates held in the reorder buffer."""
        return len(self._heap)

    def earliest(self) -> float:
        """The smallest time still held (``inf`` if none)."""
        return self._heap[0][0] if self._heap else math.inf

    def offer(self, update: Update) -> list[Released]:
        """Take the next update read; returns what leaves the buffer now, in order."""
        ts = update.ts
        if ts < self.max_seen:
            self.out_of_order += 1
            gap = self.max_seen - ts
            if gap > self.max_lateness:
                self.max_lateness = gap
        else:
            self.max_seen = ts
        watermark = self.watermark
        if ts < watermark:
            return self._late(update, watermark)
        heap = self._heap
        mark = self.max_seen - self._lateness
        if mark > watermark:
            self.watermark = watermark = mark
        if not heap and ts <= watermark:  # in order: straight through
            return [(update, ts, None)]
        heapq.heappush(heap, (ts, update.offset, update))
        return self._pop(watermark)

    def skip(self, update: Update) -> None:
        """Count in ``update`` without releasing it (a resumed source's update its shards
        applied before): the watermark moves on as if it had been released."""
        if update.ts > self.max_seen:
            self.max_seen = update.ts
            mark = update.ts - self._lateness
            if mark > self.watermark:
                self.watermark = mark

    def advance(self, watermark: float) -> list[Released]:
        """Raise the watermark to ``watermark`` (an idle source catching up with the
        others, or ``inf`` at the end of the source); returns what leaves."""
        if watermark > self.watermark:
            self.watermark = watermark
        return self._pop(self.watermark)

    def _pop(self, watermark: float) -> list[Released]:
        heap = self._heap
        out: list[Released] = []
        while heap and heap[0][0] <= watermark:
            ts, _, update = heapq.heappop(heap)
            out.append((update, ts, None))
        return out

    def refusal(self, updates: Iterable[tuple[Update, bool]]) -> OutOfOrder | None:
        """For a source without an allowed lateness: the :class:`OutOfOrder` that offering
        ``updates`` in turn would raise (``None``: none would), found without taking any of
        them -- so a batch can be refused whole. ``True`` beside an update: it would be
        :meth:`skip`-ped (applied before), not weighed."""
        if self.allowed_lateness is not None:
            return None
        seen, watermark = self.max_seen, self.watermark
        for update, skipped in updates:
            ts = update.ts
            if not skipped and ts < watermark:
                return self._going_back(update, watermark, seen)
            if ts > seen:
                seen = ts
                if ts > watermark:  # no lateness: the watermark is the largest time seen
                    watermark = ts
        return None

    def _going_back(self, update: Update, watermark: float, seen: float) -> OutOfOrder:
        floor = watermark > seen  # the graph's floor, not the source's past
        previous = watermark if floor else seen
        return OutOfOrder(self.where, update.offset, update.ts, previous, floor)

    def _late(self, update: Update, watermark: float) -> list[Released]:
        if self.allowed_lateness is None:
            raise self._going_back(update, watermark, self.max_seen)
        if self.late == "reject":
            self.late_rejected += 1
            if self.on_late is not None:
                self.on_late(update, watermark)
            return []
        self.late_applied += 1
        return [(update, watermark, update.ts)]


mark_module_api(globals(), public=("OutOfOrder",))
