"""``SourceCoordinator``: event-time coordination of the sources feeding one graph (pure).

A graph fed by several sources at once needs one place that knows them all. It is a state
machine in the style of dask-distributed's worker state machine: the runtime hands it
*events* (:meth:`SourceCoordinator.handle`) and carries out the *instructions* it returns.
It does no I/O and imports no Ray: :class:`~shards.local.LocalRuntime` drives it directly,
the Ray runtime through the graph's controller actor (``chronoray.controller``).

What it decides:

* **the frontier** -- the minimum over active sources of the event time up to which
  everything a source read is applied (:class:`Frontiers`); shards hold back messages
  from its future (:meth:`~shards.core.ShardCore.set_frontier`);
* **the floor** of a source when it opens: the latest time the shards applied from other
  sources (its updates before it are late). To read it, the coordinator first *freezes*
  the merge (the new source's promise is below everything: nothing merged runs), then asks
  the runtime to read the shards' times (:class:`ReadFloor`) and *releases* the merge once
  they are in (:class:`FloorRead`);
* **the gate** while several sources feed the graph: each source's :class:`Promise`,
  which the shards use to merge the sources' updates by event time
  (:meth:`~shards.core.ShardCore.set_gate`);
* **idle sources**: a source that read nothing for its idle timeout catches its watermark
  up with the others' (:class:`AdvanceWatermark`);
* **restarted shards**: a shard that lost its memory gets the frontier and the gate again,
  and every active source resends what that shard has not logged (:class:`Resend`);
* **a restarted coordinator** (its runtime's process died): what must outlive it is only
  :attr:`SourceCoordinator.floors` -- which sources are open, each with its floor, kept
  durable by the runtime whenever it changes. A new coordinator takes them back
  (:class:`Recovered`): each recovered source's frontier is ``-inf`` and its promise its
  floor (both true, and below anything it told before) until it reports again
  (:class:`ReportProgress`); the shards get that gate at once, and the frontier (which
  they never lower without a reset) goes up only once every source reported. Until then
  the merge waits; nothing runs out of event-time order.

**One meaning of promise.** A source's :class:`Promise` ``(time, sent)`` says: on shard
``k``, every item of this source after position ``sent[k]`` has an event time ``>= time``.
A shard may use it only once it has received every position through ``sent[k]``; a shard
that restarted and lost items it had received (queued to be merged, not yet logged) no
longer has, so it merges nothing past that source until the source resent them. That is
what keeps every update logged at its own time under restarts.

>>> c = SourceCoordinator(num_shards=1)
>>> c.handle(SourceOpened("a"))
[SetFrontier(time=-inf, reset=True, shards=None), ReadFloor(source='a')]
>>> c.handle(FloorRead("a", ({},)))
[]
>>> [type(i).__name__ for i in c.handle(SourceOpened("b"))]  # frozen while its floor is read
['SetGate', 'ReadFloor']
>>> c.handle(FloorRead("b", ({"src:a": 4.0},)))[0].gate["src:b"]
Promise(time=4.0, sent=(0,))
>>> c.handle(SourceProgressed("a", 5.0, Promise(7.0, (3,)), reach=9.0))[-1].gate["src:a"]
Promise(time=7.0, sent=(3,))
>>> c.handle(SourceIdle("b"))
[AdvanceWatermark(source='b', watermark=7.0)]
>>> c.handle(ShardRestarted(0, "i2"))[2:]
[Resend(source='a', shard=0, incarnation='i2'), Resend(source='b', shard=0, incarnation='i2')]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import singledispatchmethod

from vertex.annotations import mark_module_api

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "AdvanceWatermark",
    "Event",
    "FloorRead",
    "Frontiers",
    "Gate",
    "Instruction",
    "Promise",
    "ReadFloor",
    "Recovered",
    "Refuse",
    "ReportProgress",
    "Resend",
    "SetFrontier",
    "SetGate",
    "ShardRestarted",
    "SourceCoordinator",
    "SourceEnded",
    "SourceIdle",
    "SourceOpened",
    "SourceProgressed",
    "source_channel",
]


DEFAULT_IDLE_TIMEOUT = 10.0
"""Seconds a source may read nothing before it stops holding the graph's watermark back
(both runtimes)."""


def source_channel(source: str) -> str:
    """The channel name of a stream source."""
    return f"src:{source}"


@dataclass(frozen=True, slots=True)
class Promise:
    """On shard ``k``, every item of the source after position ``sent[k]`` has an event
    time ``>= time``: what a source has not sent yet, and what it sent after ``sent[k]``
    (in transit, or lost by a shard that restarted)."""

    time: float
    sent: tuple[int, ...]

    @classmethod
    def nothing(cls, num_shards: int) -> Promise:
        """A promise of nothing (a source whose floor is not known yet: the merge waits)."""
        return cls(-math.inf, (0,) * num_shards)

    def on(self, shard: int, received: int) -> float:
        """The promise's time for ``shard``, which has received the source's items through
        position ``received``: ``-inf`` (nothing promised) while it has not received all
        the promise counts on."""
        return self.time if received >= self.sent[shard] else -math.inf


Gate = dict[str, Promise]
"""Each active source's promise by channel, while several sources feed the graph."""


