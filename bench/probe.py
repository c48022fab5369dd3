"""Measurements that run against any chronoray tree, for before/after ratios in one run.

This file is executed as a script in a fresh process whose ``PYTHONPATH`` is the tree to
measure (this checkout, or a ``git archive`` of an older commit, see
:mod:`bench.baseline`). It imports only names both trees have -- ``LocalRuntime``,
``RocksLogStore``, ``ShardCore``, ``rebuild_part``, ``GraphCluster``, ``SnapEdgeSource``,
``RingVertex`` -- and prints one JSON object, so the same code measures both.

    python bench/probe.py TASK '{"param": ...}'
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_MIB = 1024 * 1024


def ring(vertices: int, messages: int, logged: bool, workdir: str) -> dict[str, Any]:
    """The ring workload on one in-process shard, with a RocksDB log or none."""
    from bench.workloads import RingVertex, ring_seed
    from shards.local import LocalRuntime
    from shards.logstore import RocksLogStore
    from vertex import VertexTypes

    path = Path(workdir) / "ring"
    shutil.rmtree(path, ignore_errors=True)
    factory = (lambda k: RocksLogStore(path)) if logged else (lambda k: None)
    rt = LocalRuntime(1, VertexTypes([RingVertex]), factory, batch_size=vertices)
    seed = ring_seed(vertices, messages)
    result = _timed(lambda: rt.ingest(seed), rt, messages)
    result["log_bytes"] = _du(path) if logged else 0
    shutil.rmtree(path, ignore_errors=True)
    return result


def core_ingest(file: str, shards: int, logged: bool, workdir: str) -> dict[str, Any]:
    """A SNAP edge file into in-process shards (the default vertex class)."""
    from chronoray.sources import SnapEdgeSource
    from shards.local import LocalRuntime
    from shards.logstore import RocksLogStore

    root = Path(workdir) / "core"
    shutil.rmtree(root, ignore_errors=True)
    factory = (lambda k: RocksLogStore(root / f"shard-{k}")) if logged else (lambda k: None)
    rt = LocalRuntime(shards, None, factory)
    updates = list(SnapEdgeSource(file).read())
    result = _timed(lambda: rt.ingest(updates), rt, None)
    result["updates"] = len(updates)
    return result


def _timed(work: Any, rt: Any, expected: int | None) -> dict[str, Any]:
    started, cpu = time.perf_counter(), time.process_time()
    work()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    executions = sum(core.worker_clock for core in rt.cores)
    rt.close()
    assert expected is None or executions == expected, (executions, expected)
    return {
        "executions": executions,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "rate": executions / seconds,
        "cpu_rate": executions / cpu,
    }


def build_log(file: str, repeat: int, interval: int | None, path: str) -> dict[str, Any]:
    """``repeat`` time-shifted copies of a SNAP file in one shard's RocksDB log at ``path``
    (``interval``: the shard checkpoint interval; ``None``: the runtime's default)."""
    from chronoray.sources import SnapEdgeSource
    from shards.local import LocalRuntime
    from shards.logstore import RocksLogStore
    from vertex.records import Update

    shutil.rmtree(path, ignore_errors=True)
    edges = [(u.vertex, u.dst, u.ts) for u in SnapEdgeSource(file).read()]
    t_min = min(ts for _, _, ts in edges)
    span = max(ts for _, _, ts in edges) - t_min
    options = {} if interval is None else {"shard_checkpoint_interval": interval}
    rt = LocalRuntime(1, store_factory=lambda k: RocksLogStore(path), **options)
    started = time.perf_counter()
    for k in range(repeat):
        shift = k * (span + 1)
        rt.ingest([Update.add_edge(s, d, ts + shift) for s, d, ts in edges], source=f"rep{k}")
    seconds = time.perf_counter() - started
    core = rt.cores[0]
    result = {
        "entries": core.worker_clock,
        "checkpoints": [wc for wc, _ in core.checkpoints],
        "seconds": seconds,
        "t_min": t_min,
        "t_max": t_min + (repeat - 1) * (span + 1) + span,
    }
    rt.close()
    return result


def read_log(
    path: str, fractions: list[float], t_min: float, t_max: float, trials: int
) -> dict[str, Any]:
    """Rebuild the shard of ``path`` at the end (full replay from the newest checkpoint a
    cut can use) and at times at ``fractions`` of ``[t_min, t_max]``; then recover a core
    from it. Each measurement is the median of ``trials``."""
    from shards.core import ShardCore
    from shards.logstore import RocksLogStore
    from snapshot.reconstruct import rebuild_part

    cuts = []
    for fraction in [None, *fractions]:
        at = None if fraction is None else t_min + fraction * (t_max - t_min)
        runs = []
        for _ in range(trials):
            started, cpu = time.perf_counter(), time.process_time()
            store = RocksLogStore(path, read_only=True)
            part = rebuild_part(store, 0, at=at)
            latency, cpu = time.perf_counter() - started, time.process_time() - cpu
            store.close()
            runs.append((latency, cpu, part))
        latency, cpu, part = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
        cuts.append(
            {
                "fraction": fraction,
                "at": at,
                "latency": latency,
                "latency_cpu": cpu,
                "replay_seconds": part.seconds,
                "replayed": part.replayed,
                "checkpoint": part.checkpoint,
                "bound": part.bound,
                "decoded": getattr(part, "decoded", None),
                "vertices": len(part.vertices),
                "edges": sum(len(r.out_edges) for r in part.vertices.values()),
            }
        )
    recoveries = []
    for _ in range(trials):
        started = time.process_time()
        store = RocksLogStore(path)
        core = ShardCore(0, 1, store)
        recoveries.append(time.process_time() - started)
        entries = core.worker_clock
        store.close()
    return {
        "end": cuts[0],
        "cuts": cuts[1:],
        "recovery_cpu_seconds": statistics.median(recoveries),
        "entries": entries,
    }


@contextlib.contextmanager
def _ray_graph(
    workdir: str, shards: int, result: dict[str, Any]
) -> Iterator[tuple[Any, list[int]]]:
    """A graph of ``shards`` shard actors on a fresh local Ray instance, logging under
    ``workdir``, and its shards' pids; once it is closed and Ray shut down, the log's bytes
    on disk (per update: ``result["updates"]``) go into ``result``."""
    import ray

    import chronoray as cr

    log_dir = Path(workdir) / "ray-logs"
    shutil.rmtree(log_dir, ignore_errors=True)
    try:
        with cr.GraphCluster(num_shards=shards, log_dir=str(log_dir)) as g:
            yield g, ray.get([actor.pid.remote() for actor in g.shards])
    finally:
        ray.shutdown()
    result["log_bytes"] = _du(log_dir)
    result["log_bytes_per_event"] = result["log_bytes"] / result["updates"]
    shutil.rmtree(log_dir, ignore_errors=True)


def ray_ingest(file: str, shards: int, workdir: str, mid_t: float | None) -> dict[str, Any]:
    """A SNAP file into ``shards`` shard actors on a fresh local Ray instance, as a user
    does (``GraphCluster.ingest``): updates/s, shard memory, a snapshot at ``mid_t``, and
    the log's bytes on disk once the graph is closed."""
    from chronoray.sources import SnapEdgeSource

    result: dict[str, Any] = {}
    with _ray_graph(workdir, shards, result) as (g, pids):
        empty = [_rss(pid) for pid in pids]
        cpu = [_cpu(pid) for pid in [*pids, os.getpid()]]
        report = g.ingest(SnapEdgeSource(file))
        cpu = [_cpu(pid) - c for pid, c in zip([*pids, os.getpid()], cpu, strict=True)]
        stats = g.stats()
        full = [_rss(pid) for pid in pids]
        result["shard_cpu_seconds"] = cpu[:-1]
        result["driver_cpu_seconds"] = cpu[-1]
        result["updates"] = report.updates
        result["seconds"] = report.seconds
        result["rate"] = report.updates / report.seconds
        result["vertices"] = stats.vertices
        result["edges"] = stats.edges
        result["entries"] = sum(_shard(s, "worker_clock") for s in stats.shards)
        grown = sum(full) - sum(empty)
        result["shard_rss_mib"] = [b / _MIB for b in full]
        result["rss_bytes_per_vertex"] = grown / result["vertices"]
        result["rss_bytes_per_edge"] = grown / result["edges"]
        if mid_t is not None:
            started = time.perf_counter()
            snap = g.snapshot(at=mid_t)
            snap.vertices(), snap.edges()
            result["snapshot_mid_seconds"] = time.perf_counter() - started
            result["snapshot_mid_edges"] = snap.meta.edges
    return result


def ray_ingest_many(files: list[str], shards: int, workdir: str) -> dict[str, Any]:
    """Several SNAP files at once into ``shards`` shard actors on a fresh local Ray
    instance (``GraphCluster.ingest`` of a list: one source actor each, merged by event
    time at the shards): updates/s from the call to the graph being idle, the shards'
    and the driver's CPU, and the log's bytes on disk once the graph is closed."""
    from chronoray.sources import SnapEdgeSource

    result: dict[str, Any] = {}
    with _ray_graph(workdir, shards, result) as (g, pids):
        cpu = [_cpu(pid) for pid in [*pids, os.getpid()]]
        started = time.perf_counter()
        reports = g.ingest([SnapEdgeSource(f) for f in files])
        seconds = time.perf_counter() - started
        cpu = [_cpu(pid) - c for pid, c in zip([*pids, os.getpid()], cpu, strict=True)]
        stats = g.stats()
        result["updates"] = sum(r.updates for r in reports)
        result["seconds"] = seconds
        result["rate"] = result["updates"] / seconds
        result["shard_cpu_seconds"] = cpu[:-1]
        result["driver_cpu_seconds"] = cpu[-1]
        result["edges"] = stats.edges
        result["entries"] = sum(_shard(s, "worker_clock") for s in stats.shards)
    return result


def _shard(stats: Any, key: str) -> Any:
    """A shard counter from a tree whose shard stats are a dict (before issue 20) or a
    ``ShardStats``."""
    return stats[key] if isinstance(stats, dict) else getattr(stats, key)


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) a process used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss(pid: int) -> int:
    """Resident memory of a process (bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def memory(vertices: int, edges: int) -> dict[str, Any]:
    """Traced memory of one shard core (no log) per vertex -- beyond its state dict -- and
    per edge (out-edge props and in-edge record), default vertex class, in-process."""
    import gc
    import tracemalloc

    from shards.core import Batch, ShardCore
    from vertex.records import Update

    core = ShardCore(0, 1, None)

    def feed(updates: list[Any], first: int) -> None:
        for start in range(0, len(updates), 1000):
            chunk = [
                u.with_origin("m", first + start + i)
                for i, u in enumerate(updates[start : start + 1000])
            ]
            core.handle(Batch.of_updates(chunk, prev=first + start - 1))
            while (batch := core.take_batch(0)) is not None:
                core.ack(0, core.handle(batch).applied)

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    feed([Update.add_vertex(v, 1.0) for v in range(vertices)], 1)
    gc.collect()
    with_vertices = tracemalloc.get_traced_memory()[0]
    states = sum(sys.getsizeof(r.state) for r in core.vertices.values())
    rng = __import__("random").Random(3)
    pairs = set()
    while len(pairs) < edges:
        a, b = rng.randrange(vertices), rng.randrange(vertices)
        if a != b:
            pairs.add((a, b))
    feed([Update.add_edge(a, b, 2.0) for a, b in sorted(pairs)], vertices + 1)
    gc.collect()
    with_edges = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {
        "vertices": vertices,
        "edges": edges,
        "bytes_per_vertex": (with_vertices - base) / vertices,
        "state_bytes_per_vertex": states / vertices,
        "bytes_per_vertex_beyond_state": (with_vertices - base - states) / vertices,
        "bytes_per_edge": (with_edges - with_vertices) / edges,
    }


def source_side(file: str, fmt: str, shards: int, halves: bool, batch_size: int) -> dict[str, Any]:
    """What a source does before anything reaches a shard, as a source actor does it:
    check the file's time order, read it, and route its updates into shard batches (each
    batch acknowledged at once, so nothing piles up). Columns where the tree has them
    (``read_columns`` / ``SourceFeed.offer_columns``), else rows."""
    import chronoray.sources as sources
    from shards.feed import SourceFeed

    source = sources.open_source(file, fmt)  # type: ignore[arg-type]
    read = getattr(sources, "read_columns", sources.read_updates)
    started, cpu = time.perf_counter(), time.process_time()
    sources.check_order(source)
    feed = SourceFeed(source.name, shards, batch_size, halves=halves)
    offer_columns = getattr(feed, "offer_columns", None)
    updates, _ = read(source)
    items = 0
    for item in updates:
        if isinstance(item, sources.Update):
            out = feed.offer(item)
        else:
            out = offer_columns(item)  # type: ignore[misc]
            assert out is not None
        for shard, batch in out:
            items += _items(batch)
            feed.ack(shard, _last_position(batch))
    for _shard, batch in feed.end():
        items += _items(batch)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"updates": feed.read, "items": items, "seconds": seconds, "cpu_seconds": cpu}


def _items(batch: Any) -> int:
    """Items of a batch, of either tree (a batch with columns from issue 21 on)."""
    columns = getattr(batch, "columns", None)
    return len(batch.items) if columns is None else len(columns)


def _last_position(batch: Any) -> int:
    columns = getattr(batch, "columns", None)
    return batch.items[-1][0] if columns is None else int(columns.position[-1])  # type: ignore[no-any-return]


def shard_ingest(file: str, shards: int, workdir: str, profile: int = 0) -> dict[str, Any]:
    """A SNAP file ingested by ``GraphCluster(runtime="local")`` (in-process shards,
    RocksDB logs): seconds, log entries (executions), log bytes once closed; with
    ``profile``, that many lines of the cProfile (own time) of the ingest instead of a
    timing."""
    import cProfile
    import io
    import pstats

    import chronoray as cr
    from chronoray.sources import open_source

    log_dir = Path(workdir) / "shard-ingest"
    shutil.rmtree(log_dir, ignore_errors=True)
    graph = cr.GraphCluster(runtime="local", num_shards=shards, log_dir=str(log_dir))
    started, cpu = time.perf_counter(), time.process_time()
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    graph.ingest(open_source(file, "snap"))  # type: ignore[arg-type]
    if profiler is not None:
        profiler.disable()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    stats = graph.stats()
    entries = sum(_shard(s, "worker_clock") for s in stats.shards)
    graph.close()
    out = {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "entries": entries,
        "edges": stats.edges,
        "log_bytes": _du(log_dir),
    }
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(profile)
        out["profile"] = "\n".join(line for line in text.getvalue().splitlines() if line.strip())
    shutil.rmtree(log_dir, ignore_errors=True)
    return out


def local_ingest(file: str, fmt: str, shards: int, workdir: str) -> dict[str, Any]:
    """A file ingested by ``GraphCluster(runtime="local")`` into ``shards`` in-process
    shards with RocksDB logs: the public API, each tree's own data path."""
    import chronoray as cr
    from chronoray.sources import open_source

    log_dir = Path(workdir) / "local-graph"
    shutil.rmtree(log_dir, ignore_errors=True)
    started, cpu = time.perf_counter(), time.process_time()
    with cr.GraphCluster(runtime="local", num_shards=shards, log_dir=str(log_dir)) as graph:
        graph.ingest(open_source(file, fmt))  # type: ignore[arg-type]
        edges = graph.stats().edges
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    shutil.rmtree(log_dir, ignore_errors=True)
    return {"seconds": seconds, "cpu_seconds": cpu, "edges": edges}


