"""The merger: one deterministic order for every instance's output, and top-k combination.

**Order.** Instances emit :class:`Report` s tagged with a :data:`StepKey`
``(time, phase, seq)``: ``phase`` 0 is a time-driven step (a decay, a death, a window
expiry) -- all instances' time-driven changes at one time form one step -- and phase 1 the
input event with sequence number ``seq`` (its position in the merged stream). The merger
processes steps in increasing key order: by event time, then time-driven before input
events at the same time, then by stream position. Within a step, reports are applied in
instance order. This order does not depend on how instances were scheduled, so the output
is the same for any number of instances and any runtime.

**Top-k combination** (:class:`TopKMerger`): each instance reports its *local* top-k
whenever it changes; the global top-k is the best k of the union of the local lists
(every item lives on one instance, so the global top-k is always among them). A line is
written at a step whose global top-k differs from the last line written, compared by each
item's identity (Query 1: the post ids in order; Query 2: the comment texts).

:class:`Ranking` is GraphCEP's two-tier top-k structure (seed 002, sec. 4.1.1): items whose
score is at least a threshold ``TH`` are kept sorted, the others in an unsorted table;
``TH`` trails the k-th score by between ``low`` and ``high`` points (GraphCEP: 20 and 40),
so the sorted tier stays small -- an update costs O(log m) in a tier of m items, or O(1)
below ``TH`` -- yet rarely runs short of k items (then ``TH`` is lowered by one scan of
the unsorted table).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Ranking", "Report", "StepKey", "TopKMerger"]

StepKey = tuple[int, int, int]
"""``(time, phase, seq)``: phase 0 = time-driven (seq 0), phase 1 = input event ``seq``."""

Entry = tuple[tuple[Any, ...], Hashable, Any]
"""A ranked item: ``(key, item, display)``; smaller keys rank first, ``key[0]`` is
minus the item's integer score."""


class Report(NamedTuple):
    """What an instance emits: at step ``key``, its new local top-k ``entries``."""

    key: StepKey
    entries: tuple[Entry, ...]


class Ranking:
    """Items ranked by key, smaller first; ``key[0]`` must be ``-score`` (an ``int``).

    >>> r = Ranking(low=1, high=2)
    >>> for item, score in [("a", 5), ("b", 7), ("c", 1), ("d", 7)]:
    ...     r.set(item, (-score, item), score)
    >>> [item for _, item, _ in r.top(3)]
    ['b', 'd', 'a']
    >>> r.remove("b"); r.set("c", (-9, "c"), 9)
    >>> [item for _, item, _ in r.top(2)]
    ['c', 'd']
    """

    def __init__(self, *, low: int = 20, high: int = 40) -> None:
        if not 0 <= low <= high:
            raise ValueError(f"need 0 <= low <= high, got low={low}, high={high}")
        self.low = low
        self.high = high
        self.threshold = -(1 << 62)  # everything sorted until the first adaptation
        self._sorted: list[tuple[tuple[Any, ...], Hashable]] = []
        self._keys: dict[Hashable, tuple[Any, ...]] = {}
        self._cold: set[Hashable] = set()
        self._display: dict[Hashable, Any] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, item: Hashable) -> bool:
        return item in self._keys

    def set(self, item: Hashable, key: tuple[Any, ...], display: Any) -> None:
        """Insert ``item`` or move it to ``key`` (and show it as ``display``)."""
        old = self._keys.get(item)
        self._display[item] = display
        if old == key:
            return
        if old is not None:
            self._drop(item, old)
        self._keys[item] = key
        if -key[0] >= self.threshold:
            bisect.insort(self._sorted, (key, item))
        else:
            self._cold.add(item)

    def remove(self, item: Hashable) -> None:
        """Forget ``item`` (no effect if absent)."""
        old = self._keys.pop(item, None)
        if old is not None:
            self._drop(item, old)
            del self._display[item]

    def _drop(self, item: Hashable, key: tuple[Any, ...]) -> None:
        if item in self._cold:
            self._cold.discard(item)
        else:
            del self._sorted[bisect.bisect_left(self._sorted, (key, item))]

    def top(self, k: int) -> list[Entry]:
        """The ``k`` best ``(key, item, display)``, best first."""
        if len(self._sorted) < k and self._cold:
            self._refill(k)
        best = self._sorted[:k]
        if len(best) == k:
            self._adapt(-best[-1][0][0])
        return [(key, item, self._display[item]) for key, item in best]

    def _refill(self, k: int) -> None:
        """Lower the threshold to ``low`` below the k-th best score overall."""
        keys = self._keys
        wanted = heapq.nsmallest(k - len(self._sorted), self._cold, key=keys.__getitem__)
        self.threshold = -keys[wanted[-1]][0] - self.low
        moving = [item for item in self._cold if -keys[item][0] >= self.threshold]
        for item in moving:
            self._cold.discard(item)
            bisect.insort(self._sorted, (keys[item], item))

    def _adapt(self, score_k: int) -> None:
        """Raise the threshold back to ``low`` below the k-th score once it trails by more
        than ``high``, moving the sorted tier's tail to the unsorted table."""
        if score_k - self.threshold <= self.high:
            return
        self.threshold = score_k - self.low
        tail = self._sorted
        while tail and -tail[-1][0][0] < self.threshold:
            _, item = tail.pop()
            self._cold.add(item)