# -- events ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceOpened:
    """A source starts feeding (refused with :class:`Refuse` if one of that name does)."""

    source: str


@dataclass(frozen=True, slots=True)
class FloorRead:
    """The answer to :class:`ReadFloor`: each shard's event time of the last update it
    applied per source channel."""

    source: str
    times: Sequence[Mapping[str, float]]


@dataclass(frozen=True, slots=True)
class SourceProgressed:
    """A source sent or had acknowledged more: everything it read up to ``frontier`` is
    applied, it promises ``promise``, and the latest time it read is ``reach``."""

    source: str
    frontier: float
    promise: Promise
    reach: float


@dataclass(frozen=True, slots=True)
class SourceIdle:
    """A source read nothing for its idle timeout."""

    source: str


@dataclass(frozen=True, slots=True)
class SourceEnded:
    """A source ended and everything it sent is applied (or it was abandoned)."""

    source: str


@dataclass(frozen=True, slots=True)
class ShardRestarted:
    """Shard ``shard`` lost its memory and recovered from its log (``incarnation``: the
    new instance's id, so a source resends to it once)."""

    shard: int
    incarnation: str = ""


@dataclass(frozen=True, slots=True)
class Recovered:
    """A new coordinator takes over from one that died: ``floors`` (what
    :attr:`SourceCoordinator.floors` said last) are the open sources and their floors."""

    floors: Mapping[str, float]


Event = (
    SourceOpened
    | FloorRead
    | SourceProgressed
    | SourceIdle
    | SourceEnded
    | ShardRestarted
    | Recovered
)


# -- instructions ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SetFrontier:
    """Tell ``shards`` (``None``: all) the frontier; ``reset``: it went down."""

    time: float
    reset: bool
    shards: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class SetGate:
    """Give ``shards`` (``None``: all) the gate (``None``: at most one source feeds)."""

    gate: Gate | None
    shards: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ReadFloor:
    """Read every shard's times per source channel and hand them back as :class:`FloorRead`."""

    source: str


@dataclass(frozen=True, slots=True)
class Refuse:
    """Opening ``source`` is refused: a source of that name is feeding already."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class AdvanceWatermark:
    """Raise ``source``'s watermark to ``watermark`` (it timed out idle)."""

    source: str
    watermark: float


@dataclass(frozen=True, slots=True)
class Resend:
    """``source`` resends every batch ``shard`` has not acknowledged (it restarted)."""

    source: str
    shard: int
    incarnation: str


@dataclass(frozen=True, slots=True)
class ReportProgress:
    """``source`` reports its frontier, promise and reach again (the coordinator that
    knew them died)."""

    source: str


