"""Live computations during column ingestion, with change batches and with one change per
execution, in one run: the degree histogram's update -> result latency at offered rates,
and ingest throughput with each built-in computation.

A source in its own actor (Ray, 2 shards) sends CollegeMsg's edges as column batches:
first the whole file at full speed (warm-up: the shards make their temporal columns),
then edges drawn cyclically from it at a fixed rate for ``--seconds``, in batches of what
the rate fills in 5 ms. A paced batch's event time is the wall-clock microsecond it left
the source, so a shard's hook knows each update's age when the histogram takes it in:

* ``batches``: :class:`BatchProbe` (the live degree histogram, ``on_changes``): the shard
  keeps its column path and the probe notes, per change batch, the age of every owner
  half (the update's out-edge) in it;
* ``rows``: :class:`RowProbe` (the same histogram, ``on_change`` only): the shard runs the
  same columns one execution at a time, as it did for any live computation before change
  batches, and the probe notes the age of each owner half.

Throughput: CollegeMsg x ``--copies`` (times shifted per copy) as column batches at full
speed into a running graph with no computation, or one of the degree histogram, WCC and
PageRank (``tol=1e-6``), each as shipped (``batches``) and as a subclass that overrides
``on_change`` alone, so its shards run every execution one by one (``rows``); and with a
notification stream of 10 vertices, fed from the batches, or (``rows``) beside a
computation that does nothing but needs every execution.

Run: ``python -m bench.live_columns`` (``--rates 20000,100000``); writes
``bench/results/live_columns.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from bench.report import machine, write_results
from chronoray.datasets import collegemsg_path
from ephemeral.algorithms import DegreeHistogram, LivePageRank, WeaklyConnectedComponents
from ephemeral.computation import (
    ChangeBatch,
    ChangesContext,
    Computation,
    EphemeralContext,
    batch_hook,
)
from shards.observe import VertexChange
from vertex.records import VertexId

__all__ = ["BatchProbe", "RowProbe", "main"]

RESULTS = Path(__file__).parent / "results"
_PACED = 10**15  # event times from here on are wall-clock microseconds


class _Aged(tuple):  # type: ignore[type-arg]
    """A computation's aggregate (the histogram's; none for PageRank) plus the ages (ms)
    of the updates it took in."""

    ages: list[np.ndarray]


def _new_aggregate() -> _Aged:
    aggregate = _Aged((Counter(), Counter()))
    aggregate.ages = []
    return aggregate


def _summary(aggregate: Any) -> Any:
    ages = np.concatenate(aggregate.ages) if aggregate.ages else np.zeros(0)
    return dict(aggregate[0]), dict(aggregate[1]), ages


def _combined(parts: list[Any]) -> dict[str, Any]:
    result: dict[str, Any] = DegreeHistogram().combine([(o, i) for o, i, _ in parts])
    result["ages"] = np.concatenate([ages for *_, ages in parts])
    return result


class BatchProbe(DegreeHistogram):
    """The live degree histogram on change batches, noting each paced update's age."""

    def new_aggregate(self) -> _Aged:
        return _new_aggregate()

    def on_changes(self, ctx: ChangesContext, batch: ChangeBatch) -> None:
        super().on_changes(ctx, batch)
        owned = batch.event_time[(batch.half == 0) & (batch.event_time >= _PACED)]
        if len(owned):
            ctx.aggregate.ages.append(time.time() * 1000 - owned / 1000)

    def summarize(self, aggregate: Any, values: Mapping[VertexId, Any]) -> Any:
        return _summary(aggregate)

    def combine(self, parts: list[Any]) -> dict[str, Any]:
        return _combined(parts)


class RowProbe(DegreeHistogram):
    """The same histogram one execution at a time, noting each paced update's age."""

    def new_aggregate(self) -> _Aged:
        return _new_aggregate()

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        super().on_change(ctx, change)
        if _sent(change) and change.time >= _PACED:  # an owner half: its time the update's
            ctx.aggregate.ages.append(np.array([time.time() * 1000 - change.time / 1000]))

    def summarize(self, aggregate: Any, values: Mapping[VertexId, Any]) -> Any:
        return _summary(aggregate)

    def combine(self, parts: list[Any]) -> dict[str, Any]:
        return _combined(parts)


