"""Snapshot parts built by Ray tasks, each on the node that holds its shard's log
(:func:`build_snapshot`), and reads of a log there (:func:`read_log`). Where the graph's
shard actors run, each builds its own part instead, in a thread of its process
(``ShardWorker.read_log``): no task worker has to start, and a process that has run a
shard has the libraries a part needs loaded already. A shard actor that cannot answer
leaves its part to a task.

The Ray side of :mod:`snapshot.snapshot`, kept apart so that building a snapshot in this
process (a local or stopped graph) never imports Ray. A task opens the log through a
read-only RocksDB handle, so the live graph keeps running; its tables stay in the object
store behind the refs the :class:`~snapshot.snapshot.Snapshot` holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from shards.codec import Schema
from shards.replay import read_schema
from shards.worker import ACTOR_ERRORS, with_read_only_log
from snapshot.snapshot import Part, Snapshot, SnapshotMeta, assemble_snapshot, part_tables
from vertex.annotations import mark_module_api

__all__ = ["build_snapshot", "read_log"]


def build_snapshot(
    shard_paths: list[str],
    node_id: str | list[str],
    meta: SnapshotMeta,
    *,
    clock: tuple[int, ...] | None = None,
    at: float | None = None,
    since: float | None = None,
    nodes_now: Callable[[], list[str]] | None = None,
    shards: list[Any] | None = None,
) -> Snapshot:
    """Rebuild every shard's part in parallel (one task per shard, on ``node_id``, or on
    ``node_id[shard]`` when the logs are on several nodes; by the shard actors
    ``shards`` themselves where given), all with the graph's schema (read from the
    shards' logs first). With ``nodes_now`` (the shards' nodes now, once they answer), a
    part lost with its node is built again when read (see the module doc)."""
    started = time.perf_counter()
    nodes = [node_id] * len(shard_paths) if isinstance(node_id, str) else list(node_id)
    readers: list[Any] = [None] * len(shard_paths) if shards is None else list(shards)

    def schema_of(shard: int, reader: Any) -> ray.ObjectRef[Any]:
        if reader is not None:
            return reader.read_log.remote(read_schema, (), {})  # type: ignore[no-any-return]
        task = _with_log.options(scheduling_strategy=_on(nodes[shard]), num_cpus=0)
        return task.remote(shard_paths[shard], read_schema, (), {})  # type: ignore[no-any-return]

    schema = Schema.empty()
    for found in ray.get(_asked(schema_of, readers, lambda ref: ref)):
        schema = schema.merge(found)

    def submit(
        shard: int, node: str, bound: int | None, reader: Any = None
    ) -> tuple[Part, Part, ray.ObjectRef[Any]]:
        args = (shard, schema, clock, at, since, bound)
        if reader is not None:
            v, e, s = reader.read_log.options(num_returns=3).remote(part_tables, args, {})
        else:
            task = _with_log.options(scheduling_strategy=_on(node), num_cpus=0, num_returns=3)
            v, e, s = task.remote(shard_paths[shard], part_tables, args, {})
        return v, e, s

    parts = _asked(lambda k, reader: submit(k, nodes[k], None, reader), readers, lambda p: p[2])
    snapshot = assemble_snapshot(
        meta,
        [v for v, _, _ in parts],
        [e for _, e, _ in parts],
        ray.get([s for _, _, s in parts]),
        started,
    )
    meta.part_nodes = nodes
    if nodes_now is not None:
        find_nodes = nodes_now

        def rebuild(shard: int, bound: int) -> tuple[Part, Part, dict[str, Any], str]:
            node = find_nodes()[shard]
            v, e, s = submit(shard, node, bound)
            return v, e, ray.get(s), node

        snapshot.rebuild = rebuild
    return snapshot


_Asked = TypeVar("_Asked")


def _asked(
    ask: Callable[[int, Any], _Asked], readers: list[Any], answer: Callable[[_Asked], Any]
) -> list[_Asked]:
    """``ask(shard, reader)`` of every shard at once (``reader``: its shard actor, or
    ``None``: a task); where the shard actor cannot answer (its ``answer`` ref raises that
    it is gone or restarting), asked again of a task. Returns what was asked, each
    shard's answer ready."""
    asked = [ask(k, reader) for k, reader in enumerate(readers)]
    for k, refs in enumerate(asked):
        try:
            ray.get(answer(refs))
        except ACTOR_ERRORS:
            asked[k] = ask(k, None)
    return asked


def _on(node: str) -> NodeAffinitySchedulingStrategy:
    """Run on ``node`` only. No CPU is reserved by these tasks: a task must run where its
    log is, and long-lived actors (e.g. Spark executors) may hold every CPU of that node."""
    return NodeAffinitySchedulingStrategy(node, soft=False)


@ray.remote
def _with_log(path: str, function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return with_read_only_log(path, function, args, kwargs)


def read_log(
    path: str, node_id: str, function: Any, *args: Any, shard_actor: Any = None, **kwargs: Any
) -> Any:
    """Run ``function(store, *args, **kwargs)`` against a read-only handle of the log at
    ``path``: in a thread of ``shard_actor`` (the shard's actor, for a small read), or
    where it is not given or cannot answer, in a task on ``node_id``; returns its
    result."""
    if shard_actor is not None:
        try:
            return ray.get(shard_actor.read_log.remote(function, args, kwargs))
        except ACTOR_ERRORS:
            pass
    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
    return ray.get(
        _with_log.options(scheduling_strategy=strategy, num_cpus=0).remote(
            path, function, args, kwargs
        )
    )


mark_module_api(globals())