Instruction = (
    SetFrontier | SetGate | ReadFloor | Refuse | AdvanceWatermark | Resend | ReportProgress
)


# -- the state machine ----------------------------------------------------------------


@dataclass(slots=True)
class _Source:
    floor: float | None  # None: being read
    promise: Promise
    reach: float = -math.inf


@dataclass
class SourceCoordinator:
    """The sources feeding a graph of ``num_shards`` shards: their frontier, floors and
    promises (see the module doc). One thread handles its events."""

    num_shards: int
    _sources: dict[str, _Source] = field(default_factory=dict)
    _frontiers: Frontiers = field(default_factory=lambda: Frontiers())
    _gate: Gate | None = None

    # -- queries ------------------------------------------------------------------------

    @property
    def frontier(self) -> float:
        """The graph-wide frontier (``inf``: no source is feeding)."""
        return self._frontiers.value

    @property
    def gate(self) -> Gate | None:
        """The shards' gate now (``None``: at most one source feeds)."""
        return None if self._gate is None else dict(self._gate)

    @property
    def sources(self) -> list[str]:
        """The active sources, in the order they opened."""
        return list(self._sources)

    def source_floor(self, source: str) -> float:
        """The floor of ``source`` (``-inf`` if it is not active or not read yet)."""
        state = self._sources.get(source)
        return -math.inf if state is None or state.floor is None else state.floor

    def held_back_by(self) -> str | None:
        """The source holding the frontier lowest (``None``: none active)."""
        return self._frontiers.held_back_by()

    @property
    def floors(self) -> dict[str, float]:
        """The open sources whose floor is read, with their floors: what a runtime keeps
        durable (whenever it changes: after :class:`FloorRead` and :class:`SourceEnded`)
        to hand a new coordinator as :class:`Recovered`. A source whose floor was still
        being read is not in it: its opening did not finish, and is done again."""
        return {n: s.floor for n, s in self._sources.items() if s.floor is not None}

    # -- events -------------------------------------------------------------------------

    @singledispatchmethod
    def handle(self, event: Event) -> list[Instruction]:
        """Take ``event``; returns the instructions to carry out, in order."""
        raise TypeError(f"not a coordinator event: {event!r}")

    @handle.register
    def _opened(self, event: SourceOpened) -> list[Instruction]:
        name = event.source
        if name in self._sources:
            return [Refuse(name, f"source {name!r} is already feeding this graph")]
        self._sources[name] = _Source(None, Promise.nothing(self.num_shards))
        out = self._frontier(self._frontiers.open(name))
        return out + self._gate_change() + [ReadFloor(name)]  # frozen while it is read

    @handle.register
    def _floor_read(self, event: FloorRead) -> list[Instruction]:
        state = self._sources.get(event.source)
        if state is None:
            return []
        channel = source_channel(event.source)
        times = [t for shard in event.times for c, t in shard.items() if c != channel]
        state.floor = max(times, default=-math.inf)
        if state.floor > state.promise.time:
            state.promise = Promise(state.floor, state.promise.sent)
        return self._gate_change()

    @handle.register
    def _progressed(self, event: SourceProgressed) -> list[Instruction]:
        state = self._sources.get(event.source)
        if state is None:
            return []
        state.reach = max(state.reach, event.reach)
        out = self._frontier(self._frontiers.update(event.source, event.frontier))
        # a promise arriving late (calls may overtake each other) says less: keep the newer
        if state.floor is not None and event.promise.time > state.promise.time:
            state.promise = event.promise
            out += self._gate_change()
        return out

    @handle.register
    def _idle(self, event: SourceIdle) -> list[Instruction]:
        if event.source not in self._sources:
            return []
        mark = self._watermark(excluding=event.source)
        return [AdvanceWatermark(event.source, mark)] if math.isfinite(mark) else []

    @handle.register
    def _ended(self, event: SourceEnded) -> list[Instruction]:
        if self._sources.pop(event.source, None) is None:
            return []
        return self._frontier(self._frontiers.close(event.source)) + self._gate_change()

    @handle.register
    def _shard_restarted(self, event: ShardRestarted) -> list[Instruction]:
        k = (event.shard,)
        out: list[Instruction] = [SetFrontier(self.frontier, True, k), SetGate(self.gate, k)]
        return out + [Resend(s, event.shard, event.incarnation) for s in self._sources]

    @handle.register
    def _recovered(self, event: Recovered) -> list[Instruction]:
        if self._sources:
            raise ValueError("only a new coordinator recovers")
        for name, floor in event.floors.items():
            self._sources[name] = _Source(floor, Promise(floor, (0,) * self.num_shards))
        self._frontiers.restore(list(event.floors))
        self._gate = None
        out: list[Instruction] = [SetFrontier(self.frontier, False)]
        out += self._gate_change() or [SetGate(None)]
        return out + [ReportProgress(s) for s in self._sources]

    # -- helpers ------------------------------------------------------------------------

    def _watermark(self, excluding: str) -> float:
        """What an idle source catches up with: the smallest promise of the other active
        sources; for one that sent everything (its promise is ``inf``), just past the
        latest time it read, so its last updates still merge before anything the idle
        source reads later (``inf``: no other source)."""
        values = []
        for name, state in self._sources.items():
            if name == excluding:
                continue
            time = state.promise.time
            values.append(math.nextafter(state.reach, math.inf) if time == math.inf else time)
        return min(values, default=math.inf)

    def _frontier(self, change: tuple[float, bool] | None) -> list[Instruction]:
        if change is None:
            return []
        return [SetFrontier(change[0], change[1])]

    def _gate_change(self) -> list[Instruction]:
        """The gate, if it changed: each active source's promise while there are several."""
        gate = None
        if len(self._sources) > 1:
            gate = {source_channel(n): s.promise for n, s in self._sources.items()}
        if gate == self._gate:
            return []
        self._gate = gate
        return [SetGate(self.gate)]