class BatchPageRankProbe(LivePageRank):
    """Live PageRank on net changes, noting, per vertex and batch, the age of the newest
    paced update it took in (its vertex's time: the newest update's)."""

    net_changes: ClassVar[bool] = True  # declared again: on_change is overridden here

    def new_aggregate(self) -> _Aged:
        aggregate = _Aged(())
        aggregate.ages = []
        return aggregate

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        super().on_change(ctx, change)
        if change.time >= _PACED and (change.added_out or _sent(change)):
            ctx.aggregate.ages.append(np.array([time.time() * 1000 - change.time / 1000]))

    def summarize(self, aggregate: Any, values: Mapping[VertexId, Any]) -> Any:
        ages = np.concatenate(aggregate.ages) if aggregate.ages else np.zeros(0)
        return (*super().summarize(aggregate, values), ages)

    def combine(self, parts: list[Any]) -> dict[str, Any]:
        result: dict[str, Any] = super().combine([(x, n) for x, n, _ in parts])
        result["ages"] = np.concatenate([ages for *_, ages in parts])
        return result


class RowPageRankProbe(BatchPageRankProbe):
    """The same, one change per execution (``net_changes`` off): the age of each owner
    half."""

    net_changes: ClassVar[bool] = False

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        super().on_change(ctx, change)


def _sent(change: VertexChange) -> bool:
    """Whether the change holds an owner half: the vertex sent more."""
    old, state = change.old_state, change.state
    return old is not None and state is not None and state["sent"] != old["sent"]


PROBES: dict[str, dict[str, type[Computation]]] = {
    "degree histogram": {"rows": RowProbe, "batches": BatchProbe},
    "PageRank (tol 1e-6)": {"rows": RowPageRankProbe, "batches": BatchPageRankProbe},
}


class RowHistogram(DegreeHistogram):
    """The degree histogram, one change per execution (``on_change`` overridden alone)."""

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        super().on_change(ctx, change)


class RowWcc(WeaklyConnectedComponents):
    """WCC, one change per execution."""

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        super().on_change(ctx, change)


class RowPageRank(LivePageRank):
    """PageRank, one change per execution."""

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        super().on_change(ctx, change)


class RepeatedSource:
    """CollegeMsg ``copies`` times over (times shifted past the last copy's) as column
    batches of 8,192 rows, at full speed."""

    def __init__(self, name: str, copies: int) -> None:
        data = np.loadtxt(collegemsg_path(), dtype=np.int64)
        self.name, self.data, self.copies = name, data, copies

    def __len__(self) -> int:
        return len(self.data) * self.copies

    def batches(self) -> Iterator[Any]:
        from vertex.columns import UpdateBatch

        src, dst, ts = self.data[:, 0], self.data[:, 1], self.data[:, 2]
        span = int(ts.max() - ts.min()) + 1
        n = len(src)
        for k in range(self.copies):
            for i in range(0, n, 8192):
                j = min(n, i + 8192)
                offsets = np.arange(k * n + i + 1, k * n + j + 1, dtype=np.int64)
                yield UpdateBatch.edges(self.name, src[i:j], dst[i:j], ts[i:j] + k * span, offsets)

    def read(self) -> Iterator[Any]:  # pragma: no cover - the source actor reads batches()
        raise NotImplementedError


