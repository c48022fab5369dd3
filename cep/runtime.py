"""Running a CEP query: split -> process (instances in parallel on Ray) -> merge.

:class:`Pipeline` reads the stream in batches of ``batch_size`` events. For each batch the
driver numbers the events (``seq``, the position in the stream), routes them with the
splitter and hands each instance its share together with the batch's last event time;
instances process batches in order, in parallel (one Ray actor each, ``runtime="ray"``,
or one after the other in this process, ``runtime="local"``). Up to ``max_inflight``
batches are in flight, so the driver reads, splits and merges while instances work. The
merger then walks the batch's steps in :data:`~cep.merger.StepKey` order and writes lines.

**Determinism.** Each instance sees its events in stream order and time advancing to the
same points whatever the number of instances; the merger's order depends only on event
times and stream positions. So the output is the same for 1 or n instances, on Ray or in
process, and for any batch size.

**Latency** of an event: from the moment the driver read it to the moment the merger
finished the batch holding it (its line, if any, written). **Throughput**: input events
per second of wall time, reading and writing included.
"""

from __future__ import annotations

import logging
import math
import os
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from cep.merger import Report, StepKey, TopKMerger, merge_steps
from cep.operator import Context, Operator
from cep.splitter import Splitter

__all__ = ["InstanceHost", "Pipeline", "RunReport"]

Routed = tuple[int, Any, tuple[Any, ...]]
"""``(seq, event, partitions)`` as an instance receives it."""


class InstanceHost:
    """One operator instance: its operator object and context (a Ray actor on Ray)."""

    def __init__(
        self,
        operator: Callable[[], Operator],
        instance: int,
        instances: int,
        log_dir: str | None = None,
    ) -> None:
        self.ctx = Context(instance, instances, log_dir)
        self.op = operator()
        self.op.start(self.ctx)
        self.events = 0
        self.busy = 0.0

    def process(self, items: list[Routed], until: int) -> tuple[list[Report], float]:
        """Run one batch; returns the reports in step order and the seconds it took."""
        started = time.perf_counter()
        op, ctx = self.op, self.ctx
        for seq, event, partitions in items:
            op.advance(ctx, event[0])
            op.on_event(ctx, seq, event, partitions)
        op.advance(ctx, until)
        op.end_batch(ctx)
        self.events += len(items)
        seconds = time.perf_counter() - started
        self.busy += seconds
        return ctx.take_reports(), seconds

    def stats(self) -> dict[str, Any]:
        """Events handled, busy seconds and the operator's own counters."""
        return {"events": self.events, "busy_seconds": self.busy, **self.op.stats()}

    def close(self) -> None:
        """Close the instance's graphs."""
        self.ctx.close()


