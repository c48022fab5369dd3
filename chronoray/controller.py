"""``GraphController``: the graph's own Ray actor.

Each graph has one. It is what a named graph is found by (``GraphCluster.attach``), it
outlives the driver that created a detached graph, and it is the one place that knows,
for every driver and source actor at once:

* what the graph is (its manifest, its configuration, its shard actors);
* which sources are feeding it, and their combined frontier (a
  :class:`~shards.feed.Frontiers`): it tells the shards whenever that changes, and a
  restarted shard asks it for the current value;
* the final report of every source that ended.

Named graphs live in their own Ray namespace, ``chronoray-graph-<name>``, with the
controller named ``graph``; :func:`named_graphs` lists them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import ray

from shards.feed import Frontiers
from shards.worker import ACTOR_ERRORS

__all__ = ["CONTROLLER_NAME", "GraphController", "graph_namespace", "named_graphs"]

CONTROLLER_NAME = "graph"
_PREFIX = "chronoray-graph-"


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
        self._sources: dict[str, Any] = {}
        self._reports: dict[str, dict[str, Any]] = {}

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

    # -- sources ----------------------------------------------------------------------

    async def open_source(self, name: str) -> bool:
        """Source ``name`` starts feeding (from a driver, until :meth:`source_actor` gives
        its actor). Its earlier report, if any, is forgotten. Refused (``False``) while a
        source of that name is feeding already."""
        if name in self._sources:
            return False
        self._sources[name] = None
        self._reports.pop(name, None)
        await self._tell(self._frontiers.open(name))
        return True

    async def source_actor(self, name: str, handle: Any) -> None:
        """The actor feeding source ``name`` (stopped at once if the source already ended)."""
        if name in self._sources:
            self._sources[name] = handle
        else:
            ray.kill(handle, no_restart=True)

    async def source_frontier(self, name: str, t: float) -> None:
        """Source ``name`` applied every update it read up to time ``t``."""
        await self._tell(self._frontiers.update(name, t))

    async def close_source(self, name: str, report: dict[str, Any]) -> None:
        """Source ``name`` ended with ``report``; its actor (if any) is stopped."""
        handle = self._sources.pop(name, None)
        self._reports[name] = report
        await self._tell(self._frontiers.close(name))
        if handle is not None:
            ray.kill(handle, no_restart=True)

    async def sources(self) -> dict[str, Any]:
        """Active sources: name -> actor handle (``None``: fed from a driver)."""
        return dict(self._sources)

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

    async def stop_sources(self) -> None:
        """Stop every source actor (the graph shuts down)."""
        for handle in self._sources.values():
            if handle is not None:
                ray.kill(handle, no_restart=True)
        self._sources.clear()
