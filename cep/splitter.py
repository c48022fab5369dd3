"""Splitters: which operator instances (and partitions) each event goes to.

GraphCEP's splitter (seed 002, sec. 3) finds *consistent* split points: every instance
gets exactly the events of the selections it works on. Three modes, freely combined per
event kind with :class:`ByKind`:

* :class:`KeySplitter` -- by a key value: instance ``key mod n`` (GraphCEP's residue
  classes), or explicit value ranges per instance.
* :class:`PredicateSplitter` -- a predicate ``opens(e)`` opens a partition (returning its
  key), ``closes(partition, e)`` closes it; an event goes to the open partitions it belongs
  to (``member``), each partition living on one instance.
* :class:`Broadcast` -- every instance.

A splitter sees events in stream order and is deterministic: the same stream gives the same
routing, whatever the runtime. The pipeline calls ``split(batch)`` with a record batch of the
stream (:data:`cep.columns.SCHEMA`) and gets one record batch per instance (maybe empty:
every instance still sees time pass, see :mod:`cep.runtime`). The DEBS
queries' splitters work on whole columns (:mod:`cep.debs`). The ones here decide per event
with Python predicates: ``route(e)`` returns ``[(instance, partitions), ...]`` --
``partitions`` being the keys of the event's partitions on that instance (``()`` when the
mode has none) -- in increasing instance order; an empty list drops the event. Their
``split`` routes the batch's rows (as dicts) one by one.
"""

from __future__ import annotations

import bisect
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

__all__ = [
    "Broadcast",
    "ByKind",
    "KeySplitter",
    "Partition",
    "PredicateSplitter",
    "Route",
    "RowSplitter",
    "Splitter",
    "stable_instance",
]

Route = list[tuple[int, tuple[Hashable, ...]]]


def stable_instance(key: Hashable, n: int) -> int:
    """``key mod n`` for an ``int`` key; a stable hash of ``repr(key)`` otherwise (never
    Python's salted ``hash``, so routing is the same in every process)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key % n
    return zlib.crc32(repr(key).encode()) % n


class Splitter(Protocol):
    """Routes events to instances; ``bind(n)`` is called once before the first batch."""

    def bind(self, instances: int) -> None:
        """Fix the number of operator instances."""

    def split(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        """Each instance's events of ``batch`` (maybe none), in stream order."""


