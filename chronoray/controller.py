"""``GraphController``: the graph's own Ray actor.

Each graph has one. It is what a named graph is found by (``GraphCluster.attach``), it
outlives the driver that created a detached graph, and it is the one place that knows,
for every driver and source actor at once:

* what the graph is (its manifest, its configuration, its shard actors);
* which sources are feeding it: it hosts the graph's
  :class:`~shards.coordinator.SourceCoordinator` (the same state machine the in-process
  runtime drives), hands it what sources, shards and drivers report -- a source opened,
  progressed, idle, ended; a shard restarted -- and carries out its instructions: the
  frontier and the gate go to the shards (numbered in the order the coordinator decided
  them, so that a shard never takes an older one after a newer, even when the older one
  is sent later), a floor is read from the shards' times, a watermark to advance or a
  resend goes to the source's mailbox, which its pump long-polls (:meth:`instructions`);
* how every source ended (:class:`~chronoray.ingest.SourceFinal`, long-polled by
  :meth:`GraphController.final`), and a summary per source name -- updates
  read, and the event-time counters: out of order, largest lateness, late rejected and
  applied -- kept in ``LOG_DIR/sources.json`` across restarts (``chronoray stats``).

**Restarts.** The controller is restarted by Ray (``max_restarts=-1``) when its process
dies, and a new instance rebuilds what the old one held from what survives it:

* the shards are found by name; they keep the frontier and gate they were told, and
  their logs are the truth of what each source applied;
* ``LOG_DIR/controller.pickle`` (:class:`ControllerState`, written whenever it changes,
  which is rare: a source opened, got its actor, ended) holds which sources are open
  with their floors (:attr:`~shards.coordinator.SourceCoordinator.floors`), their source
  actors' names, how ended sources ended, and a bound on the numbers given to the shards
  (a new instance numbers above it, so the shards take its frontier and gate, never a
  late one of the old);
* the sources report their progress again: the recovered coordinator asks them to
  (:class:`~shards.coordinator.ReportProgress`, in their mailbox), and holds the merge
  at their floors until they did (:class:`~shards.coordinator.Recovered`).

Callers retry a call that failed because the controller died; every call they retry
is idempotent (:meth:`GraphController.open_source` by the caller's token).

Named graphs live in their own Ray namespace, ``chronoray-graph-<name>``, with the
controller named ``graph``; :func:`named_graphs` lists them.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import pickle
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import ray

from chronoray.handles import ShardHandle
from chronoray.ingest import SourceFinal
from shards.coordinator import (
    AdvanceWatermark,
    FloorRead,
    Instruction,
    Promise,
    ReadFloor,
    Recovered,
    Refuse,
    ReportProgress,
    Resend,
    SetFrontier,
    SetGate,
    ShardRestarted,
    SourceCoordinator,
    SourceEnded,
    SourceIdle,
    SourceOpened,
    SourceProgressed,
)
from shards.protocol import ShardSettings, ShardStats
from shards.worker import ACTOR_ERRORS
from vertex.annotations import mark_module_api

__all__ = [
    "CONTROLLER_NAME",
    "SOURCES_FILE",
    "STATE_FILE",
    "SUMMARY_KEYS",
    "ControllerState",
    "GraphController",
    "graph_namespace",
    "named_graphs",
    "read_summary",
    "write_summary",
]

CONTROLLER_NAME = "graph"
_PREFIX = "chronoray-graph-"


SOURCES_FILE = "sources.json"
STATE_FILE = "controller.pickle"
SUMMARY_KEYS = ("updates", "out_of_order", "max_lateness", "late_rejected", "late_applied")
_SEQ_BLOCK = 1 << 20  # numbers reserved in the state file at a time


@dataclass(slots=True)
class ControllerState:
    """What a restarted controller needs from its previous instance (``STATE_FILE``):
    the open sources with their floors, the token each was opened with and its source
    actor's name, how ended sources ended, a bound above every number given to the
    shards, when the graph was created, and per gateway source the last offset
    acknowledged to its client (:meth:`GraphController.source_acked`)."""

    created: float
    floors: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    actors: dict[str, str] = field(default_factory=dict)
    finals: dict[str, SourceFinal] = field(default_factory=dict)
    seq: int = 0
    acked: dict[str, int] = field(default_factory=dict)


def read_state(path: Path) -> ControllerState | None:
    """The state kept in ``path`` (``None``: none readable)."""
    try:
        with path.open("rb") as f:
            state = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    if not isinstance(state, ControllerState):
        return None
    if not hasattr(state, "acked"):  # kept by a version without it
        state.acked = {}
    return state


def write_state(path: Path, state: ControllerState) -> None:
    """Keep ``state`` in ``path``, replaced at once (a kill mid-write leaves the old one).
    An error a pickle cannot carry is kept as its text."""
    try:
        data = pickle.dumps(state)
    except (pickle.PicklingError, TypeError, AttributeError):
        finals = {
            n: replace(f, error=None if f.error is None else RuntimeError(str(f.error)))
            for n, f in state.finals.items()
        }
        data = pickle.dumps(replace(state, finals=finals))
    part = path.with_name(f".{path.name}.part")
    try:
        part.write_bytes(data)
        os.replace(part, path)
    except OSError:  # the log directory is on another node: the state stays in memory
        pass


def read_summary(path: Path) -> dict[str, dict[str, Any]]:
    """Per source name, what its last ingestion read (``LOG_DIR/sources.json``)."""
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def write_summary(path: Path, summary: dict[str, dict[str, Any]]) -> None:
    """Keep ``summary`` in ``path`` (in memory only if the directory is on another node)."""
    try:
        path.write_text(json.dumps(summary, indent=1, sort_keys=True))
    except OSError:  # the log directory is on another node: the summary stays in memory
        pass


def graph_namespace(name: str) -> str:
    """The Ray namespace of the named graph ``name``."""
    return f"{_PREFIX}{name}"


def named_graphs() -> list[str]:
    """The names of the named graphs alive in the connected Ray cluster, sorted."""
    found = ray.util.list_named_actors(all_namespaces=True)
    return sorted(
        a["namespace"][len(_PREFIX) :]
        for a in found
        if a["name"] == CONTROLLER_NAME and a["namespace"].startswith(_PREFIX)
    )


class GraphController:
    """The graph's actor (``ray.remote(GraphController)``, async): description, shards,
    sources and their coordination."""

    def __init__(self, info: dict[str, Any]) -> None:
        num_shards = int(info["manifest"]["num_shards"])
        log_dir = Path(info["log_dir"])
        self._state_path = log_dir / STATE_FILE
        with warnings.catch_warnings():  # Ray's property warns about its own internals
            warnings.simplefilter("ignore")
            restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
        kept = read_state(self._state_path) if restarted else None
        if kept is None:  # restarted without a state: numbers from the clock, above the old
            kept = ControllerState(time.time(), seq=time.time_ns() if restarted else 0)
        self._kept = kept
        self._info = dict(info, created=self._kept.created)
        self._shards: list[ShardHandle] = []
        self._coordinator = SourceCoordinator(num_shards)
        self._seq = self._kept.seq  # numbers what the shards are told: they take only newer
        self._sources: dict[str, Any] = {}
        self._mail: dict[str, list[Instruction]] = {}
        self._news: dict[str, asyncio.Event] = {}
        self._finals: dict[str, SourceFinal] = dict(self._kept.finals)
        self._ended: dict[str, asyncio.Event] = {}
        self._summary_path = log_dir / SOURCES_FILE
        self._summary: dict[str, dict[str, Any]] = read_summary(self._summary_path)
        if restarted:
            self._recover(num_shards)
        else:
            write_state(self._state_path, self._kept)  # not a previous graph's state

    def _recover(self, num_shards: int) -> None:
        """Take the previous instance's place: the shards by name, the open sources from
        the state file (each asked to report its progress again), the frontier and gate
        of the recovered coordinator sent to the shards. Nothing here waits for a shard:
        one restarting at the same time waits for this controller (``shard_restarted``)."""
        graph_id, namespace = self._info["graph_id"], self._info["namespace"]
        self._shards = [ShardHandle.named(graph_id, k, namespace) for k in range(num_shards)]
        for name in self._kept.floors:
            self._register(name, self._source_actor(self._kept.actors.get(name)))
        for instruction in self._coordinator.handle(Recovered(dict(self._kept.floors))):
            self._issue(instruction)  # the shards' answers are not waited for

    def _source_actor(self, actor_name: str | None) -> Any:
        if actor_name is None:
            return None
        try:
            return ray.get_actor(actor_name, namespace=self._info["namespace"])
        except ValueError:  # it is gone (stopped)
            return None

    def _register(self, name: str, handle: Any) -> None:
        self._sources[name] = handle
        self._mail[name] = []
        self._news[name] = asyncio.Event()
        self._ended[name] = asyncio.Event()

    def _keep(self) -> None:
        """Write what a restarted controller needs (see :class:`ControllerState`)."""
        kept = self._kept
        kept.floors = self._coordinator.floors
        kept.finals = dict(self._finals)
        write_state(self._state_path, kept)

    async def pid(self) -> int:
        """The actor's process id (fault-injection tests kill it)."""
        return os.getpid()

    async def info(self) -> dict[str, Any]:
        """What the graph is: name, ids, log directory, manifest, config, shard handles."""
        shards = [s.actor for s in self._shards]
        return dict(self._info, shards=shards, sources=sorted(self._sources))

    async def set_shards(self, shards: list[Any]) -> None:
        """The shard actors (set once, after they were created)."""
        self._shards = [ShardHandle(actor) for actor in shards]

    async def update_manifest(self, manifest: dict[str, Any]) -> None:
        """Record a changed manifest (e.g. new shard nodes)."""
        self._info["manifest"] = manifest

    async def shard_restarted(self, shard: int, incarnation: str) -> ShardSettings:
        """Shard ``shard`` came back (instance ``incarnation``) and lost what it held in
        memory: its frontier and gate now, to set before it sends or merges anything;
        every active source is told to resend what the shard has not logged."""
        settings = ShardSettings(self._seq, math.inf, False, self._seq, None)
        for instruction in self._coordinator.handle(ShardRestarted(shard, incarnation)):
            match instruction:
                case SetFrontier(time=t, reset=reset):
                    settings.frontier, settings.reset = t, reset
                case SetGate(gate=gate):
                    settings.gate = gate
                case _:
                    await self._carry_out(instruction)
        return settings

    # -- sources ----------------------------------------------------------------------

    async def open_source(self, name: str, token: str = "") -> bool:
        """Source ``name`` starts feeding (from a driver, until :meth:`source_actor` gives
        its actor): the merge freezes while its floor is read from the shards. Its earlier
        report, if any, is forgotten. Refused (``False``) while a source of that name is
        feeding already -- unless opened with the same ``token`` (the caller retries an
        open whose answer a controller's death lost)."""
        if token and name in self._sources and self._kept.tokens.get(name) == token:
            return True
        instructions = self._coordinator.handle(SourceOpened(name))
        if any(isinstance(i, Refuse) for i in instructions):
            return False
        self._register(name, None)
        self._finals.pop(name, None)
        self._kept.tokens[name] = token
        await self._do(instructions)
        return True

    async def source_floor(self, name: str) -> float:
        """The floor of source ``name`` (the same for a restarted source actor)."""
        return self._coordinator.source_floor(name)

    async def source_actor(self, name: str, handle: Any, actor_name: str | None = None) -> None:
        """The actor feeding source ``name``, named ``actor_name`` (found by it after a
        restart); stopped at once if the source already ended."""
        if name in self._sources:
            self._sources[name] = handle
            if actor_name is not None:
                self._kept.actors[name] = actor_name
                self._keep()
        else:
            ray.kill(handle, no_restart=True)

    async def source_progress(
        self, name: str, frontier: float, promise: Promise, reach: float
    ) -> None:
        """Source ``name`` applied every update it read up to time ``frontier``, promises
        ``promise`` and read up to time ``reach``."""
        await self._do(self._coordinator.handle(SourceProgressed(name, frontier, promise, reach)))

    async def source_idle(self, name: str) -> list[Instruction]:
        """Source ``name`` read nothing for its idle timeout: what it should do (catch its
        watermark up with the other sources')."""
        return self._coordinator.handle(SourceIdle(name))

    async def instructions(self, name: str, wait: float) -> list[Instruction]:
        """What source ``name`` should do (resend to a restarted shard), waiting up to
        ``wait`` seconds for something (a long poll)."""
        news = self._news.get(name)
        if news is None:  # not feeding (any more): nothing will come
            await asyncio.sleep(wait)
            return []
        if not self._mail[name]:
            news.clear()
            try:
                await asyncio.wait_for(news.wait(), wait)
            except TimeoutError:
                pass
        mail, self._mail[name] = self._mail.get(name, []), []
        return mail

    async def close_source(self, name: str, final: SourceFinal) -> None:
        """Source ``name`` ended (everything it sent is applied) as ``final`` says; its
        actor (if any) is stopped. Its summary is kept unless an error stopped it before
        it applied anything (no phantom source in ``stats``). Once more for an ended
        source: nothing changes."""
        if name not in self._sources:
            return
        handle = self._sources.pop(name)
        self._mail.pop(name, None)
        self._news.pop(name, None)
        self._finals[name] = final
        self._ended.setdefault(name, asyncio.Event()).set()
        report = final.report
        if report is not None and (final.error is None or report.new > 0):  # no phantom
            self._summary[name] = {k: getattr(report, k) for k in SUMMARY_KEYS}
            write_summary(self._summary_path, self._summary)
        instructions = self._coordinator.handle(SourceEnded(name))
        self._kept.tokens.pop(name, None)
        self._kept.actors.pop(name, None)
        self._keep()
        await self._do(instructions)
        if handle is not None:
            ray.kill(handle, no_restart=True)

    async def source_acked(self, name: str, offset: int) -> None:
        """Source ``name``'s client was told that every shard logged its records through
        ``offset``: kept (state file) before the caller tells it, so a reopened stream
        resumes after it (:meth:`acked`), never before."""
        self._kept.acked[name] = offset
        self._keep()

    async def acked(self, name: str) -> int | None:
        """The last offset acknowledged to source ``name``'s client (``None``: never
        acknowledged one)."""
        return self._kept.acked.get(name)

    async def sources(self) -> dict[str, Any]:
        """Active sources: name -> actor handle (``None``: fed from a driver)."""
        return dict(self._sources)

    async def summary(self) -> dict[str, dict[str, Any]]:
        """Per source name, what its last ingestion read and its event-time counters."""
        return dict(self._summary)

    async def final(self, name: str, wait: float) -> SourceFinal | None:
        """How source ``name`` ended, once it did (``None`` while it runs after ``wait``
        seconds, or if unknown): a long poll."""
        if name not in self._finals and name in self._sources:
            ended = self._ended.setdefault(name, asyncio.Event())
            try:
                await asyncio.wait_for(ended.wait(), wait)
            except TimeoutError:
                pass
        return self._finals.get(name)

    async def stop_sources(self) -> None:
        """Stop every source actor (the graph shuts down)."""
        for handle in self._sources.values():
            if handle is not None:
                ray.kill(handle, no_restart=True)
        self._sources.clear()

    # -- instructions -----------------------------------------------------------------

    async def _do(self, instructions: list[Instruction]) -> None:
        """Carry out what the coordinator just decided, in order. What the shards are told
        is numbered here, before the first wait: calls interleave at their waits (a
        shard slow to answer one), and a frontier or gate decided earlier but sent later
        must carry the older number, so that no shard takes it over a newer one."""
        numbered = [(i, self._number() if _told_shards(i) else 0) for i in instructions]
        for instruction, seq in numbered:
            await self._carry_out(instruction, seq)

    async def _carry_out(self, instruction: Instruction, seq: int = 0) -> None:
        if isinstance(instruction, ReadFloor):
            times = await self._shard_times()
            told = self._coordinator.handle(FloorRead(instruction.source, times))
            self._keep()  # the source is open, with its floor
            await self._do(told)
        else:
            await self._tell(self._issue(instruction, seq))

    def _issue(self, instruction: Instruction, seq: int = 0) -> list[Any]:
        """Start carrying out ``instruction`` (numbered ``seq`` if it tells the shards
        something; ``0``: numbered now); returns the shard calls it made."""
        match instruction:
            case SetFrontier(time=t, reset=reset):
                seq = seq or self._number()
                return [s.set_frontier(t, reset, seq) for s in self._shards]
            case SetGate(gate=gate):
                seq = seq or self._number()
                return [s.set_gate(gate, seq) for s in self._shards]
            case (
                AdvanceWatermark(source=name) | Resend(source=name) | ReportProgress(source=name)
            ) if name in self._mail:
                self._mail[name].append(instruction)
                self._news[name].set()
        return []

    def _number(self) -> int:
        """The next number of what the shards are told, above every number a previous
        instance gave (a block of them is reserved in the state file at a time)."""
        self._seq += 1
        if self._seq >= self._kept.seq:
            self._kept.seq = self._seq + _SEQ_BLOCK
            self._keep()
        return self._seq

    async def _tell(self, calls: list[Any]) -> None:
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:  # a shard that is down gets them when back (shard_restarted)
            if isinstance(result, BaseException) and not isinstance(result, ACTOR_ERRORS):
                raise result

    async def _shard_times(self) -> tuple[dict[str, float], ...]:
        """Every shard's event time of the last update applied per source channel
        (waiting for a shard that restarts)."""
        while True:
            results = await asyncio.gather(
                *[s.stats() for s in self._shards], return_exceptions=True
            )
            if not any(isinstance(r, ACTOR_ERRORS) for r in results):
                break
            await asyncio.sleep(0.1)
        stats: list[ShardStats] = []
        for result in results:
            if isinstance(result, BaseException):
                raise result
            stats.append(result)
        return tuple(dict(s.times) for s in stats)


def _told_shards(instruction: Instruction) -> bool:
    """Whether ``instruction`` tells every shard a value (numbered: they take only newer)."""
    return isinstance(instruction, SetFrontier | SetGate)


mark_module_api(globals())
