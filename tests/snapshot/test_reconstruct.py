"""Reconstruction of past graphs from shard logs, against the file oracles (no Ray)."""

from __future__ import annotations

import random

import pytest

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import BitcoinCsvSource, SnapEdgeSource
from chronoray.testing import LocalRuntime, TokenVertex, causality_violations, pair_counts_between
from shards.codec import Schema
from shards.replay import read_schema
from snapshot.reconstruct import consistent_bound, part_columns, part_rows, rebuild_part
from snapshot.retro import vertex_history, vertex_state_at
from snapshot.tables import column_tables, snapshot_tables
from vertex import VertexTypes


def _times(oracle) -> list[float]:
    return sorted({ts for events in oracle.values() for ts, _ in events})


def _probe_times(oracle, count: int, seed: int) -> list[float]:
    """First and last timestamp, one before the first, points between two events, and
    a random sample of event times."""
    times = _times(oracle)
    rng = random.Random(seed)
    probes = [times[0] - 1, times[0], times[-1], times[-1] + 1000]
    for i in rng.sample(range(len(times) - 1), count):
        probes.append(times[i])
        probes.append((times[i] + times[i + 1]) / 2)  # strictly between two events
    return probes


def _edges_at(rt: LocalRuntime, **cut) -> tuple[list[dict], list[dict]]:
    vertices, edges = [], []
    for core in rt.cores:
        part = rebuild_part(core.store, core.shard_id, **cut)
        v, e = part_rows(part)
        vertices += v
        edges += e
    return vertices, edges


@pytest.fixture(scope="module", params=[1, 2, 4])
def college_graph(request):
    rt = LocalRuntime(request.param, shard_checkpoint_interval=7_000)
    rt.ingest(SnapEdgeSource(collegemsg_path()).read(), source="college")
    yield rt
    rt.close()


def test_time_cuts_equal_the_file(college_graph, college):
    rt = college_graph
    assert any(core.checkpoints for core in rt.cores)  # the cuts start from checkpoints
    for t in _probe_times(college, 8, seed=len(rt.cores)):
        vertices, edges = _edges_at(rt, at=t)
        expected = pair_counts_between(college, t)
        assert {(e["src"], e["dst"]): e["count"] for e in edges} == expected, t
        # (vertex set: see the note on event time below)
        for e in edges:
            mine = [ts for ts, _ in college[(e["src"], e["dst"])] if ts <= t]
            assert (e["first_ts"], e["last_ts"]) == (min(mine), max(mine))


def test_windows_equal_the_file(college_graph, college):
    times = _times(college)
    rng = random.Random(7)
    windows = [(times[0], times[-1]), (times[0] - 5, times[100])]
    for _ in range(4):
        a, b = sorted(rng.sample(times, 2))
        windows.append((a, b))
    for t0, t1 in windows:
        _, edges = _edges_at(college_graph, at=t1, since=t0)
        assert {(e["src"], e["dst"]): e["window_count"] for e in edges} == pair_counts_between(
            college, t1, t0
        ), (t0, t1)


@pytest.mark.parametrize("shards", [1, 2, 4])
def test_bitcoin_time_cuts_and_windows_keep_ratings(bitcoin, shards):
    rt = LocalRuntime(shards, shard_checkpoint_interval=10_000)
    rt.ingest(BitcoinCsvSource(bitcoinotc_path()).read(), source="btc")
    probes = _probe_times(bitcoin, 5, seed=shards)
    for t in probes:
        _, edges = _edges_at(rt, at=t)
        expected = {p: ev[0] for p, ev in bitcoin.items() if ev[0][0] <= t}
        assert {(e["src"], e["dst"]): (e["first_ts"], e["weight"]) for e in edges} == expected
    t0, t1 = sorted(probes[4:6])
    _, edges = _edges_at(rt, at=t1, since=t0)
    assert {(e["src"], e["dst"]): e["window_count"] for e in edges} == pair_counts_between(
        bitcoin, t1, t0
    )
    rt.close()


def test_past_snapshots_never_change(college):
    updates = list(SnapEdgeSource(collegemsg_path()).read())
    rt = LocalRuntime(2, shard_checkpoint_interval=5_000)
    rt.ingest(updates[:30000], source="college")
    t = updates[20000].ts
    before = _edges_at(rt, at=t)
    rt.ingest(updates, source="college")  # the rest arrives (the first part is skipped)
    assert _edges_at(rt, at=t) == before
    rt.close()


@pytest.fixture(scope="module")
def token_graph():
    rt = LocalRuntime(3, VertexTypes([TokenVertex]), shard_checkpoint_interval=4_000)
    rt.ingest(SnapEdgeSource(collegemsg_path()).read(), source="college")
    yield rt
    rt.close()


