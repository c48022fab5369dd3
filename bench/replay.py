"""The replayer: a GraphTides stream offered to chronoray at a fixed rate (or as fast as
possible), and what one run measures.

Three ways into the graph (``runtime``):

* ``local`` -- the in-process runtime (:class:`chronoray.testing.LocalRuntime`, in-memory
  logs): each stretch between two markers is one ``ingest`` call, which returns once all
  of it and what it caused ran;
* ``ray`` -- a :class:`~chronoray.GraphCluster` (shard actors, RocksDB logs) fed from this
  process through :meth:`~chronoray.GraphCluster.feeding` (the gateway's own path):
  each stretch is one ``pump.run``, which returns once it is logged;
* ``gateway`` -- the same graph behind the gRPC gateway (a Ray actor on loopback), fed
  by :class:`~chronoray.client.GatewayClient` with acknowledgements once logged.

**Rate.** Updates are offered on a schedule of ``rate`` per second times the stream's
``SET_SPEED`` factor (``PAUSE`` holds it); ``rate=None`` offers as fast as the graph takes
them. A replayer that falls behind its schedule offers what is due at once (it never
drops anything).

**Markers.** A marker's latency is from offering the last update before it to the graph
having logged it (local: having run it): the end-to-end time from the stream to a result
that reflects it. With ``local`` and ``ray`` the replayer waits for each marker before
going on (each stretch is acknowledged as a whole); with ``gateway`` it keeps offering
(two batches ahead, the client's window) and reads the marker's time from the
acknowledgements.

Per run (:func:`replay_once`): updates and behaviour executions per second, marker
latency percentiles, shard resident memory per vertex and per edge, log bytes per event,
the latency of a snapshot at the stream's middle time (the first one apart: it also starts
what rebuilds it) and of reopening the graph from its logs (reconstruction), and CPU
seconds per component (driver = the replayer and, with ``ray``, the source; shards;
gateway).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import chronoray as cr
from bench.generators import Stream, workload
from bench.report import cpu_seconds, rss_bytes
from bench.workloads import HopVertex
from chronoray.sources import MalformedRecord

__all__ = ["RUNTIMES", "Pacer", "replay_once"]

Runtime = Literal["local", "ray", "gateway"]
RUNTIMES: tuple[Runtime, ...] = ("local", "ray", "gateway")


class Pacer:
    """Offers a stream's updates on schedule: ``rate`` per second (``None``: at once)
    times the current ``SET_SPEED`` factor, holding for each ``PAUSE``.

    :meth:`stretches` yields the updates between two markers, one iterator at a time;
    once one is consumed, :attr:`marker` is the marker that ended it (``None`` at the
    end of the stream) and :attr:`offered` when its last update was offered
    (``time.perf_counter``)."""

    def __init__(self, entries: Iterator[Any], rate: float | None) -> None:
        self._entries = entries
        self.rate = rate
        self.speed = 1.0
        self.offered = 0.0
        self.count = 0
        self.marker: cr.Marker | None = None
        self._due = 0.0  # schedule position, seconds since the start
        self._start = 0.0
        self._ended = False

    def stretches(self) -> Iterator[Iterator[cr.Update]]:
        self._start = time.perf_counter()
        while not self._ended:
            self.marker = None
            yield self._stretch()

    def _stretch(self) -> Iterator[cr.Update]:
        for entry in self._entries:
            if isinstance(entry, MalformedRecord):
                raise entry
            if isinstance(entry, cr.Marker):
                self.marker = entry
                return
            if isinstance(entry, cr.Control):
                self._control(entry)
                continue
            self._wait()
            self.offered = time.perf_counter()
            self.count += 1
            yield entry
        self._ended = True

    def _control(self, control: cr.Control) -> None:
        if control.kind == "speed":
            self.speed = control.value
        elif self.rate is not None:
            self._due += control.value
        else:
            time.sleep(control.value)

    def _wait(self) -> None:
        if self.rate is None:
            return
        self._due += 1.0 / (self.rate * self.speed)
        ahead = self._start + self._due - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _types(stream: Stream) -> list[type[cr.Vertex]] | None:
    return [HopVertex] if workload(stream.workload).kind == "actors" else None


def _percentiles(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {}
    ordered = sorted(latencies)

    def at(q: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"latency_p50_ms": at(0.5), "latency_p95_ms": at(0.95), "latency_p99_ms": at(0.99)}


# -- local --------------------------------------------------------------------------------------


def _local(stream: Stream, rate: float | None, shards: int, workdir: Path) -> dict[str, Any]:
    from chronoray.testing import LocalRuntime
    from vertex import VertexTypes

    types = _types(stream)
    runtime = LocalRuntime(shards, VertexTypes(types) if types else None)
    pacer = Pacer(cr.GraphTidesSource(stream.path).entries(), rate)
    latencies: list[float] = []
    rss, cpu = rss_bytes(os.getpid()), time.process_time()
    started = time.perf_counter()
    for updates in pacer.stretches():
        runtime.ingest(updates, source=stream.path.name)
        if pacer.marker is not None and pacer.count:
            latencies.append(time.perf_counter() - pacer.offered)
    seconds = time.perf_counter() - started
    stats = {
        "seconds": seconds,
        "updates": pacer.count,
        "executions": sum(core.worker_clock for core in runtime.cores),
        "vertices": sum(len(core.vertices) for core in runtime.cores),
        "edges": len(runtime.edges()),
        "cpu_seconds": {"driver": time.process_time() - cpu},
        "rss_growth_bytes": rss_bytes(os.getpid()) - rss,
        **_percentiles(latencies),
    }
    runtime.close()
    return stats


# -- ray and gateway ------------------------------------------------------------------------------


def _feed_ray(graph: Any, pacer: Pacer, name: str) -> list[float]:
    latencies: list[float] = []
    with graph.feeding(name) as pump:
        for updates in pacer.stretches():
            pump.run(updates, lambda n: None)
            if pacer.marker is not None and pacer.count:
                latencies.append(time.perf_counter() - pacer.offered)
        pump.run(iter(()), lambda n: None, end=True)
    return latencies


def _feed_gateway(graph: Any, pacer: Pacer, name: str, workdir: Path) -> tuple[list[float], float]:
    import ray

    from chronoray.client import GatewayClient
    from chronoray.controller import graph_namespace
    from chronoray.gateway import GatewaySettings, start_gateway_actor, stop_gateway_actor
    from chronoray.gateway.server import GATEWAY_ACTOR
    from chronoray.testing import free_port

    token = workdir / "token"
    token.write_text("bench-replay-token\n")
    port = free_port()
    start_gateway_actor(graph.name, GatewaySettings(port=port, token_file=str(token)))
    try:
        actor = ray.get_actor(GATEWAY_ACTOR, namespace=graph_namespace(graph.name))
        pid = ray.get(actor.pid.remote())
        cpu = cpu_seconds(pid)
        waiting: list[tuple[int, float]] = []  # (offset of a marker's last update, offered)
        latencies: list[float] = []

        def updates() -> Iterator[cr.Update]:
            last = 0
            for stretch in pacer.stretches():
                for update in stretch:
                    last = update.offset
                    yield update
                if pacer.marker is not None and pacer.count:
                    waiting.append((last, pacer.offered))

        def on_ack(ack: Any) -> None:
            while waiting and waiting[0][0] <= ack.through_offset:
                latencies.append(time.perf_counter() - waiting.pop(0)[1])

        with GatewayClient(f"127.0.0.1:{port}", token_file=str(token)) as client:
            client.ingest(updates(), name=name, on_ack=on_ack)
        return latencies, cpu_seconds(pid) - cpu
    finally:
        stop_gateway_actor(graph.name)


def _cluster(
    stream: Stream, runtime: Runtime, rate: float | None, shards: int, workdir: Path
) -> dict[str, Any]:
    import ray

    log_dir = workdir / "logs"
    shutil.rmtree(log_dir, ignore_errors=True)
    options: dict[str, Any] = {"num_shards": shards, "log_dir": str(log_dir)}
    if runtime == "gateway":
        graph = cr.GraphCluster.create(
            f"replay-{time.monotonic_ns()}", **options, vertex_types=_types(stream)
        )
    else:
        graph = cr.GraphCluster(**options, vertex_types=_types(stream))
    result: dict[str, Any] = {}
    try:
        pids = ray.get([shard.pid.remote() for shard in graph.shards])
        rss = [rss_bytes(pid) for pid in pids]
        cpu = {"driver": time.process_time(), "shards": sum(cpu_seconds(pid) for pid in pids)}
        pacer = Pacer(cr.GraphTidesSource(stream.path).entries(), rate)
        started = time.perf_counter()
        if runtime == "gateway":
            latencies, gateway_cpu = _feed_gateway(graph, pacer, stream.path.name, workdir)
        else:
            latencies = _feed_ray(graph, pacer, stream.path.name)
        graph.wait_idle()
        result["seconds"] = time.perf_counter() - started
        cpu = {
            "driver": time.process_time() - cpu["driver"],
            "shards": sum(cpu_seconds(pid) for pid in pids) - cpu["shards"],
        }
        if runtime == "gateway":
            cpu["gateway"] = gateway_cpu
        stats = graph.stats()
        grown = sum(rss_bytes(pid) for pid in pids) - sum(rss)
        result.update(
            updates=pacer.count,
            executions=sum(s["worker_clock"] for s in stats.shards),
            vertices=stats.vertices,
            edges=stats.edges,
            cpu_seconds=cpu,
            rss_growth_bytes=grown,
            **_percentiles(latencies),
        )
        result.update(_snapshot_times(graph, stream))
    finally:
        if runtime == "gateway":
            graph.shutdown()
        else:
            graph.close()
    result["log_bytes"] = _du(log_dir)
    started = time.perf_counter()
    with cr.GraphCluster(log_dir=str(log_dir), num_shards=shards, vertex_types=_types(stream)) as g:
        g.stats()
    result["reopen_seconds"] = time.perf_counter() - started
    shutil.rmtree(log_dir, ignore_errors=True)
    return result


def _snapshot_times(graph: Any, stream: Stream) -> dict[str, float]:
    """A snapshot at the middle time, taken twice: the first also starts what rebuilds it."""
    times = []
    for _ in range(2):
        started = time.perf_counter()
        snap = graph.snapshot(at=stream.time_at(0.5))
        snap.vertices(), snap.edges()
        times.append(time.perf_counter() - started)
    return {"snapshot_mid_cold_seconds": times[0], "snapshot_mid_seconds": times[1]}


def replay_once(
    stream: Stream,
    runtime: Runtime,
    *,
    rate: float | None = None,
    shards: int = 2,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """One run of ``stream`` into a fresh graph on ``runtime``; the metrics of the module
    docstring, derived per update, vertex and edge."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
    own = workdir is None
    where = Path(tempfile.mkdtemp(prefix="chronoray-replay-")) if own else Path(workdir)
    try:
        run: Callable[..., dict[str, Any]] = _local if runtime == "local" else _cluster
        args = (
            (stream, rate, shards, where)
            if runtime == "local"
            else (stream, runtime, rate, shards, where)
        )
        result = run(*args)
    finally:
        if own:
            shutil.rmtree(where, ignore_errors=True)
    return _derived(result)


def _derived(result: dict[str, Any]) -> dict[str, Any]:
    seconds, updates = result["seconds"], max(result["updates"], 1)
    result["updates_per_second"] = result["updates"] / seconds
    result["executions_per_second"] = result["executions"] / seconds
    if result.get("vertices"):
        result["rss_bytes_per_vertex"] = result["rss_growth_bytes"] / result["vertices"]
    if result.get("edges"):
        result["rss_bytes_per_edge"] = result["rss_growth_bytes"] / result["edges"]
    if "log_bytes" in result:
        result["log_bytes_per_event"] = result["log_bytes"] / updates
    result["cpu_us_per_update"] = {k: 1e6 * v / updates for k, v in result["cpu_seconds"].items()}
    return result
