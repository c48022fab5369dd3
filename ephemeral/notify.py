"""Notification streams: vertex updates delivered to the driver, live or replayed from the log.

A subscription (``g.subscribe(...)``) selects vertex updates -- all of them, by vertex
type, by vertex id, and/or by a predicate on ``(old state, new state)`` -- and delivers one
:class:`Notification` per successful behavior execution that passes.

Guarantees:

* **Order.** Notifications of one vertex come in its clock order, which is the order of
  its log entries. Different vertices interleave arbitrarily (shard by shard).
* **Bounded buffering, no silent loss.** Each shard buffers at most ``buffer``
  notifications per subscription. When a consumer is too slow and the buffer is full,
  further notifications are not kept; in their place the stream holds one
  :class:`Lagged` item counting them, so the consumer knows exactly how many it missed
  and from which shard (then recording resumes as the buffer drains).
* **Replay.** ``since=T`` first replays, from the shards' logs, every update with event
  time ``>= T`` that was logged before the subscription started, then continues live
  without a gap or a duplicate. A replayed stream equals the live stream that a
  subscription open since before ``T`` received.
* **Resume.** Every notification names its log position (shard, worker clock ``wc``).
  A :class:`StreamPosition` says where a stream stands: per shard, the worker clock after
  which its live part began and that of the last notification delivered. Subscribing
  with ``resume=position`` replays from the logs what came after it (starting from the
  newest shard checkpoint at or before it) and continues live: nothing missed, nothing
  repeated, as if the stream had never stopped.
* A notification's states are copies of the vertex's event-sourced state (read-only by
  contract). Subscriptions are lost when a shard crashes (subscribe again, with ``since``
  or ``resume`` to catch up from the log).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from shards.logstore import LogStore
from shards.replay import LogReplay, checkpoint_list
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = [
    "Lagged",
    "Notification",
    "NotificationFilter",
    "ShardStream",
    "StreamPosition",
    "replay_notifications",
]

StatePredicate = Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], bool]


class Notification(NamedTuple):
    """One vertex update: the vertex, its class, clock and event time after the
    execution, the shard and its worker clock (the log position), and the state before
    (``None``: the execution created the vertex) and after (``None``: it deleted it)."""

    vertex: VertexId
    type_name: str
    clock: int
    time: float
    shard: int
    wc: int
    old_state: Mapping[str, Any] | None
    state: Mapping[str, Any] | None


class Lagged(NamedTuple):
    """``missed`` notifications of ``shard`` were not kept because the consumer was
    behind and the buffer was full; the stream continues after them."""

    shard: int
    missed: int


@dataclass(frozen=True)
class StreamPosition:
    """Where a notification stream stands (see the module doc's *Resume*).

    ``start[k]``: the worker clock of shard ``k`` after which the stream's live part began
    (what its replay, if any, stopped at); ``after[k]``: the worker clock of the last
    notification of shard ``k`` delivered (``start[k]`` for a live stream that got none
    yet); ``since``: the time its replay started from, if it had one (the replayed part
    holds only updates of time ``>= since``).

    >>> p = StreamPosition((5, 7), (5, 7))
    >>> p.admits(Notification(1, "V", 2, 0.0, 1, 8, None, {})), p.admits(
    ...     Notification(1, "V", 1, 0.0, 1, 7, None, {}))
    (True, False)
    >>> p.advanced(Notification(1, "V", 2, 0.0, 1, 8, None, {})).after
    (5, 8)
    """

    start: tuple[int, ...]
    after: tuple[int, ...]
    since: float | None = None

    def __post_init__(self) -> None:
        if len(self.start) != len(self.after):
            raise ValueError("a stream position needs as many start as after clocks")
        if any(c < 0 for c in (*self.start, *self.after)):
            raise ValueError("worker clocks are >= 0")

    def admits(self, n: Notification) -> bool:
        """Whether ``n`` comes after this position in the stream it describes."""
        if n.wc <= self.after[n.shard]:
            return False
        return n.wc > self.start[n.shard] or (self.since is not None and n.time >= self.since)

    def advanced(self, n: Notification) -> StreamPosition:
        """The position once ``n`` is delivered too."""
        if n.wc <= self.after[n.shard]:
            return self
        after = list(self.after)
        after[n.shard] = n.wc
        return StreamPosition(self.start, tuple(after), self.since)


@dataclass(frozen=True)
class NotificationFilter:
    """Which updates a subscription gets: every given condition must hold.

    ``types``: vertex ``type_name`` s; ``ids``: vertex ids; ``predicate(old, new)``: a
    function of the state before and after (either may be ``None``, see
    :class:`Notification`); ``position``: only what comes after that
    :class:`StreamPosition`. Nothing given: every update.

    >>> f = NotificationFilter(types=frozenset({"User"}), predicate=lambda o, n: n is not None)
    >>> f.accepts(Notification(1, "User", 1, 0.0, 0, 1, None, {"a": 1}))
    True
    >>> f.accepts(Notification(1, "Post", 1, 0.0, 0, 1, None, {"a": 1}))
    False
    """

    types: frozenset[str] | None = None
    ids: frozenset[VertexId] | None = None
    predicate: StatePredicate | None = None
    position: StreamPosition | None = None

    @classmethod
    def of(
        cls,
        types: Iterable[str] | str | None = None,
        ids: Iterable[VertexId] | VertexId | None = None,
        predicate: StatePredicate | None = None,
    ) -> NotificationFilter:
        """A filter from loose arguments (a single type or id is accepted as is)."""
        if isinstance(types, str):
            types = [types]
        if isinstance(ids, (int, str)):
            ids = [ids]
        return cls(
            None if types is None else frozenset(types),
            None if ids is None else frozenset(ids),
            predicate,
        )

    def accepts(self, n: Notification) -> bool:
        """Whether notification ``n`` passes."""
        if self.position is not None and not self.position.admits(n):
            return False
        if self.types is not None and n.type_name not in self.types:
            return False
        if self.ids is not None and n.vertex not in self.ids:
            return False
        return self.predicate is None or bool(self.predicate(n.old_state, n.state))


class ShardStream:
    """One subscription's buffer on one shard: a replay iterator (optional) drained
    first, then live notifications, at most ``capacity`` of them plus one
    :class:`Lagged` marker."""

    def __init__(
        self,
        shard: int,
        spec: NotificationFilter,
        capacity: int,
        replay: Iterator[Notification] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("a subscription buffer needs room for at least 1 notification")
        self.shard = shard
        self.spec = spec
        self.capacity = capacity
        self.replay = replay
        self.buffer: deque[Notification | Lagged] = deque()
        self.delivered = 0
        self.missed = 0

    def offer(self, n: Notification) -> bool:
        """Keep ``n`` if the filter accepts it (or count it as missed if full); returns
        whether it was accepted by the filter."""
        if not self.spec.accepts(n):
            return False
        buffer = self.buffer
        if len(buffer) < self.capacity:
            buffer.append(n)
        else:
            self.missed += 1
            last = buffer[-1] if buffer else None
            if isinstance(last, Lagged):
                buffer[-1] = Lagged(self.shard, last.missed + 1)
            else:
                buffer.append(Lagged(self.shard, 1))
        return True

    def take(self, max_items: int) -> list[Notification | Lagged]:
        """Up to ``max_items`` items: replayed ones first, then buffered ones."""
        out: list[Notification | Lagged] = []
        if self.replay is not None:
            for n in self.replay:
                out.append(n)
                if len(out) >= max_items:
                    break
            else:
                self.replay = None
        buffer = self.buffer
        while buffer and len(out) < max_items:
            out.append(buffer.popleft())
        self.delivered += sum(1 for item in out if isinstance(item, Notification))
        return out


def replay_notifications(
    store: LogStore,
    shard: int,
    spec: NotificationFilter,
    since: float = -math.inf,
    bound: int | None = None,
    after: int = 0,
) -> Iterator[Notification]:
    """The notifications of ``shard`` for every logged execution with event time
    ``>= since`` after worker clock ``after`` up to worker clock ``bound`` (default: the
    whole log), in log order, exactly as a live subscription would have received them.

    It starts from the newest shard checkpoint that holds no entry it yields -- one wholly
    before ``since``, or one at or before ``after`` -- and replays the event log after it
    (read-only), giving every change a new state dict so that each notification keeps the
    states it names.
    """
    start_before = max(since, _checkpoint_time(store, after)) if after else since
    replay = LogReplay(
        store, bound=bound, start_before=start_before, keep_states=True, in_edges=False
    )
    for step in replay.entries():
        if step.wc <= after or step.time < since or not step.acted:
            continue
        record = step.record
        if step.deleted or record is None:
            type_name, state = step.old_type, None
        else:
            type_name, state = record.type_name, record.state
        n = Notification(
            step.vertex,
            type_name or "",
            step.clock,
            step.time,
            shard,
            step.wc,
            step.old_state,
            state,
        )
        if spec.accepts(n):
            yield n


def _checkpoint_time(store: LogStore, wc: int) -> float:
    """A time ``t`` such that the newest shard checkpoint whose entries all have times
    ``< t`` is at or before worker clock ``wc``: the latest time of the newest checkpoint
    at or before ``wc`` (-inf if there is none). A checkpoint's latest time never
    decreases along the log, so every checkpoint with an earlier latest time precedes it."""
    times = [max_time for at, max_time in checkpoint_list(store) if at <= wc]
    return times[-1] if times else -math.inf


mark_module_api(globals(), public=("Lagged", "Notification", "StreamPosition"))