def test_clock_cuts_are_consistent(token_graph):
    rt = token_graph
    rng = random.Random(11)
    last = [core.worker_clock for core in rt.cores]
    inconsistent_raw = 0
    for _ in range(12):
        clock = tuple(rng.randrange(0, wc + 1) for wc in last)
        raw = []
        shrunk = []
        for core in rt.cores:
            bound = consistent_bound(core.store, core.shard_id, clock)
            assert bound <= clock[core.shard_id]
            shrunk += part_rows(rebuild_part(core.store, core.shard_id, bound=bound))[0]
            raw += part_rows(rebuild_part(core.store, core.shard_id, bound=clock[core.shard_id]))[0]
        assert causality_violations(shrunk) == []
        inconsistent_raw += bool(causality_violations(raw))
    assert inconsistent_raw > 0  # the checker does catch an arbitrary (unshrunk) prefix cut


def test_time_cuts_are_consistent(token_graph, college):
    for t in _probe_times(college, 6, seed=5):
        vertices, _ = _edges_at(token_graph, at=t)
        assert causality_violations(vertices) == []


def test_vertex_state_and_history(college_graph, college):
    rt = college_graph
    core = next(c for c in rt.cores if 9 in c.vertices)
    times = sorted(ts for (s, _), events in college.items() if s == 9 for ts, _ in events)
    t = times[len(times) // 2]
    state = vertex_state_at(core.store, 9, at=t)
    assert state is not None
    assert state["state"]["sent"] == sum(1 for x in times if x <= t)
    assert vertex_state_at(core.store, 9, at=times[0] - 1) is None
    history = vertex_history(core.store, 9, times[10], times[20])
    sent = [h["state"]["sent"] for h in history if h["time"] >= times[10]]
    assert sent == sorted(sent) and sent[-1] == sum(1 for x in times if x <= times[20])
    assert history[0]["time"] <= times[10]  # the state it had when the window opened


def test_every_cut_has_the_graph_schema(bitcoin):
    """Tables of an empty cut, an early one and the last one have the same columns and
    types (the schema the logs recorded), across shards too."""
    rt = LocalRuntime(2)
    rt.ingest(BitcoinCsvSource(bitcoinotc_path()).read())
    schema = Schema.empty()
    for core in rt.cores:
        schema = schema.merge(read_schema(core.store))
    assert schema.edge["weight"] == "int" and schema.vertex["last_ts"] == "float"
    times = sorted({ts for events in bitcoin.values() for ts, _ in events})
    shapes = set()
    for t in (times[0] - 1, times[0], times[len(times) // 2], times[-1]):
        vertices, edges = _edges_at(rt, at=t)
        v, e = snapshot_tables(vertices, edges, schema)
        assert e.num_rows == len(pair_counts_between(bitcoin, t))
        shapes.add((v.schema, e.schema))
    assert len(shapes) == 1
    rt.close()


def _schema(rt: LocalRuntime) -> Schema:
    schema = Schema.empty()
    for core in rt.cores:
        schema = schema.merge(read_schema(core.store))
    return schema


def test_column_tables_are_the_row_tables(bitcoin):
    """A part's tables gathered a column at a time are the ones its rows give, cell for
    cell and type for type: time cuts, windows, an empty cut."""
    rt = LocalRuntime(2, shard_checkpoint_interval=10_000)
    rt.ingest(BitcoinCsvSource(bitcoinotc_path()).read())
    schema = _schema(rt)
    times = sorted({ts for events in bitcoin.values() for ts, _ in events})
    cuts = [{"at": t} for t in (times[0] - 1, times[len(times) // 3], times[-1])]
    cuts += [{"at": times[-100], "since": times[100]}, {"at": times[5], "since": times[0] - 9}]
    for cut in cuts:
        windowed = "since" in cut
        for core in rt.cores:
            part = rebuild_part(core.store, core.shard_id, **cut)
            columns = part_columns(part, schema)
            assert columns is not None, cut
            by_columns = column_tables(*columns, schema, windowed=windowed)
            by_rows = snapshot_tables(*part_rows(part), schema, windowed=windowed)
            for mine, theirs in zip(by_columns, by_rows, strict=True):
                assert mine.schema == theirs.schema and mine.equals(theirs), cut
    rt.close()


def test_columns_leave_to_rows_what_the_schema_does_not_type(college_graph):
    """A key the schema lacks, an id it types as int that is not, two keys in one column:
    no columns (the rows widen the schema)."""
    core = college_graph.cores[0]
    part = rebuild_part(core.store, core.shard_id)
    schema = read_schema(core.store)
    assert part_columns(part, schema) is not None
    lacking = Schema(schema.ids, {}, schema.edge)
    clashing = Schema(schema.ids, schema.vertex | {"id": "int", "state_id": "int"}, schema.edge)
    windowed = Schema(schema.ids, schema.vertex, schema.edge | {"window_count": "int"})
    for other in (lacking, clashing, windowed):
        assert part_columns(part, other) is None, other
    first = next(iter(part.vertices))
    part.vertices = {str(first): part.vertices[first]}  # a copy: the graph is not touched
    assert part_columns(part, schema) is None
