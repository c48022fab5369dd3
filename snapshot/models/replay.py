"""Log replay (thesis 9.5.1): fold a function over vertices' histories between two times.

``fold(result, command, state) -> result`` is called for every logged behavior execution
of a chosen vertex (or of every vertex) with event time in ``[t0, t1]``, oldest first per
vertex, where ``command`` is the message the execution handled (``kind``, ``sender``,
``payload``, ``ts``) and ``state`` is the vertex as that execution left it (``type``,
``clock``, ``time``, ``state``, ``out_edges``, ``in_edges``). Each vertex's result starts
at ``initial`` (a fresh deep copy, or ``initial()`` if it is callable). Executions that
failed, found nothing to act on, or deleted the vertex are skipped.

Every shard's log is read by one task (on Ray: on the node holding the log, through a
read-only handle, so the live graph keeps running), starting at the newest shard
checkpoint before ``t0``; shards are folded in parallel. The accumulator should stay
small (about a vertex state): replay aggregates histories, it does not copy them.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from shards.logstore import LogStore
from shards.replay import LogReplay, read_commands
from shards.routing import shard_of
from snapshot.models.result import ModelResult
from snapshot.tables import rows_to_table
from vertex.annotations import mark_module_api

__all__ = ["ReplayFunction", "replay", "replay_log"]

ReplayFunction = Callable[[Any, dict[str, Any], dict[str, Any]], Any]


def replay_log(
    store: LogStore,
    fold: ReplayFunction,
    initial: Any,
    t0: float = -math.inf,
    t1: float = math.inf,
    vertices: Iterable[Any] | None = None,
) -> tuple[dict[Any, Any], int]:
    """Fold over one shard's log (pure). Returns ``(vertex -> result, entries folded)``;
    vertices with no execution in ``[t0, t1]`` are left out."""
    wanted = None if vertices is None else set(vertices)
    log = LogReplay(store, at=t1, start_before=t0, only=wanted)
    results: dict[Any, Any] = {}
    folded = 0
    commands = read_commands(store, log.start + 1)
    for step in log.entries():
        vid = step.vertex
        if step.time < t0 or not step.acted or step.deleted:
            continue
        command = next(commands)
        while command.wc < step.wc:  # the command and event of one execution share a clock
            command = next(commands)
        message = {
            "kind": command.kind,
            "sender": command.sender,
            "payload": command.payload,
            "ts": command.ts,
        }
        if vid not in results:
            results[vid] = initial() if callable(initial) else copy.deepcopy(initial)
        assert step.record is not None
        results[vid] = fold(results[vid], message, step.record.snapshot())
        folded += 1
    return results, folded


def replay(
    graph: Any,
    fold: ReplayFunction,
    initial: Any,
    t0: float | None = None,
    t1: float | None = None,
    *,
    vertices: Iterable[Any] | None = None,
) -> ModelResult:
    """Fold ``fold`` over the histories of ``vertices`` (default: all) of ``graph`` -- a
    :class:`chronoray.GraphCluster` (one Ray task per shard log) or a
    :class:`chronoray.testing.LocalRuntime` -- with event time in ``[t0, t1]``.

    Returns one row per vertex (``id``, ``result``); ``info["entries"]``: executions
    folded.

    >>> from chronoray.testing import LocalRuntime
    >>> from vertex import Update
    >>> rt = LocalRuntime(2)
    >>> rt.ingest([Update.add_edge(1, 2, 10), Update.add_edge(3, 2, 20),
    ...            Update.add_edge(1, 2, 30)])
    >>> most = lambda result, command, state: max(result, len(state["in_edges"]))
    >>> replay(rt, most, 0, vertices=[2]).to_dict()  # max followers of 2 over time
    {2: 2}
    >>> replay(rt, lambda n, c, s: n + 1, 0, t0=15, t1=30).to_dict()  # executions
    {1: 1, 2: 2, 3: 1}
    >>> rt.close()
    """
    started = time.perf_counter()
    lo = -math.inf if t0 is None else t0
    hi = math.inf if t1 is None else t1
    chosen = None if vertices is None else list(vertices)
    if chosen is not None:
        owned: dict[int, list[Any]] = {}
        for v in chosen:
            owned.setdefault(shard_of(v, graph.num_shards), []).append(v)
        args = {k: (fold, initial, lo, hi, vs) for k, vs in owned.items()}
    else:
        args = {k: (fold, initial, lo, hi, None) for k in range(graph.num_shards)}
    if math.isfinite(hi):
        graph.wait_until_complete(hi, 120.0)
    parts = [part for _, part in sorted(graph.read_logs(replay_log, args).items())]
    rows = [{"id": vid, "result": r} for results, _ in parts for vid, r in results.items()]
    table = rows_to_table(rows, ("id",)) if rows else pa.table({"id": pa.array([], pa.int64())})
    table = table.sort_by("id") if table.num_rows else table
    return ModelResult(
        table,
        "replay",
        len(parts),
        time.perf_counter() - started,
        [{"step": k, "entries": n} for k, (_, n) in enumerate(parts)],
        {"entries": sum(n for _, n in parts)},
    )


mark_module_api(globals(), public=("replay",))
