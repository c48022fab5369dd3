"""Running a CEP query: split -> process (instances in parallel on Ray) -> merge.

:class:`Pipeline` takes the stream as one Arrow table (:data:`cep.columns.SCHEMA`) and
cuts it into batches. For each batch the splitter gives each instance its events (a record
batch, columns not rows); instances process batches in order, in parallel (one Ray actor
each, ``runtime="ray"``, or one after the other in this process, ``runtime="local"``),
together with the batch's last event time. On Ray up to ``max_inflight`` batches are in
flight, so the driver splits and merges while instances work. The merger then walks the batch's
steps in :data:`~cep.merger.StepKey` order and writes lines.

**Batches adapt to the rate.** With ``rate=R`` the stream is offered at R events per
second (event ``i`` arrives at ``i / R`` s after the start), and a batch is every event
that has arrived when the driver is ready for the next one (at most ``batch_size``): one
event when the stream is slow, larger batches when it is fast or the instances fall
behind. Without ``rate`` every event is there at the start (the peak: batches of
``batch_size``).

**Determinism.** Each instance sees its events in stream order and time advancing to the
same points whatever the number of instances; the merger's order depends only on event
times and stream positions. So the output is the same for 1 or n instances, on Ray or in
process, and for any batch size or rate.

**Latency** of an event: from its arrival (read, or its offered time with ``rate``) to
the moment the merger finished the batch holding it (its line written, if it caused one).
Each output line carries the arrival of the event that caused it (its step's event, or for
a time-driven change the event that moved time there). **Throughput**: input events per
second of wall time.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from cep.merger import Report, TopKMerger
from cep.operator import Context, Operator
from cep.splitter import Splitter

__all__ = ["InstanceHost", "Pipeline", "RunReport"]

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

    def process(self, batch: pa.RecordBatch, until: int) -> tuple[list[Report], float]:
        """Run one batch (maybe empty: time passes); the reports in step order and the
        seconds it took."""
        started = time.perf_counter()
        self.op.process(self.ctx, batch, until)
        self.events += batch.num_rows
        seconds = time.perf_counter() - started
        self.busy += seconds
        return self.ctx.take_reports(), seconds

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
    rate_offered: float | None = None
    latency_mean_ms: float = math.nan
    latency_p99_ms: float = math.nan
    line_latency_mean_ms: float = math.nan
    line_latency_p99_ms: float = math.nan
    batches: int = 0
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


def _mean_p99(seconds: np.ndarray) -> tuple[float, float]:
    if len(seconds) == 0:
        return math.nan, math.nan
    ordered = np.sort(seconds)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return float(ordered.mean() * 1000), float(p99 * 1000)


@cache
def _host_class() -> Any:
    """``ray.remote(InstanceHost)``, made once per process: Ray exports every new actor class
    again on its first use (as chronoray's own actors, which cep does not import, avoid)."""
    import ray

    return ray.remote(InstanceHost)


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
            actor = _host_class().options(num_cpus=0, max_restarts=0)
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

    def _submit(self, shares: list[pa.RecordBatch], until: int) -> list[Any]:
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
        events: pa.Table,
        write: Callable[[str], Any],
        *,
        rate: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> RunReport:
        """Run the query over ``events`` (a table of :data:`cep.columns.SCHEMA` in stream
        order), passing each output line (without newline) to ``write``; with ``rate``,
        offer them at that many events per second (see the module doc); ``progress`` gets
        the events taken so far after each batch. Returns the counters, rates and
        latencies."""
        if rate is not None and rate <= 0:
            raise ValueError(f"rate must be > 0 events/s, got {rate}")
        report = RunReport(instances=self.instances, runtime=self.runtime, rate_offered=rate)
        n = events.num_rows
        ts = events.column("ts").to_numpy()
        seq = events.column("seq").to_numpy()
        arrival = np.zeros(n)
        done = np.zeros(n)
        lines: list[tuple[int, float]] = []  # (causing event's row, written at)
        inflight: deque[tuple[int, int, list[Any]]] = deque()
        clock = time.perf_counter
        # in process a batch is done when submitted: merge it before taking the next
        limit = self.max_inflight if self.runtime == "ray" else 1
        started = clock()
        taken = 0
        while taken < n or inflight:
            ready = n if rate is None else min(n, int((clock() - started) * rate) + 1)
            if taken < n and len(inflight) < limit and (ready > taken or not inflight):
                if ready <= taken:  # nothing has arrived and nothing is in flight: wait
                    time.sleep(max(0.0, started + taken / rate - clock()))  # type: ignore[operator]
                    continue
                t0 = clock()
                end = min(ready, taken + self.batch_size)
                if rate is None:
                    arrival[taken:end] = t0
                else:
                    arrival[taken:end] = started + np.arange(taken, end) / rate
                batch = events.slice(taken, end - taken).combine_chunks().to_batches()[0]
                shares = self.splitter.split(batch)
                inflight.append((taken, end, self._submit(shares, int(ts[end - 1]))))
                report.batches += 1
                taken = end
                report.split_seconds += clock() - t0
                if progress is not None:
                    progress(taken)
                continue
            first, end, pending = inflight.popleft()
            t0 = clock()
            results = self._collect(pending)
            t1 = clock()
            merged = self.merger.merge([r for r, _ in results], ts[first:end], seq[first:end])
            for cause, line in merged:
                write(line)
                lines.append((cause, clock()))
            finished = clock()
            done[first:end] = finished
            report.lines += len(merged)
            report.wait_seconds += t1 - t0
            report.merge_seconds += finished - t1
        report.events = n
        report.seconds = clock() - started
        report.latency_mean_ms, report.latency_p99_ms = _mean_p99(done - arrival)
        if lines:
            cause = np.array([c for c, _ in lines]) - int(seq[0])
            written = np.array([w for _, w in lines])
            report.line_latency_mean_ms, report.line_latency_p99_ms = _mean_p99(
                written - arrival[cause]
            )
        report.instance_stats = self.stats()
        return report

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
