"""Typed handles on a graph's actors (internal).

A Ray actor handle is untyped: ``shard.stats.remote()`` is an ``ObjectRef`` of anything,
and a misspelt method fails only when called. :class:`ShardHandle` and
:class:`ControllerHandle` wrap the handles the driver side uses (:mod:`chronoray.ray_graph`,
:mod:`chronoray.ingest`) with one method per actor call and the type of its answer.

* :class:`ShardHandle` methods start the call and return its typed ``ObjectRef`` (the
  callers keep several calls in flight, gather them, or wait on them).
* :class:`ControllerHandle` methods wait for the answer and return it; those a caller
  may repeat are asked again while the controller restarts (up to ``patience`` seconds),
  the pump's long polls are not (their caller says what it waits for).

Both pickle as their actor handle does (a source actor gets them as arguments).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Self

import ray
from ray import ObjectRef

from shards.coordinator import Gate, Instruction, Promise
from shards.core import Batch
from shards.protocol import Outcome, Quiet, ShardStats
from shards.worker import ACTOR_ERRORS, shard_actor_name
from vertex.annotations import mark_module_api
from vertex.records import VertexId

if TYPE_CHECKING:
    from chronoray.ingest import SourceFinal

__all__ = ["ControllerHandle", "ShardHandle"]

RESTART_PATIENCE = 120.0
"""Seconds a driver waits for the graph's controller to come back after it died."""


class ShardHandle:
    """A ``ShardWorker`` actor, each call typed (see the worker's methods for what they
    do); ``actor`` is the raw Ray handle."""

    __slots__ = ("actor",)

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    @classmethod
    def named(cls, graph_id: str, shard: int, namespace: str | None) -> ShardHandle:
        """Shard ``shard`` of graph ``graph_id``, found by its actor name."""
        return cls(ray.get_actor(shard_actor_name(graph_id, shard), namespace=namespace))

    def push(self, batch: Batch) -> ObjectRef[Outcome]:
        ref: ObjectRef[Outcome] = self.actor.push.remote(batch)
        return ref

    def wait_applied(self, channel: str, position: int, timeout: float) -> ObjectRef[Outcome]:
        ref: ObjectRef[Outcome] = self.actor.wait_applied.remote(channel, position, timeout)
        return ref

    def wait_quiet(self, timeout: float) -> ObjectRef[Quiet]:
        ref: ObjectRef[Quiet] = self.actor.wait_quiet.remote(timeout)
        return ref

    def wait_pending_after(self, t: float, timeout: float) -> ObjectRef[bool]:
        ref: ObjectRef[bool] = self.actor.wait_pending_after.remote(t, timeout)
        return ref

    def set_frontier(self, time: float, reset: bool, seq: int) -> ObjectRef[None]:
        ref: ObjectRef[None] = self.actor.set_frontier.remote(time, reset, seq)
        return ref

    def set_gate(self, gate: Gate | None, seq: int) -> ObjectRef[None]:
        ref: ObjectRef[None] = self.actor.set_gate.remote(gate, seq)
        return ref

    def stats(self, pending_time: bool = False) -> ObjectRef[ShardStats]:
        ref: ObjectRef[ShardStats] = self.actor.stats.remote(pending_time)
        return ref

    def ping(self) -> ObjectRef[int]:
        ref: ObjectRef[int] = self.actor.ping.remote()
        return ref

    def pid(self) -> ObjectRef[int]:
        ref: ObjectRef[int] = self.actor.pid.remote()
        return ref

    def node(self) -> ObjectRef[str]:
        ref: ObjectRef[str] = self.actor.node.remote()
        return ref

    def vertex(self, vertex_id: VertexId) -> ObjectRef[dict[str, Any]]:
        ref: ObjectRef[dict[str, Any]] = self.actor.vertex.remote(vertex_id)
        return ref

    def edges(self) -> ObjectRef[list[tuple[VertexId, VertexId, dict[str, Any]]]]:
        ref: ObjectRef[list[tuple[VertexId, VertexId, dict[str, Any]]]] = self.actor.edges.remote()
        return ref

    def degrees(self) -> ObjectRef[list[tuple[VertexId, int, int]]]:
        ref: ObjectRef[list[tuple[VertexId, int, int]]] = self.actor.degrees.remote()
        return ref

    def recent_errors(self) -> ObjectRef[list[tuple[int, VertexId, str]]]:
        ref: ObjectRef[list[tuple[int, VertexId, str]]] = self.actor.recent_errors.remote()
        return ref


