"""``GraphController``: the graph's own Ray actor.

Each graph has one. It is what a named graph is found by (``GraphCluster.attach``), it
outlives the driver that created a detached graph, and it is the one place that knows,
for every driver and source actor at once:

* what the graph is (its manifest, its configuration, its shard actors);
* which sources are feeding it: it hosts the graph's
  :class:`~shards.coordinator.SourceCoordinator` (the same state machine the in-process
  runtime drives), hands it what sources, shards and drivers report -- a source opened,
  progressed, idle, ended; a shard restarted -- and carries out its instructions: the
  frontier and the gate go to the shards (numbered, so that a shard never takes an older
  one after a newer), a floor is read from the shards' times, a watermark to advance or a
  resend goes to the source's mailbox, which its pump long-polls (:meth:`instructions`);
* how every source ended (:class:`~chronoray.ingest.SourceFinal`, long-polled by
  :meth:`GraphController.final`), and a summary per source name -- updates
  read, and the event-time counters: out of order, largest lateness, late rejected and
  applied -- kept in ``LOG_DIR/sources.json`` across restarts (``chronoray stats``).

Named graphs live in their own Ray namespace, ``chronoray-graph-<name>``, with the
controller named ``graph``; :func:`named_graphs` lists them.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path
from typing import Any

import ray

from chronoray.ingest import SourceFinal
from shards.coordinator import (
    AdvanceWatermark,
    FloorRead,
    Instruction,
    Promise,
    ReadFloor,
    Refuse,
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

__all__ = [
    "CONTROLLER_NAME",
    "SOURCES_FILE",
    "SUMMARY_KEYS",
    "GraphController",
    "graph_namespace",
    "named_graphs",
    "read_summary",
    "write_summary",
]

CONTROLLER_NAME = "graph"
_PREFIX = "chronoray-graph-"


SOURCES_FILE = "sources.json"
SUMMARY_KEYS = ("updates", "out_of_order", "max_lateness", "late_rejected", "late_applied")


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
        self._info = dict(info, created=time.time())
        self._shards: list[Any] = []
        self._coordinator = SourceCoordinator(int(info["manifest"]["num_shards"]))
        self._seq = 0  # numbers what the shards are told: they take only newer values
        self._sources: dict[str, Any] = {}
        self._mail: dict[str, list[Instruction]] = {}
        self._news: dict[str, asyncio.Event] = {}
        self._finals: dict[str, SourceFinal] = {}
        self._ended: dict[str, asyncio.Event] = {}
        self._summary_path = Path(self._info["log_dir"]) / SOURCES_FILE
        self._summary: dict[str, dict[str, Any]] = read_summary(self._summary_path)

    async def info(self) -> dict[str, Any]:
        """What the graph is: name, ids, log directory, manifest, config, shard handles."""
        return dict(self._info, shards=list(self._shards), sources=sorted(self._sources))

    async def set_shards(self, shards: list[Any]) -> None:
        """The shard actors (set once, after they were created)."""
        self._shards = list(shards)

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

    async def open_source(self, name: str) -> bool:
        """Source ``name`` starts feeding (from a driver, until :meth:`source_actor` gives
        its actor): the merge freezes while its floor is read from the shards. Its earlier
        report, if any, is forgotten. Refused (``False``) while a source of that name is
        feeding already."""
        instructions = self._coordinator.handle(SourceOpened(name))
        if any(isinstance(i, Refuse) for i in instructions):
            return False
        self._sources[name] = None
        self._mail[name] = []
        self._news[name] = asyncio.Event()
        self._finals.pop(name, None)
        self._ended[name] = asyncio.Event()
        await self._do(instructions)
        return True

    async def source_floor(self, name: str) -> float:
        """The floor of source ``name`` (the same for a restarted source actor)."""
        return self._coordinator.source_floor(name)

    async def source_actor(self, name: str, handle: Any) -> None:
        """The actor feeding source ``name`` (stopped at once if the source already ended)."""
        if name in self._sources:
            self._sources[name] = handle
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
        if news is None:
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
        it applied anything (no phantom source in ``stats``)."""
        handle = self._sources.pop(name, None)
        self._mail.pop(name, None)
        self._news.pop(name, None)
        self._finals[name] = final
        self._ended.setdefault(name, asyncio.Event()).set()
        report = final.report
        if report is not None and (final.error is None or report.new > 0):  # no phantom
            self._summary[name] = {k: getattr(report, k) for k in SUMMARY_KEYS}
            write_summary(self._summary_path, self._summary)
        await self._do(self._coordinator.handle(SourceEnded(name)))
        if handle is not None:
            ray.kill(handle, no_restart=True)

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
        for instruction in instructions:
            await self._carry_out(instruction)

    async def _carry_out(self, instruction: Instruction) -> None:
        match instruction:
            case SetFrontier(time=t, reset=reset):
                self._seq += 1
                await self._tell([s.set_frontier.remote(t, reset, self._seq) for s in self._shards])
            case SetGate(gate=gate):
                self._seq += 1
                await self._tell([s.set_gate.remote(gate, self._seq) for s in self._shards])
            case ReadFloor(source=name):
                times = await self._shard_times()
                await self._do(self._coordinator.handle(FloorRead(name, times)))
            case AdvanceWatermark(source=name) | Resend(source=name) if name in self._mail:
                self._mail[name].append(instruction)
                self._news[name].set()

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
                *[s.stats.remote() for s in self._shards], return_exceptions=True
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