@dataclass
class RunReport:
    """What one :meth:`Pipeline.run` did, and where the time went."""

    events: int = 0
    lines: int = 0
    seconds: float = 0.0
    instances: int = 1
    runtime: str = "local"
    latency_mean_ms: float = math.nan
    latency_p99_ms: float = math.nan
    split_seconds: float = 0.0
    wait_seconds: float = 0.0
    merge_seconds: float = 0.0
    instance_stats: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Input events per second."""
        return self.events / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.__dict__, "rate": self.rate}


def _start_ray() -> bool:
    """Start a small local Ray instance unless one is running; whether it started one."""
    import ray

    if ray.is_initialized():
        return False
    ray.init(
        address="local",  # never a cluster some other process left running
        num_cpus=os.cpu_count() or 2,
        object_store_memory=128 * 1024 * 1024,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,  # Ray's own start-up lines stay off the user's terminal
        namespace="chronoray-cep",
    )
    return True


class Pipeline:
    """A split -> process -> merge run of one query (see the module doc).

    ``operator`` builds one instance's operator (a class or any picklable factory).
    ``log_dir``: where instances keep their graphs' logs (default: temporary directories).
    Use it as a context manager, or call :meth:`close`: it stops the instance actors (and
    Ray, if it started it).
    """

    def __init__(
        self,
        splitter: Splitter,
        operator: Callable[[], Operator],
        merger: TopKMerger,
        *,
        instances: int = 1,
        runtime: Literal["ray", "local"] = "ray",
        batch_size: int = 2000,
        max_inflight: int = 2,
        log_dir: str | None = None,
    ) -> None:
        if instances < 1 or batch_size < 1 or max_inflight < 1:
            raise ValueError("instances, batch_size and max_inflight must be >= 1")
        if runtime not in ("ray", "local"):
            raise ValueError(f"runtime must be 'ray' or 'local', got {runtime!r}")
        self.splitter = splitter
        self.merger = merger
        self.instances = instances
        self.runtime = runtime
        self.batch_size = batch_size
        self.max_inflight = max_inflight
        splitter.bind(instances)
        self._started_ray = False
        if runtime == "ray":
            import ray

            self._started_ray = _start_ray()
            actor = ray.remote(num_cpus=0, max_restarts=0)(InstanceHost)
            self._hosts: list[Any] = [
                actor.remote(operator, i, instances, log_dir) for i in range(instances)
            ]
            ray.get([h.stats.remote() for h in self._hosts])  # started: not part of a run
        else:
            self._hosts = [InstanceHost(operator, i, instances, log_dir) for i in range(instances)]
        self._closed = False

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _submit(self, shares: list[list[Routed]], until: int) -> list[Any]:
        if self.runtime == "ray":
            return [h.process.remote(s, until) for h, s in zip(self._hosts, shares, strict=True)]
        return [h.process(s, until) for h, s in zip(self._hosts, shares, strict=True)]

    def _collect(self, pending: list[Any]) -> list[tuple[list[Report], float]]:
        if self.runtime == "ray":
            import ray

            return ray.get(pending)  # type: ignore[no-any-return]
        return pending

    def run(
        self,
        events: Iterable[Any],
        write: Callable[[str], Any],
        *,
        progress: Callable[[int], None] | None = None,
        latency: bool = True,
    ) -> RunReport:
        """Run the query over ``events`` (in stream order), passing each output line
        (without newline) to ``write``; ``progress`` gets the events read so far after
        each batch. Returns the counters, rates and latencies."""
        report = RunReport(instances=self.instances, runtime=self.runtime)
        route = self.splitter.route
        n = self.instances
        inflight: deque[tuple[list[StepKey], array[float], list[Any]]] = deque()
        latencies: array[float] = array("d")
        started = time.perf_counter()
        clock = time.perf_counter
        iterator = iter(events)
        seq = 0
        while True:
            t0 = clock()
            shares: list[list[Routed]] = [[] for _ in range(n)]
            keys: list[StepKey] = []
            read_at: array[float] = array("d")
            for event in iterator:
                seq += 1
                if latency:
                    read_at.append(clock())
                keys.append((event[0], 1, seq))
                for instance, partitions in route(event):
                    shares[instance].append((seq, event, partitions))
                if len(keys) == self.batch_size:
                    break
            report.split_seconds += clock() - t0
            if keys:
                inflight.append((keys, read_at, self._submit(shares, keys[-1][0])))
            while inflight and (len(inflight) >= self.max_inflight or not keys):
                self._merge(inflight.popleft(), write, report, latencies)
            if progress is not None:
                progress(seq)
            if not keys:
                break
        report.events = seq
        report.seconds = time.perf_counter() - started
        if latencies:
            ordered = sorted(latencies)
            report.latency_mean_ms = sum(ordered) / len(ordered) * 1000
            report.latency_p99_ms = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000
        report.instance_stats = self.stats()
        return report

    def _merge(
        self,
        batch: tuple[list[StepKey], array[float], list[Any]],
        write: Callable[[str], Any],
        report: RunReport,
        latencies: array[float],
    ) -> None:
        keys, read_at, pending = batch
        t0 = time.perf_counter()
        results = self._collect(pending)
        t1 = time.perf_counter()
        step = self.merger.step
        for key, reports in merge_steps(keys, [r for r, _ in results]):
            line = step(key, reports)
            if line is not None:
                write(line)
                report.lines += 1
        done = time.perf_counter()
        report.wait_seconds += t1 - t0
        report.merge_seconds += done - t1
        latencies.extend(done - t for t in read_at)

    def stats(self) -> list[dict[str, Any]]:
        """Per instance: events handled, busy seconds, the operator's counters."""
        if self.runtime == "ray":
            import ray

            return ray.get([h.stats.remote() for h in self._hosts])  # type: ignore[no-any-return]
        return [h.stats() for h in self._hosts]

    def close(self) -> None:
        """Close the instances (and their graphs); stop Ray if this pipeline started it."""
        if self._closed:
            return
        self._closed = True
        if self.runtime == "ray":
            import ray

            try:
                ray.get([h.close.remote() for h in self._hosts])
            finally:
                for h in self._hosts:
                    ray.kill(h)
                if self._started_ray:
                    ray.shutdown()
        else:
            for h in self._hosts:
                h.close()