def replay_log(
    log_dir: str, shards: int, at: float, repeat: int, profile: int = 0
) -> dict[str, Any]:
    """CPU seconds (median of ``repeat``) of replaying every shard log of ``log_dir``:
    the whole log with incoming edges from no checkpoint (``full``), a cut at ``at`` as a
    snapshot rebuilds it (``cut``: newest usable checkpoint, no incoming edges) and a
    shard's recovery (``recovery``: ``ShardCore`` reopened over the log). With
    ``profile``, the cProfile top ``profile`` lines (by own time) of one ``full``."""
    import cProfile
    import io
    import pstats

    from shards.core import ShardCore
    from shards.logstore import RocksLogStore
    from shards.replay import LogReplay, read_cursor
    from snapshot.reconstruct import rebuild_part

    paths = [str(Path(log_dir) / f"shard-{k}") for k in range(shards)]

    def full() -> int:
        entries = 0
        for path in paths:
            store = RocksLogStore(path, read_only=True)
            replay = LogReplay(store, checkpoint=False)
            replay.run()
            entries += replay.applied
            store.close()
        return entries

    def cut() -> int:
        entries = 0
        for k, path in enumerate(paths):
            store = RocksLogStore(path, read_only=True)
            entries += rebuild_part(store, k, at=at).replayed
            store.close()
        return entries

    def recovery() -> int:  # the entries after the newest checkpoint (or the floor)
        entries = 0
        for k, path in enumerate(paths):
            store = RocksLogStore(path)
            cursor = read_cursor(store)
            start = min(LogReplay(store).start + 1, cursor.floor if cursor else 1)
            entries += ShardCore(k, shards, store).worker_clock - start + 1
            store.close()
        return entries

    result: dict[str, Any] = {}
    for name, work in (("full", full), ("cut", cut), ("recovery", recovery)):
        runs = []
        for _ in range(repeat):
            cpu = time.process_time()
            entries = work()
            runs.append(time.process_time() - cpu)
        result[name] = {"cpu_seconds": statistics.median(runs), "runs": runs, "entries": entries}
    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(full)
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(profile)
        result["profile"] = text.getvalue()
    return result


TASKS = {
    "replay_log": replay_log,
    "local_ingest": local_ingest,
    "shard_ingest": shard_ingest,
    "source_side": source_side,
    "ring": ring,
    "core_ingest": core_ingest,
    "build_log": build_log,
    "read_log": read_log,
    "ray_ingest": ray_ingest,
    "ray_ingest_many": ray_ingest_many,
    "memory": memory,
}


def main() -> None:
    task, params = sys.argv[1], json.loads(sys.argv[2])
    result = TASKS[task](**params)
    print(
        json.dumps(
            result, default=lambda v: None if isinstance(v, float) and math.isnan(v) else str(v)
        )
    )
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (Ray's atexit hooks) once the JSON is out


if __name__ == "__main__":
    main()
