"""``GraphController``: the graph's own Ray actor.

Each graph has one. It is what a named graph is found by (``GraphCluster.attach``), it
outlives the driver that created a detached graph, and it is the one place that knows,
for every driver and source actor at once:

* what the graph is (its manifest, its configuration, its shard actors);
* which sources are feeding it, and their combined frontier (a
  :class:`~shards.feed.Frontiers`): it tells the shards whenever that changes, and a
  restarted shard asks it for the current value;
* each source's *floor* -- the latest time the shards applied from other sources when it
  opened: its updates before it are late -- and, while several sources feed the graph,
  their *promises* (no update a source sends from now on is earlier), which it gives the
  shards as their gate so that they merge the sources by event time
  (:meth:`~shards.core.ShardCore.set_gate`). A source opening while another feeds first
  freezes the shards' merge, then reads the time they reached: nothing the shards run
  afterwards is earlier than the new source's floor;
* the final report of every source that ended, and a summary per source name -- updates
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

from shards.core import source_channel
from shards.feed import Frontiers
from shards.worker import ACTOR_ERRORS

__all__ = [
    "CONTROLLER_NAME",
    "SOURCES_FILE",
    "GraphController",
    "graph_namespace",
    "named_graphs",
]

CONTROLLER_NAME = "graph"
_PREFIX = "chronoray-graph-"


SOURCES_FILE = "sources.json"
SUMMARY_KEYS = ("updates", "out_of_order", "max_lateness", "late_rejected", "late_applied")


def _read_summary(path: Path) -> dict[str, dict[str, Any]]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def _write_summary(path: Path, summary: dict[str, dict[str, Any]]) -> None:
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
    sources and their frontier."""

    def __init__(self, info: dict[str, Any]) -> None:
        self._info = dict(info, created=time.time())
        self._shards: list[Any] = []
        self._frontiers = Frontiers()
        self._promises = Frontiers()
        self._floors: dict[str, float] = {}
        self._gate: dict[str, float] | None = None
        self._sources: dict[str, Any] = {}
        self._reports: dict[str, dict[str, Any]] = {}
        self._reach: dict[str, float] = {}
        self._summary_path = Path(self._info["log_dir"]) / SOURCES_FILE
        self._summary: dict[str, dict[str, Any]] = _read_summary(self._summary_path)

    async def info(self) -> dict[str, Any]:
        """What the graph is: name, ids, log directory, manifest, config, shard handles."""
        return dict(self._info, shards=list(self._shards), sources=sorted(self._sources))

    async def set_shards(self, shards: list[Any]) -> None:
        """The shard actors (set once, after they were created)."""
        self._shards = list(shards)

    async def update_manifest(self, manifest: dict[str, Any]) -> None:
        """Record a changed manifest (e.g. new shard nodes)."""
        self._info["manifest"] = manifest

    async def frontier(self) -> float:
        """The graph-wide frontier now (``inf``: no source is feeding)."""
        return self._frontiers.value

    async def gate(self) -> dict[str, float] | None:
        """The shards' gate now: each source channel's promise while several sources
        feed the graph, else ``None``."""
        return self._gate

    async def watermark(self, excluding: str | None = None) -> float:
        """What an idle source catches up with: the smallest promise of the other active
        sources; for one that sent everything (its promise is ``inf``), just past the
        latest time it read, so its last updates still merge before anything the idle
        source reads later (``inf``: no other source)."""
        values = []
        for s in self._promises.sources:
            promise = self._promises.get(s)
            if s == excluding or promise is None:
                continue
            if math.isinf(promise):
                promise = math.nextafter(self._reach.get(s, -math.inf), math.inf)
            values.append(promise)
        return min(values, default=math.inf)

    # -- sources ----------------------------------------------------------------------

    async def open_source(self, name: str) -> bool:
        """Source ``name`` starts feeding (from a driver, until :meth:`source_actor` gives
        its actor). Its earlier report, if any, is forgotten. Refused (``False``) while a
        source of that name is feeding already."""
        if name in self._sources:
            return False
        others = bool(self._sources)
        self._sources[name] = None
        self._reports.pop(name, None)
        await self._tell(self._frontiers.open(name))
        if others:  # freeze the merge: nothing may run past what the floor will say
            self._promises.open(name)
            await self._tell_gate()
        floor = await self._floor(name)
        self._floors[name] = floor
        self._promises.open(name, floor)
        await self._tell_gate()
        return True

    async def source_floor(self, name: str) -> float:
        """The floor of source ``name`` (the same for a restarted source actor)."""
        return self._floors.get(name, -math.inf)

    async def _floor(self, name: str) -> float:
        """The latest time the shards applied from sources other than ``name``."""
        if not self._shards:
            return -math.inf
        channel = source_channel(name)
        stats = await asyncio.gather(*[s.stats.remote() for s in self._shards])
        times = [t for st in stats for c, t in st["times"].items() if c != channel]
        return max(times, default=-math.inf)

    async def source_actor(self, name: str, handle: Any) -> None:
        """The actor feeding source ``name`` (stopped at once if the source already ended)."""
        if name in self._sources:
            self._sources[name] = handle
        else:
            ray.kill(handle, no_restart=True)

    async def source_frontier(
        self, name: str, t: float, promise: float | None = None, reach: float | None = None
    ) -> None:
        """Source ``name`` applied every update it read up to time ``t``; every update it
        sends from now on is at ``promise`` or later; the latest time it read is
        ``reach``."""
        if reach is not None and name in self._sources:
            self._reach[name] = reach
        await self._tell(self._frontiers.update(name, t))
        if promise is not None:
            # the gate holds every source's own promise: it changes with this source's,
            # even when the minimum over them (what update() reports) does not
            self._promises.update(name, promise)
            await self._tell_gate()

    async def close_source(self, name: str, report: dict[str, Any]) -> None:
        """Source ``name`` ended with ``report``; its actor (if any) is stopped."""
        handle = self._sources.pop(name, None)
        self._reach.pop(name, None)
        self._reports[name] = report
        if report.get("report"):
            self._summary[name] = {k: report["report"][k] for k in SUMMARY_KEYS}
            _write_summary(self._summary_path, self._summary)
        await self._tell(self._frontiers.close(name))
        self._promises.close(name)
        await self._tell_gate()
        if handle is not None:
            ray.kill(handle, no_restart=True)

    async def sources(self) -> dict[str, Any]:
        """Active sources: name -> actor handle (``None``: fed from a driver)."""
        return dict(self._sources)

    async def summary(self) -> dict[str, dict[str, Any]]:
        """Per source name, what its last ingestion read and its event-time counters."""
        return dict(self._summary)

    async def report(self, name: str) -> dict[str, Any] | None:
        """The final report of source ``name`` (``None`` while it runs or if unknown)."""
        return self._reports.get(name)

    async def _tell(self, change: tuple[float, bool] | None) -> None:
        if change is None or not self._shards:
            return
        t, lowered = change
        calls = [s.set_frontier.remote(t, lowered) for s in self._shards]
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:  # a shard that is down asks for the frontier when back
            if isinstance(result, BaseException) and not isinstance(result, ACTOR_ERRORS):
                raise result

    async def _tell_gate(self) -> None:
        """Give the shards the active sources' promises (``None`` below two sources)."""
        sources = self._promises.sources
        gate = None
        if len(sources) > 1:
            gate = {source_channel(s): self._promises.get(s) for s in sources}
        if gate == self._gate or not self._shards:
            self._gate = gate
            return
        self._gate = gate
        calls = [s.set_gate.remote(gate) for s in self._shards]
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:  # a shard that is down asks for the gate when back
            if isinstance(result, BaseException) and not isinstance(result, ACTOR_ERRORS):
                raise result

    async def stop_sources(self) -> None:
        """Stop every source actor (the graph shuts down)."""
        for handle in self._sources.values():
            if handle is not None:
                ray.kill(handle, no_restart=True)
        self._sources.clear()