class PacedSource:
    """CollegeMsg's edges as column batches: all of them at full speed, then ``rate``
    edges per second for ``seconds``, their event time the microsecond they leave."""

    def __init__(self, name: str, rate: float, seconds: float) -> None:
        data = np.loadtxt(collegemsg_path(), dtype=np.int64)
        self.name = name
        self.src, self.dst, self.ts = data[:, 0], data[:, 1], data[:, 2]
        self.rate, self.seconds = rate, seconds

    def batches(self) -> Iterator[Any]:
        from vertex.columns import UpdateBatch

        n = len(self.src)
        for i in range(0, n, 8192):
            j = min(n, i + 8192)
            offsets = np.arange(i + 1, j + 1, dtype=np.int64)
            yield UpdateBatch.edges(self.name, self.src[i:j], self.dst[i:j], self.ts[i:j], offsets)
        chunk = max(1, round(self.rate * 0.005))
        total = int(self.rate * self.seconds)
        start, sent, last = time.perf_counter(), 0, 0
        while sent < total:
            ahead = start + sent / self.rate - time.perf_counter()
            if ahead > 0:
                time.sleep(ahead)
            k = min(chunk, total - sent)
            rows = (np.arange(sent, sent + k) % n).astype(np.int64)
            now = max(last + 1, int(time.time() * 1e6))
            last = now
            ts = np.full(k, now, np.int64)
            offsets = np.arange(n + sent + 1, n + sent + k + 1, dtype=np.int64)
            yield UpdateBatch.edges(self.name, self.src[rows], self.dst[rows], ts, offsets)
            sent += k

    def read(self) -> Iterator[Any]:  # pragma: no cover - the source actor reads batches()
        raise NotImplementedError


def _percentile(ages: np.ndarray, q: float) -> float:
    return float(np.quantile(ages, q)) if len(ages) else float("nan")


def run(
    mode: str,
    rate: float,
    seconds: float,
    shards: int,
    workdir: Path,
    computation: str = "degree histogram",
) -> dict[str, Any]:
    """One paced ingest with the probe of ``computation`` in ``mode``; latency
    percentiles in ms."""
    import chronoray as cr

    cls = PROBES[computation][mode]
    probe = cls(tol=1e-6) if issubclass(cls, LivePageRank) else cls()
    assert (batch_hook(probe) is not None) == (mode == "batches")
    batch = max(64, int(rate * 0.01 / shards))
    with cr.GraphCluster(
        num_shards=shards, log_dir=str(workdir / f"g-{time.monotonic_ns()}"), batch_size=batch
    ) as g:
        live = g.start_computation(probe)
        started = time.perf_counter()
        g.ingest(PacedSource(f"paced-{mode}-{rate:.0f}", rate, seconds), name=f"{mode}-{rate}")
        wall = time.perf_counter() - started
        ages = np.asarray(live.result()["ages"], dtype=np.float64)
        stats = live.stats()
    return {
        "computation": computation,
        "mode": mode,
        "offered_rate": rate,
        "paced_updates": int(rate * seconds),
        "samples": len(ages),
        "batch_size": batch,
        "wall_s": wall,
        "batches": stats["batches"],
        "p50_ms": _percentile(ages, 0.5),
        "p99_ms": _percentile(ages, 0.99),
        "p999_ms": _percentile(ages, 0.999),
        "max_ms": float(ages.max()) if len(ages) else float("nan"),
    }


class EveryExecution(Computation):
    """Does nothing, but needs every execution one by one (``on_change`` alone): beside
    a notification stream, the shards run their columns as they did before streams were
    fed from change batches."""

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        pass


STREAM = "notification stream, 10 vertices"
THROUGHPUT: dict[str, tuple[type[Computation], type[Computation]] | None] = {
    "no live computation": None,
    "degree histogram": (DegreeHistogram, RowHistogram),
    "WCC": (WeaklyConnectedComponents, RowWcc),
    "PageRank (tol 1e-6)": (LivePageRank, RowPageRank),
    STREAM: None,
}