class TopKMerger:
    """Combines the instances' local top-k lists into the global top-k and writes lines.

    ``identity(item, display)`` is what a change is judged by; ``render(time, entries)``
    is the output line (without newline). With ``time_steps=False`` lines are written only
    at input-event steps (phase 1): a time-driven change shows at the next event.
    """

    def __init__(
        self,
        k: int,
        identity: Callable[[Hashable, Any], Hashable],
        render: Callable[[int, list[Entry]], str],
        *,
        time_steps: bool = True,
    ) -> None:
        self.k = k
        self.identity = identity
        self.render = render
        self.time_steps = time_steps
        self.local: dict[int, tuple[Entry, ...]] = {}
        self.last: list[Hashable] = []
        self.lines = 0
        self._dirty = False  # a local list changed since the global top-k was last computed

    def step(self, key: StepKey, reports: list[tuple[int, Report]]) -> str | None:
        """Apply one step's reports (``(instance, report)``, in instance order); the line
        to write, if the global top-k changed (and lines are written at this step)."""
        for instance, report in reports:
            self.local[instance] = report.entries
            self._dirty = True
        if not self._dirty or (key[1] == 0 and not self.time_steps):
            return None  # nothing new, or not a step lines are written at
        self._dirty = False
        if len(self.local) == 1:  # one instance: its local list (sorted) is the global one
            best = list(next(iter(self.local.values()))[: self.k])
        else:
            best = heapq.nsmallest(self.k, (e for es in self.local.values() for e in es))
        ids = [self.identity(item, display) for _, item, display in best]
        if ids == self.last:
            return None
        self.last = ids
        self.lines += 1
        return self.render(key[0], best)

    def merge(
        self, reports: list[list[Report]], ts: np.ndarray, seq: np.ndarray
    ) -> list[tuple[int, str]]:
        """The lines of one batch of the stream (its events' times ``ts`` and sequence
        numbers ``seq``), from each instance's reports (in instance order), each with the
        sequence number of the event that caused it: the event of its step, or for a
        time-driven step the first event at or after its time (the one that moved time
        there). Steps go in key order; within a step, instance order. Without
        ``time_steps``, a time-driven change is checked at that next event's step."""
        groups: dict[StepKey, list[tuple[int, Report]]] = {}
        for instance, rs in enumerate(reports):
            for r in rs:
                groups.setdefault(r.key, []).append((instance, r))
        if not self.time_steps:
            for key in [k for k in groups if k[1] == 0]:
                j = int(np.searchsorted(ts, key[0], "left"))
                groups.setdefault((int(ts[j]), 1, int(seq[j])), [])
        lines = []
        for key in sorted(groups):
            line = self.step(key, groups[key])
            if line is not None:
                cause = key[2] if key[1] == 1 else int(seq[np.searchsorted(ts, key[0], "left")])
                lines.append((cause, line))
        return lines