class ControllerHandle:
    """The graph's ``GraphController`` actor, each call typed and answered (see the
    controller's methods for what they do); ``actor`` is the raw Ray handle. A call the
    caller may repeat is asked again while the controller restarts, for up to
    ``patience`` seconds (then the actor's error is raised) -- and not at all once the
    controller is gone for good: its name (``name`` in ``namespace``) no longer names it,
    as after the graph's ``shutdown`` (``ray.kill(no_restart=True)``)."""

    __slots__ = ("actor", "name", "namespace", "patience")

    def __init__(
        self,
        actor: Any,
        name: str,
        namespace: str,
        patience: float = RESTART_PATIENCE,
    ) -> None:
        self.actor = actor
        self.name = name
        self.namespace = namespace
        self.patience = patience

    @classmethod
    def named(cls, name: str, namespace: str, patience: float = RESTART_PATIENCE) -> Self:
        """The controller named ``name`` in ``namespace`` (``ValueError`` if none is)."""
        return cls(ray.get_actor(name, namespace=namespace), name, namespace, patience)

    def gone(self) -> bool:
        """Whether this controller will not answer again: Ray released its name (it is
        dead and will not restart) or gave it to another actor. A restarting actor keeps
        its name."""
        try:
            found = ray.get_actor(self.name, namespace=self.namespace)
        except ValueError:
            return True
        return bool(found != self.actor)

    def _ask(self, method: str, *args: Any) -> Any:
        """``method(*args)``'s answer, asked again while the controller restarts."""
        call = getattr(self.actor, method)
        deadline = time.monotonic() + self.patience
        while True:
            try:
                return ray.get(call.remote(*args))
            except ACTOR_ERRORS:
                if time.monotonic() >= deadline or self.gone():
                    raise
                time.sleep(0.1)

    # -- asked again while the controller restarts ------------------------------------

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = self._ask("info")
        return info

    def pid(self) -> int:
        pid: int = self._ask("pid")
        return pid

    def open_source(self, name: str, token: str) -> bool:
        opened: bool = self._ask("open_source", name, token)
        return opened

    def source_floor(self, name: str) -> float:
        floor: float = self._ask("source_floor", name)
        return floor

    def source_actor(self, name: str, actor: Any, actor_name: str) -> None:
        self._ask("source_actor", name, actor, actor_name)

    def close_source(self, name: str, final: SourceFinal) -> None:
        self._ask("close_source", name, final)

    def source_acked(self, name: str, offset: int) -> None:
        self._ask("source_acked", name, offset)

    def acked(self, name: str) -> int | None:
        acked: int | None = self._ask("acked", name)
        return acked

    def sources(self) -> dict[str, Any]:
        sources: dict[str, Any] = self._ask("sources")
        return sources

    def summary(self) -> dict[str, dict[str, Any]]:
        summary: dict[str, dict[str, Any]] = self._ask("summary")
        return summary

    def final(self, name: str, wait: float) -> SourceFinal | None:
        final: SourceFinal | None = self._ask("final", name, wait)
        return final

    # -- a pump's own calls: an actor error reaches the caller ------------------------

    def instructions(self, name: str, wait: float) -> list[Instruction]:
        todo: list[Instruction] = ray.get(self.actor.instructions.remote(name, wait))
        return todo

    def source_idle(self, name: str) -> list[Instruction]:
        todo: list[Instruction] = ray.get(self.actor.source_idle.remote(name))
        return todo

    def source_progress(self, name: str, frontier: float, promise: Promise, reach: float) -> None:
        """Tell the progress of source ``name`` without waiting (a report lost with a dying
        controller is asked for again by the next one)."""
        self.actor.source_progress.remote(name, frontier, promise, reach)


mark_module_api(globals())
