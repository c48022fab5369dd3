"""Behaviour common to both runtimes, run against each from one fixture (as Pykka runs one
suite over its runtimes): ``GraphCluster(runtime="local")`` and ``runtime="ray"``, through
the same public methods, so a divergence fails a test. Ingest against the file, event
time (sorting, lateness, several sources, an idle source), time cuts at ``T``, at a clock
and over a window, live computations, recovery after a crash; and one scripted
disorder-and-idle scenario fed to both, every cut compared between them and with the
file."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.protocol import Graph
from chronoray.testing import kill_shard
from shards.logstore import LogName
from shards.protocol import ShardStats

Row = tuple[int, int, float]
RUNTIMES = ["local", pytest.param("ray", marks=pytest.mark.ray)]


@pytest.fixture(params=RUNTIMES)
def runtime(request) -> str:
    if request.param == "ray":
        request.getfixturevalue("ray_session")
    return request.param


@pytest.fixture
def graph(runtime, tmp_path) -> Iterator[cr.GraphCluster]:
    """A 2-shard graph on one runtime."""
    with cr.GraphCluster(runtime=runtime, num_shards=2, log_dir=str(tmp_path / "g")) as g:
        yield g


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    """The first 3,000 lines of CollegeMsg, in file (time) order."""
    out = []
    for line in collegemsg_path().read_text().splitlines()[:3000]:
        s, d, t = line.split()
        out.append((int(s), int(d), float(t)))
    return out


def _updates(rows: list[Row]) -> list[cr.Update]:
    return [cr.Update.add_edge(s, d, t) for s, d, t in rows]


def _write(path: Path, rows: list[Row]) -> Path:
    path.write_text("".join(f"{s} {d} {int(t)}\n" for s, d, t in rows))
    return path


def _times(rows: list[Row], n: int) -> list[float]:
    ts = sorted(t for _, _, t in rows)
    return [ts[0] - 1] + [ts[(len(ts) - 1) * i // (n - 1)] for i in range(n)]


def _cut(graph: cr.GraphCluster, **at: Any) -> Counter:
    _, edges = graph.snapshot(**at).to_pandas()
    pairs = zip(edges["src"], edges["dst"], strict=True)
    return Counter(dict(zip(pairs, edges["count"], strict=True)))


def _check_cuts(graph: cr.GraphCluster, rows: list[Row], times: list[float]) -> None:
    for at in times:
        assert _cut(graph, at=at) == Counter((s, d) for s, d, t in rows if t <= at), at


def test_both_runtimes_are_graphs_with_the_same_types(graph, rows):
    assert isinstance(graph, Graph) and graph.runtime in ("local", "ray")
    report = graph.ingest(_updates(rows[:100]), name="first")
    assert isinstance(report, cr.IngestReport) and report.updates == 100
    stats = graph.stats()
    assert all(isinstance(s, ShardStats) for s in stats.shards)
    assert stats.sources["first"]["updates"] == 100
    src, dst, props = next(iter(graph.edges()))
    assert isinstance(props, dict) and "count" in props
    jobs = graph.ingest([_updates(rows[100:200]), _updates(rows[200:300])], wait=False)
    assert all(isinstance(j, cr.IngestJob) for j in jobs)
    assert sum(j.wait().updates for j in jobs) == 200


def test_ingest_matches_the_file(graph, rows, tmp_path):
    path = _write(tmp_path / "college.txt", rows)
    report = graph.ingest(cr.SnapEdgeSource(path), cr.IngestOptions(progress=False))
    assert report.updates == len(rows)
    want = Counter((s, d) for s, d, _ in rows)
    assert {(s, d): p["count"] for s, d, p in graph.edges()} == want
    stats = graph.stats()
    assert (stats.vertices, stats.edges) == (len({v for pair in want for v in pair}), len(want))
    assert graph.ingest(cr.SnapEdgeSource(path)).skipped == len(rows)  # again: a no-op
    with pytest.raises(cr.VertexNotFound):
        graph.vertex(10**9)


def test_an_unsorted_file_is_refused_before_anything_then_sorted(graph, rows, tmp_path):
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    path = _write(tmp_path / "shuffled.txt", shuffled)
    with pytest.raises(cr.OutOfOrder, match="goes back from"):
        graph.ingest(cr.SnapEdgeSource(path))
    assert graph.stats().edges == 0
    graph.ingest(cr.SnapEdgeSource(path), sort=True)
    _check_cuts(graph, rows, _times(rows, 4))


def test_bounded_disorder_within_the_lateness_is_exact_and_later_is_rejected(graph, rows, tmp_path):
    rng = random.Random(5)
    displaced = sorted(rows, key=lambda r: r[2] + rng.uniform(0, 7200))
    rejects = tmp_path / "late.tsv"
    options = cr.IngestOptions(allowed_lateness=1800, rejects=rejects)
    report = graph.ingest(cr.SnapEdgeSource(_write(tmp_path / "d.txt", displaced)), options)
    late, latest = [], float("-inf")
    for line, (_, _, t) in enumerate(displaced, start=1):
        if t < latest - 1800:
            late.append(line)
        latest = max(latest, t)
    assert late and report.late_rejected == len(late) and report.out_of_order > 0
    assert [int(r.split("\t")[1]) for r in rejects.read_text().splitlines()] == late
    kept = [r for i, r in enumerate(displaced, start=1) if i not in set(late)]
    _check_cuts(graph, kept, _times(kept, 3))


def test_two_sources_are_merged_by_event_time(graph, rows, tmp_path):
    odd = _write(tmp_path / "odd.txt", rows[0::2])
    even = _write(tmp_path / "even.txt", rows[1::2])
    reports = graph.ingest([cr.SnapEdgeSource(odd), cr.SnapEdgeSource(even)])
    assert sorted(r.updates for r in reports) == [len(rows) // 2, len(rows) // 2]
    _check_cuts(graph, rows, _times(rows, 5))


def test_cuts_at_a_clock_and_over_a_window(graph, rows):
    graph.ingest(_updates(rows))
    now = graph.snapshot()
    assert _cut(graph, clock=now.meta.cut) == Counter((s, d) for s, d, _ in rows)
    t0, t1 = rows[1000][2], rows[2000][2]
    _, edges = graph.snapshot(window=(t0, t1)).to_pandas()
    inside = Counter((s, d) for s, d, t in rows if t0 <= t <= t1)
    pairs = zip(edges["src"], edges["dst"], strict=True)
    assert dict(zip(pairs, edges["window_count"], strict=True)) == inside
    first = rows[0]
    assert first[1] in graph.vertex_state(first[0], at=first[2])["out_edges"]
    history = graph.history(first[0])
    assert history[-1]["state"] == graph.vertex(first[0])["state"]


def test_live_computation_and_subscription(graph, rows):
    histogram = graph.start_computation(cr.DegreeHistogram())
    sub = graph.subscribe(ids=[rows[0][0]])
    graph.ingest(_updates(rows))
    graph.wait_idle()
    pairs = {(s, d) for s, d, _ in rows}
    vertices = {v for pair in pairs for v in pair}
    result = histogram.result()["out"]
    assert sum(result.values()) == len(vertices)
    assert result.get(0, 0) == len(vertices - {s for s, _ in pairs})
    items = sub.drain()
    assert items and items[-1].state == graph.vertex(rows[0][0])["state"]
    sub.close()
    histogram.stop()
    executions = cr.replay(graph, lambda n, command, state: n + 1, 0)
    logged = graph.read_logs(lambda store: store.last_seq(LogName.EVENTS), {0: (), 1: ()})
    assert sum(executions.to_dict().values()) == sum(logged.values())


def test_a_crashed_shard_recovers_and_every_cut_stays_exact(graph, rows):
    graph.ingest(_updates(rows[:1500]), name="college")
    kill_shard(graph, 0)
    graph.ingest(_updates(rows), name="college")  # the same source again: the rest only
    assert {(s, d): p["count"] for s, d, p in graph.edges()} == Counter((s, d) for s, d, _ in rows)
    _check_cuts(graph, rows, _times(rows, 4))


def _watermark(graph: cr.GraphCluster, source: str) -> float:
    return float(graph.status().sources.get(source, {}).get("watermark", float("-inf")))


def _scenario(graph: cr.GraphCluster, rows: list[Row]) -> list[cr.IngestReport]:
    """Two sources over the same time span: ``a`` out of order by up to an hour (within its
    lateness), ``b`` in order but idle in the middle -- long enough that its watermark
    catches up with ``a``'s promise -- and then reading one update far behind it (late:
    rejected). ``a`` waits meanwhile, reading nothing, so nothing else of ``b`` is late;
    the outcome is the same on any runtime and any timing."""
    rng = random.Random(11)
    a_rows = sorted(rows[0::2], key=lambda r: r[2] + rng.uniform(0, 3600))
    b_rows = rows[1::2]
    x = rows[len(rows) // 2][2]
    a_first = [r for r in a_rows if r[2] <= x + 3600]
    a_rest = [r for r in a_rows if r[2] > x + 3600]
    held = max(r[2] for r in a_first) - 3600  # a's promise while it waits
    resumed: list[bool] = []
    going: list[bool] = []  # a read again: b may run ahead without a being idle meanwhile

    def a() -> Iterator[cr.Update | None]:
        yield from _updates(a_first)
        while not resumed:
            time.sleep(0.01)
            yield None
        yield from _updates(a_rest[:1])
        going.append(True)
        yield from _updates(a_rest[1:])

    def b() -> Iterator[cr.Update | None]:
        yield from _updates([r for r in b_rows if r[2] <= x])
        while _watermark(graph, "b") < held:  # idle until it timed out and caught up
            time.sleep(0.01)
            yield None
        resumed.append(True)
        yield cr.Update.add_edge(rows[0][0], rows[0][1], rows[0][2] - 10)  # late
        while not going:
            time.sleep(0.01)
            yield None
        yield from _updates([r for r in b_rows if r[2] > x])

    options = cr.IngestOptions(allowed_lateness=3600, idle_timeout=0.3, in_driver=True)
    items = [cr.IterableSource(a(), "a"), cr.IterableSource(b(), "b")]
    reports: list[cr.IngestReport] = graph.ingest(items, options)
    return reports


def test_one_disorder_and_idle_scenario_gives_the_same_cuts_on_both_runtimes(
    rows, tmp_path, request
):
    request.getfixturevalue("ray_session")
    cuts: dict[str, list[Counter]] = {}
    times = _times(rows, 12)
    for runtime in ("local", "ray"):
        config = {"num_shards": 3, "batch_size": 1, "log_dir": str(tmp_path / runtime)}
        with cr.GraphCluster(runtime=runtime, **config) as g:  # type: ignore[arg-type]
            reports = {r.source: r for r in _scenario(g, rows[:1200])}
            assert reports["b"].late_rejected == 1 and reports["a"].late_rejected == 0
            assert reports["a"].out_of_order > 0
            cuts[runtime] = [_cut(g, at=t) for t in times]
    assert cuts["local"] == cuts["ray"]
    want = [Counter((s, d) for s, d, t in rows[:1200] if t <= at) for at in times]
    assert cuts["local"] == want


def _logged(graph: cr.GraphCluster) -> int:
    return sum(s.worker_clock for s in graph.stats().shards)


def _slow_source(graph: cr.GraphCluster, rows: list[Row], seen: list[int], idle: bool) -> Any:
    """20 updates, then nothing to read -- yielding ``None`` (``idle``) or blocked in its
    read -- until the graph logged them (at most a minute), then 20 more."""
    yield from _updates(rows[:20])
    deadline = time.monotonic() + 60
    while _logged(graph) == 0 and time.monotonic() < deadline:
        if idle:
            yield None
        time.sleep(0.01)
    seen.append(_logged(graph))
    yield from _updates(rows[20:40])


def test_a_slow_sources_updates_leave_after_the_linger_not_a_full_batch(runtime, rows, tmp_path):
    """A batch leaves when full or once its first update waited ``batch_linger``: a
    source with nothing to read for a while has what it read applied meanwhile."""
    log_dir = str(tmp_path / "g")
    with cr.GraphCluster(
        runtime=runtime, num_shards=2, log_dir=log_dir, batch_size=10_000, batch_linger=0.05
    ) as g:
        seen: list[int] = []
        g.ingest(_slow_source(g, rows, seen, idle=True))
        assert seen[0] > 0
        assert _cut(g, at=rows[39][2]) == Counter((s, d) for s, d, _ in rows[:40])


@pytest.mark.ray
def test_on_ray_a_source_blocked_in_its_read_has_what_it_read_applied(ray_session, rows, tmp_path):
    """The pump's watchdog sends what waited the linger while the source's read blocks."""
    log_dir = str(tmp_path / "g")
    with cr.GraphCluster(num_shards=2, log_dir=log_dir, batch_size=10_000, batch_linger=0.05) as g:
        seen: list[int] = []
        g.ingest(_slow_source(g, rows, seen, idle=False))
        assert seen[0] > 0
        assert _cut(g, at=rows[39][2]) == Counter((s, d) for s, d, _ in rows[:40])