def throughput(name: str, mode: str, copies: int, shards: int, workdir: Path) -> dict[str, Any]:
    """Ingest CollegeMsg x ``copies`` at full speed with computation ``name`` in ``mode``."""
    import chronoray as cr

    classes = THROUGHPUT[name]
    computation = None
    if classes is not None:
        cls = classes[0] if mode == "batches" else classes[1]
        computation = cls(tol=1e-6) if issubclass(cls, LivePageRank) else cls()
        assert (batch_hook(computation) is not None) == (mode == "batches")
    source = RepeatedSource(f"repeated-{time.monotonic_ns()}", copies)
    with cr.GraphCluster(num_shards=shards, log_dir=str(workdir / f"g-{time.monotonic_ns()}")) as g:
        live = None if computation is None else g.start_computation(computation)
        stream = None
        if name == STREAM:
            stream = g.subscribe(ids=list(range(1, 11)), buffer=1_000_000)
            if mode == "rows":
                g.start_computation(EveryExecution())
        started = time.perf_counter()
        g.ingest(source, name="throughput")  # returns once the computation is idle too
        seconds = time.perf_counter() - started
        batches = 0 if live is None else live.stats()["batches"]
        notes = None if stream is None else len(stream.drain())
    return {
        "computation": name,
        "mode": mode,
        "updates": len(source),
        "seconds": seconds,
        "rate": len(source) / seconds,
        "batches": batches,
        "notifications": notes,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--rates", default="20000,100000,200000", help="Offered updates/s.")
    parser.add_argument("--copies", type=int, default=10, help="Throughput: CollegeMsg x N.")
    parser.add_argument("--seconds", type=float, default=4.0, help="Paced part of a run.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    from chronoray.config import Config
    from chronoray.connect import ensure_ray

    ensure_ray(Config.load())
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-live-columns-"))
    runs = []
    try:
        for computation in PROBES:
            for rate in (float(r) for r in args.rates.split(",")):
                for mode in ("rows", "batches"):
                    runs.append(run(mode, rate, args.seconds, args.shards, workdir, computation))
                    print(runs[-1], flush=True)
        rates = []
        for name in THROUGHPUT:
            paired = THROUGHPUT[name] is not None or name == STREAM
            for mode in ("rows", "batches") if paired else ("batches",):
                rates.append(throughput(name, mode, args.copies, args.shards, workdir))
                print(rates[-1], flush=True)
    finally:
        import ray

        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "benchmark": "live_columns",
        "shards": args.shards,
        "seconds": args.seconds,
        "machine": machine(),
        "copies": args.copies,
        "runs": runs,
        "throughput": rates,
    }
    write_results(args.out, "live_columns", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"# Live computations during column ingestion: Ray, {result['shards']} shards",
        "",
        "Age of each update (from leaving the source to the shard's computation taking it"
        " in) while CollegeMsg edges stream in as column batches at a fixed rate for"
        f" {result['seconds']:g} s, after the whole file at full speed (`python -m"
        " bench.live_columns`). `rows`: one change per execution (every live computation"
        " before change batches); `batches`: on change batches. The histogram notes every"
        " update's age; PageRank (net changes) notes, per vertex and batch, the age of the"
        " newest update it took in (`rows`: of each owner half). Shared"
        f" {result['machine']['cpus']}-core VM.",
        "",
        "| computation | offered/s | mode | samples | batches | p50 ms | p99 ms | p99.9 ms |"
        " max ms |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r.get('computation', 'degree histogram')} |"
            f" {r['offered_rate']:,.0f} | {r['mode']} | {r['samples']:,} of"
            f" {r['paced_updates']:,} | {r['batches']:,} | {r['p50_ms']:.1f} |"
            f" {r['p99_ms']:.1f} | {r['p999_ms']:.1f} | {r['max_ms']:.1f} |"
        )
    base = next(r["rate"] for r in result["throughput"] if r["computation"].startswith("no "))
    lines += [
        "",
        f"Throughput: CollegeMsg x {result['copies']} as column batches at full speed into a"
        " running graph, until the graph and the computation are idle.",
        "",
        "| live computation | mode | updates | seconds | updates/s | vs none | batches |"
        " notifications |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["throughput"]:
        lines.append(
            f"| {r['computation']} | {r['mode']} | {r['updates']:,} | {r['seconds']:.2f} |"
            f" {r['rate']:,.0f} | {r['rate'] / base:.2f} | {r['batches']:,} |"
            f" {'' if r['notifications'] is None else format(r['notifications'], ',')} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    # the module's own classes, not __main__'s: Ray pickles those by value, and cloudpickle
    # leaves out a class attribute equal to its base's (BatchPageRankProbe.net_changes)
    from bench.live_columns import main as _main

    _main()