class RowSplitter:
    """``split`` for splitters that route one event at a time (``route``)."""

    instances = 1

    def route(self, event: Any) -> Route:
        raise NotImplementedError

    def split(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        rows: list[list[int]] = [[] for _ in range(self.instances)]
        for i, event in enumerate(batch.to_pylist()):
            for instance, _ in self.route(event):
                rows[instance].append(i)
        return [batch.take(pa.array(r, pa.int64())) for r in rows]


class KeySplitter(RowSplitter):
    """Key-based routing: ``key(e)`` (``None``: drop the event) picks the instance.

    Without ``ranges`` the instance is :func:`stable_instance` (``key mod n`` for ints).
    ``ranges=[b1, b2, ...]`` (increasing, ``n - 1`` bounds) assigns keys ``< b1`` to
    instance 0, ``[b1, b2)`` to instance 1, and so on. The key is also the event's partition.

    >>> s = KeySplitter(lambda e: e)
    >>> s.bind(4)
    >>> s.route(10), s.route(None)
    ([(2, (10,))], [])
    """

    def __init__(
        self, key: Callable[[Any], Hashable | None], ranges: Sequence[Any] | None = None
    ) -> None:
        self.key = key
        self.ranges = list(ranges) if ranges is not None else None
        self.instances = 1

    def bind(self, instances: int) -> None:
        if self.ranges is not None and len(self.ranges) != instances - 1:
            raise ValueError(f"{instances} instances need {instances - 1} range bounds")
        self.instances = instances

    def instance_of(self, key: Hashable) -> int:
        """The instance that owns ``key``."""
        if self.ranges is not None:
            return bisect.bisect_right(self.ranges, key)
        return stable_instance(key, self.instances)

    def route(self, event: Any) -> Route:
        key = self.key(event)
        if key is None:
            return []
        return [(self.instance_of(key), (key,))]


class Broadcast(RowSplitter):
    """Every event to every instance (GraphCEP's friendship events in Query 2).

    >>> b = Broadcast()
    >>> b.bind(3)
    >>> b.route("x")
    [(0, ()), (1, ()), (2, ())]
    """

    def __init__(self) -> None:
        self._all: Route = [(0, ())]

    def bind(self, instances: int) -> None:
        self.instances = instances
        self._all = [(i, ()) for i in range(instances)]

    def route(self, event: Any) -> Route:
        return list(self._all)


@dataclass
class Partition:
    """An open partition of a :class:`PredicateSplitter`: its key, the event that opened
    it, the instance it lives on and how many events it got."""

    key: Hashable
    opened_by: Any
    instance: int
    events: int = 0


class PredicateSplitter(RowSplitter):
    """Predicate-based routing with open and close predicates (GraphCEP's ``P_s``, ``P_c``).

    * ``opens(e)`` returns the key of a partition ``e`` opens, or ``None``. The opening
      event belongs to its partition; the partition lives on ``assign(key, n)`` (default
      :func:`stable_instance`).
    * ``closes(partition, e)`` says whether ``e`` closes ``partition`` before ``e`` is
      routed (a closed partition gets nothing more). It is asked for the open partitions
      in the order they opened, stopping at the first that stays open -- right for time-
      and count-based windows, which close in opening order -- and for every partition
      ``e`` is about to be routed to.
    * ``member(e)`` gives the key of the one partition ``e`` belongs to (``None``: none);
      without ``member`` an event belongs to every open partition (sliding windows).

    >>> s = PredicateSplitter(
    ...     opens=lambda e: e[1] if e[0] == "open" else None,
    ...     closes=lambda p, e: e[2] >= p.opened_by[2] + 10,
    ...     member=lambda e: e[1],
    ... )
    >>> s.bind(2)
    >>> s.route(("open", 7, 0)), s.route(("data", 7, 5)), s.route(("data", 7, 10))
    ([(1, (7,))], [(1, (7,))], [])
    """

    def __init__(
        self,
        opens: Callable[[Any], Hashable | None],
        closes: Callable[[Partition, Any], bool],
        member: Callable[[Any], Hashable | None] | None = None,
        assign: Callable[[Hashable, int], int] = stable_instance,
    ) -> None:
        self.opens = opens
        self.closes = closes
        self.member = member
        self.assign = assign
        self.instances = 1
        self.open: OrderedDict[Hashable, Partition] = OrderedDict()

    def bind(self, instances: int) -> None:
        self.instances = instances

    def route(self, event: Any) -> Route:
        self._close_oldest(event)
        key = self.opens(event)
        if key is not None and key not in self.open:
            self.open[key] = Partition(key, event, self.assign(key, self.instances))
        if self.member is None:
            targets = list(self.open.values())
        else:
            k = key if key is not None else self.member(event)
            p = self.open.get(k) if k is not None else None
            targets = [p] if p is not None else []
        by_instance: dict[int, list[Hashable]] = {}
        for p in targets:
            if p.opened_by is not event and self.closes(p, event):
                del self.open[p.key]
                continue
            p.events += 1
            by_instance.setdefault(p.instance, []).append(p.key)
        return [(i, tuple(keys)) for i, keys in sorted(by_instance.items())]

    def _close_oldest(self, event: Any) -> None:
        while self.open:
            oldest = next(iter(self.open.values()))
            if not self.closes(oldest, event):
                return
            del self.open[oldest.key]


class ByKind(RowSplitter):
    """One splitter per event type: ``ByKind({Post: a, Comment: b}, default=None)``.
    Events of a type with no splitter (and no ``default``) are dropped. The type of a row
    of a batch is ``by``'s value for it (default: the row itself's type)."""

    def __init__(
        self,
        by_type: dict[Any, RowSplitter],
        default: RowSplitter | None = None,
        by: Callable[[Any], Any] = type,
    ) -> None:
        self.by_type = by_type
        self.default = default
        self.by = by

    def bind(self, instances: int) -> None:
        self.instances = instances
        for splitter in {id(s): s for s in [*self.by_type.values(), self.default] if s}.values():
            splitter.bind(instances)

    def route(self, event: Any) -> Route:
        splitter = self.by_type.get(self.by(event), self.default)
        return splitter.route(event) if splitter is not None else []