class Frontiers:
    """A value per active source and their minimum over them (``inf`` when none is
    active, so nothing is held back): the graph's frontier.

    :meth:`open`, :meth:`update` and :meth:`close` return the minimum to give the
    shards and whether it went down (then the shards must be told with ``reset``), or
    ``None`` when it did not change.

    >>> f = Frontiers()
    >>> f.open("a"), f.update("a", 5.0), f.open("b"), f.update("b", 7.0), f.close("a")
    ((-inf, True), (5.0, False), (-inf, True), (5.0, False), (7.0, False))
    >>> f.held_back_by()
    'b'
    """

    def __init__(self) -> None:
        self._by_source: dict[str, float] = {}
        self._value = math.inf

    @property
    def value(self) -> float:
        """The current minimum."""
        return self._value

    def held_back_by(self) -> str | None:
        """The source with the smallest value (``None``: none active)."""
        if not self._by_source:
            return None
        return min(self._by_source, key=lambda s: (self._by_source[s], s))

    def open(self, source: str, value: float = -math.inf) -> tuple[float, bool] | None:
        """``source`` starts feeding (nothing of it applied yet: ``value`` below all)."""
        self._by_source[source] = value
        return self._recompute()

    def update(self, source: str, t: float) -> tuple[float, bool] | None:
        """``source``'s own value is now ``t`` (it never goes back)."""
        if source not in self._by_source:
            return None
        self._by_source[source] = max(self._by_source[source], t)
        return self._recompute()

    def restore(self, sources: list[str]) -> None:
        """Start over with ``sources`` active, nothing known of them (``-inf`` each), and
        no change to tell: the shards keep the higher frontier they were given until
        every source's value is known again."""
        self._by_source = dict.fromkeys(sources, -math.inf)
        self._value = -math.inf if sources else math.inf

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


mark_module_api(globals())
