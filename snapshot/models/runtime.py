"""Where a model's partitions run: in this process, or one Ray actor per partition.

A model is written as a pure *partition worker* class (no Ray import) whose methods the
driver calls on every partition at once, between barriers. Two kinds of call:

* :meth:`PartitionGroup.call` -- every worker runs a method; the (small) results come
  back to the driver, e.g. counts, aggregates, final tables;
* :meth:`PartitionGroup.exchange` -- every worker runs a method on its inbox and returns
  a small summary plus one outgoing batch per destination partition. The batches become
  the next inbox of their destination. On Ray, a worker's batches are separate return
  objects of its actor call and are handed to the destination actors as object refs, so
  they go through the object store, one object per (sender, receiver) pair, and never
  through the driver;
* :meth:`PartitionGroup.submit` -- an exchange the driver does not wait for: it returns
  handles of the summaries, which the next submit can hand to every worker (``shared``:
  on Ray, object refs resolved by the actors), and :meth:`PartitionGroup.gather` waits
  for several at once. Iterative models use it to run several steps per driver round trip.

:class:`LocalGroup` does the same in this process (for tests, doctests and small graphs);
:class:`RayGroup` runs one actor per partition (``num_cpus=0`` by default, so ``P`` may
exceed the CPU count; Ray still runs the actors in parallel processes). Partition actors
are pooled: a finished job hands its actors (emptied) to the next one, since starting an
actor process costs about a second; :func:`release_actors` kills the idle ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, Protocol

import pyarrow as pa

from snapshot.models.partition import GraphPartition, partition_graph, split_tables

__all__ = [
    "Executor",
    "GraphInput",
    "LocalGroup",
    "PartitionGroup",
    "RayGroup",
    "release_actors",
    "start_group",
]

Executor = Literal["auto", "local", "ray"]
GraphInput = Any  # a snapshot.Snapshot, or a (vertices, edges) pair of Arrow tables
WorkerFactory = Callable[..., Any]  # (GraphPartition, *args) -> partition worker


class PartitionGroup(Protocol):
    """``num_parts`` partition workers driven in lockstep."""

    num_parts: int

    def call(self, method: str, *args: Any) -> list[Any]:
        """Run ``worker.method(*args)`` on every partition; their results, in order."""
        ...

    def exchange(self, method: str, inbox: list[Any], *args: Any) -> tuple[list[Any], list[Any]]:
        """Run ``worker.method(batches, *args) -> (summary, [batch for each partition])``
        on every partition, where ``batches`` are the batches sent to it (``inbox[p]``).
        Returns the summaries and the next inbox (opaque: pass it to the next exchange)."""
        ...

    def submit(
        self, method: str, inbox: list[Any], *args: Any, shared: list[Any]
    ) -> tuple[list[Any], list[Any]]:
        """Like :meth:`exchange` with ``shared`` (values or handles of a previous submit)
        resolved and passed to every worker as its last argument, without waiting:
        returns handles of the summaries and the next inbox."""
        ...

    def gather(self, handles: list[list[Any]]) -> list[list[Any]]:
        """The summaries behind the handles of several submits."""
        ...

    def empty_inbox(self) -> list[Any]:
        """An inbox with no batches for anyone."""
        ...

    def reload(self, method: str, graph: GraphInput, *args: Any, direction: str = "out") -> None:
        """Hand every worker its partition of another graph: ``worker.method(partition,
        *args)`` (used by pause/shift/resume)."""
        ...

    def close(self) -> None:
        """Release the workers."""
        ...


def _tables(graph: GraphInput) -> tuple[pa.Table, pa.Table] | None:
    if isinstance(graph, tuple) and len(graph) == 2:
        return graph[0], graph[1]
    return None


class LocalGroup:
    """Partition workers as plain objects in this process."""

    def __init__(
        self,
        graph: GraphInput,
        num_parts: int,
        factory: WorkerFactory,
        args: tuple[Any, ...],
        direction: str = "out",
    ) -> None:
        self.num_parts = num_parts
        self.workers = [
            factory(part, *args) for part in _local_partitions(graph, num_parts, direction)
        ]

    def call(self, method: str, *args: Any) -> list[Any]:
        return [getattr(w, method)(*args) for w in self.workers]

    def exchange(self, method: str, inbox: list[Any], *args: Any) -> tuple[list[Any], list[Any]]:
        summaries, outboxes = [], []
        for worker, batches in zip(self.workers, inbox, strict=True):
            summary, out = getattr(worker, method)(batches, *args)
            summaries.append(summary)
            outboxes.append(out)
        nxt = [[outboxes[p][q] for p in range(self.num_parts)] for q in range(self.num_parts)]
        return summaries, nxt

    def submit(
        self, method: str, inbox: list[Any], *args: Any, shared: list[Any]
    ) -> tuple[list[Any], list[Any]]:
        return self.exchange(method, inbox, *args, list(shared))

    def gather(self, handles: list[list[Any]]) -> list[list[Any]]:
        return handles

    def empty_inbox(self) -> list[Any]:
        return [[] for _ in range(self.num_parts)]

    def reload(self, method: str, graph: GraphInput, *args: Any, direction: str = "out") -> None:
        parts = _local_partitions(graph, self.num_parts, direction)
        for worker, part in zip(self.workers, parts, strict=True):
            getattr(worker, method)(part, *args)

    def close(self) -> None:
        self.workers = []


def _local_partitions(graph: GraphInput, num_parts: int, direction: str) -> list[GraphPartition]:
    tables = _tables(graph)
    if tables is None:  # a Snapshot: fetch its tables into this process
        tables = (graph.vertices(), graph.edges())
    pieces = split_tables(*tables, num_parts, direction=direction)
    return [partition_graph([pieces[p]], p, num_parts) for p in range(num_parts)]


class _PartitionActor:
    """The Ray shell around one partition worker: it only unpacks and calls. Actors are
    pooled and reused by later jobs (an actor process takes seconds to start)."""

    def __init__(self) -> None:
        self.worker: Any = None

    def load(
        self,
        factory: WorkerFactory,
        index: int,
        num_parts: int,
        args: tuple[Any, ...],
        *pieces: tuple[pa.Table, pa.Table],
    ) -> None:
        self.worker = factory(partition_graph(list(pieces), index, num_parts), *args)

    def drop(self) -> None:
        self.worker = None

    def call(self, method: str, args: tuple[Any, ...]) -> Any:
        return getattr(self.worker, method)(*args)

    def exchange(self, method: str, args: tuple[Any, ...], *batches: Any) -> tuple[Any, ...]:
        summary, out = getattr(self.worker, method)(list(batches), *args)
        return (summary, *out)

    def exchange_shared(
        self, method: str, args: tuple[Any, ...], num_batches: int, *values: Any
    ) -> tuple[Any, ...]:
        """An exchange whose last argument is ``values[num_batches:]`` (object refs
        resolved by Ray: they are top-level arguments)."""
        batches, shared = list(values[:num_batches]), list(values[num_batches:])
        summary, out = getattr(self.worker, method)(batches, *args, shared)
        return (summary, *out)

    def reload(
        self,
        method: str,
        index: int,
        num_parts: int,
        args: tuple[Any, ...],
        *pieces: tuple[pa.Table, pa.Table],
    ) -> None:
        getattr(self.worker, method)(partition_graph(list(pieces), index, num_parts), *args)


_idle: dict[str, list[Any]] = {}  # Ray job id -> idle pooled actors


def _take_actors(count: int) -> list[Any]:
    import ray

    idle = _idle.setdefault(ray.get_runtime_context().get_job_id(), [])
    actors = [idle.pop() for _ in range(min(count, len(idle)))]
    cls = ray.remote(_PartitionActor).options(num_cpus=0)
    actors += [cls.remote() for _ in range(count - len(actors))]
    return actors


def release_actors() -> int:
    """Kill the idle pooled partition actors of this Ray job; returns how many."""
    import ray

    idle = _idle.pop(ray.get_runtime_context().get_job_id(), []) if ray.is_initialized() else []
    for actor in idle:
        ray.kill(actor)
    return len(idle)


@functools.cache
def _split_remote() -> Any:
    import ray

    @ray.remote
    def split(vertices: pa.Table, edges: pa.Table, num_parts: int, direction: str) -> Any:
        pieces = split_tables(vertices, edges, num_parts, direction=direction)
        return pieces[0] if num_parts == 1 else tuple(pieces)

    return split


class RayGroup:
    """One Ray actor per partition. The snapshot's per-shard tables are split by Ray
    tasks (one per shard, ``P`` return objects each), and every actor is built from the
    pieces of its partition, so the graph never passes through the driver."""

    def __init__(
        self,
        graph: GraphInput,
        num_parts: int,
        factory: WorkerFactory,
        args: tuple[Any, ...],
        direction: str = "out",
        num_cpus: float = 0.0,
    ) -> None:
        import ray

        self.num_parts = num_parts
        self._ray = ray
        pieces = self._pieces(graph, direction)
        self.actors = _take_actors(num_parts)
        ray.get(
            [
                actor.load.remote(factory, p, num_parts, args, *pieces[p])
                for p, actor in enumerate(self.actors)
            ]
        )

    def _pieces(self, graph: GraphInput, direction: str) -> list[list[Any]]:
        """``pieces[p]``: object refs of partition ``p``'s piece of every shard."""
        ray = self._ray
        tables = _tables(graph)
        if tables is not None:
            vertex_refs, edge_refs = [ray.put(tables[0])], [ray.put(tables[1])]
        else:
            vertex_refs, edge_refs = graph.vertex_refs, graph.edge_refs
        split = _split_remote().options(num_returns=self.num_parts)
        per_shard = []
        for vref, eref in zip(vertex_refs, edge_refs, strict=True):
            refs = split.remote(vref, eref, self.num_parts, direction)
            per_shard.append([refs] if self.num_parts == 1 else refs)
        return [[refs[p] for refs in per_shard] for p in range(self.num_parts)]

    def call(self, method: str, *args: Any) -> list[Any]:
        return self._ray.get([a.call.remote(method, args) for a in self.actors])

    def exchange(self, method: str, inbox: list[Any], *args: Any) -> tuple[list[Any], list[Any]]:
        n = self.num_parts
        results = [
            actor.exchange.options(num_returns=n + 1).remote(method, args, *batches)
            for actor, batches in zip(self.actors, inbox, strict=True)
        ]
        summaries = self._ray.get([r[0] for r in results])  # the barrier
        return summaries, [[results[p][q + 1] for p in range(n)] for q in range(n)]

    def submit(
        self, method: str, inbox: list[Any], *args: Any, shared: list[Any]
    ) -> tuple[list[Any], list[Any]]:
        n = self.num_parts
        results = [
            actor.exchange_shared.options(num_returns=n + 1).remote(
                method, args, len(batches), *batches, *shared
            )
            for actor, batches in zip(self.actors, inbox, strict=True)
        ]
        return [r[0] for r in results], [[results[p][q + 1] for p in range(n)] for q in range(n)]

    def gather(self, handles: list[list[Any]]) -> list[list[Any]]:
        flat = self._ray.get([h for step in handles for h in step])
        n = self.num_parts
        return [flat[k * n : (k + 1) * n] for k in range(len(handles))]

    def empty_inbox(self) -> list[Any]:
        return [[] for _ in range(self.num_parts)]

    def reload(self, method: str, graph: GraphInput, *args: Any, direction: str = "out") -> None:
        pieces = self._pieces(graph, direction)
        self._ray.get(
            [
                a.reload.remote(method, p, self.num_parts, args, *pieces[p])
                for p, a in enumerate(self.actors)
            ]
        )

    def close(self) -> None:
        """Free the workers and return the actors to the pool."""
        if self.actors:
            self._ray.get([a.drop.remote() for a in self.actors])
            _idle.setdefault(self._ray.get_runtime_context().get_job_id(), []).extend(self.actors)
        self.actors = []


def start_group(
    graph: GraphInput,
    num_parts: int,
    factory: WorkerFactory,
    *args: Any,
    executor: Executor = "auto",
    direction: str = "out",
) -> LocalGroup | RayGroup:
    """Start ``num_parts`` workers ``factory(partition, *args)`` over ``graph``.

    ``executor="auto"`` runs on Ray for a :class:`~snapshot.Snapshot` and in this process
    for a ``(vertices, edges)`` pair of tables; ``"ray"`` and ``"local"`` force either.
    """
    if num_parts < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_parts}")
    if executor not in ("auto", "local", "ray"):
        raise ValueError(f"executor must be 'auto', 'local' or 'ray', got {executor!r}")
    on_ray = executor == "ray" or (executor == "auto" and _tables(graph) is None)
    if on_ray:
        return RayGroup(graph, num_parts, factory, args, direction)
    return LocalGroup(graph, num_parts, factory, args, direction)
