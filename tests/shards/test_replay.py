"""The log format and its one reader: versions, bounded time cuts, cost flat in degree."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from chronoray.datasets import collegemsg_path
from chronoray.sources import SnapEdgeSource
from chronoray.testing import LocalRuntime
from shards.codec import FORMAT_VERSION, LogFormatError, Manifest, encode_manifest
from shards.core import Batch, ShardCore
from shards.logstore import LogBatch, LogName, MemoryLogStore
from shards.replay import LogReplay, log_rows, read_schema
from snapshot.reconstruct import rebuild_part
from vertex import Update

ROOT = Path(__file__).resolve().parents[2]


def test_a_log_of_another_format_version_is_refused():
    store = MemoryLogStore("format-1")
    old = LogBatch()
    old.put_meta("manifest", encode_manifest(Manifest(1, 0, 1)))
    old.add(LogName.EVENTS, 1, b"an entry of format 1")
    store.append(old)
    with pytest.raises(
        LogFormatError, match=f"format 1; this chronoray reads formats 3-{FORMAT_VERSION}"
    ):
        ShardCore(0, 1, store)
    with pytest.raises(LogFormatError, match="format 1"):
        rebuild_part(store, 0)
    store.close()
    MemoryLogStore.destroy("format-1")


def test_entries_without_a_manifest_are_refused():
    store = MemoryLogStore("no-manifest")
    batch = LogBatch()
    batch.add(LogName.EVENTS, 1, b"something")
    store.append(batch)
    with pytest.raises(LogFormatError, match="no manifest"):
        ShardCore(0, 1, store)
    store.close()
    MemoryLogStore.destroy("no-manifest")


@pytest.fixture(scope="module")
def college_log():
    """CollegeMsg twice (the second copy shifted after the first) in one shard."""
    updates = list(SnapEdgeSource(collegemsg_path()).read())
    t0, t1 = updates[0].ts, updates[-1].ts
    shifted = [Update.add_edge(u.vertex, u.dst, u.ts + t1 - t0 + 1) for u in updates]
    rt = LocalRuntime(1, shard_checkpoint_interval=10**9)
    rt.ingest(updates, source="first")
    rt.ingest(shifted, source="second")
    yield rt, t0, 2 * t1 - t0 + 1
    rt.close()


def test_time_cuts_decode_a_prefix_of_the_log(college_log):
    rt, t_first, t_last = college_log
    store = rt.cores[0].store
    total = rt.cores[0].worker_clock
    decoded = []
    for fraction in (0.1, 0.5, 1.0):
        part = rebuild_part(store, 0, at=t_first + fraction * (t_last - t_first))
        # a cut decodes what it holds plus at most the few blocks where T falls
        assert part.replayed <= part.decoded <= part.replayed + 3_000, fraction
        decoded.append(part.decoded)
    assert decoded[0] < decoded[1] < decoded[2] == total
    before = rebuild_part(store, 0, at=t_first - 1)
    assert before.decoded == 0 and before.vertices == {}


def test_a_time_cut_equals_the_full_replay_filtered_by_time(college_log):
    rt, t_first, t_last = college_log
    store = rt.cores[0].store
    at = t_first + 0.37 * (t_last - t_first)
    cut = LogReplay(store, at=at, in_edges=True).run()
    filtered = LogReplay(store, at=at, checkpoint=False)
    for step in filtered.entries():
        assert step.time <= at
    assert {v: r.snapshot() for v, r in cut.items()} == {
        v: r.snapshot() for v, r in filtered.vertices.items()
    }


def test_every_log_read_goes_through_the_replay_module():
    """Only shards/replay.py decodes or scans logs (shards/codec.py defines the format,
    shards/logstore.py stores bytes -- shards/faults.py wraps such a store --, shards/core.py
    writes; shards/upgrade.py converts a log of the previous format); shards/observe.py does
    not import the core."""
    readers = {"decode_events", "decode_commands", "decode_header", "decode_checkpoint"}
    allowed = {"shards/replay.py", "shards/codec.py", "shards/upgrade.py"}
    stores = allowed | {"shards/logstore.py", "shards/faults.py"}
    offenders = []
    packages = ("shards", "snapshot", "ephemeral", "chronoray", "spark_bridge", "bench", "vertex")
    for path in sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue  # e.g. bench/.envs: the benchmarks' environments of other systems
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            called = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                called = node.func.attr
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called = node.func.id
            if called in readers and name not in allowed:
                offenders.append(f"{name}:{node.lineno} calls {called}")
            if called in ("scan", "floor") and name not in stores:
                offenders.append(f"{name}:{node.lineno} reads a log with .{called}()")
            if name == "shards/observe.py" and isinstance(node, ast.ImportFrom):
                assert node.module != "shards.core", "observe.py imports the core"
    assert offenders == []


def test_log_bytes_and_writes_per_event_do_not_grow_with_degree():
    """A hub's entries log what changed, not the hub: bytes per event stay flat whether
    the hub has 1,000 or 16,000 edges (format 1 rewrote the whole vertex every 64 of its
    executions)."""
    per_event = []
    for degree in (1_000, 16_000):
        store = MemoryLogStore(f"hub-{degree}")
        core = ShardCore(0, 1, store, shard_checkpoint_interval=10**9)
        # every event touches the hub, then a spoke: the hub's edge count keeps growing
        updates = [
            Update.add_edge(0, 1 + i % degree, i).with_origin("s", i + 1) for i in range(degree)
        ]
        size_before = _bytes(store)
        for start in range(0, degree, 500):
            core.handle(Batch.of_updates(updates[start : start + 500]))
            while (batch := core.take_batch(0)) is not None:
                core.ack(0, core.handle(batch).applied)
        last = [  # 1,000 more events on the hub, measured
            Update.add_edge(0, 1 + i, degree + i).with_origin("s", degree + 1 + i)
            for i in range(1_000)
        ]
        measured_from = _bytes(store)
        for start in range(0, 1_000, 500):
            core.handle(Batch.of_updates(last[start : start + 500], prev=degree + start))
            while (batch := core.take_batch(0)) is not None:
                core.ack(0, core.handle(batch).applied)
        assert len(core.vertices[0].out_edges) == degree and size_before >= 0
        per_event.append((_bytes(store) - measured_from) / 1_000)
        store.close()
        MemoryLogStore.destroy(f"hub-{degree}")
    assert per_event[1] < 1.3 * per_event[0], per_event
    assert per_event[1] < 400, per_event


def _bytes(store: MemoryLogStore) -> int:
    return sum(len(v) for name in LogName for _, v in store.scan(name))


def test_shard_checkpoints_pay_for_themselves():
    """A checkpoint is written once at least the interval and at least as many entries as
    it holds records were logged since the last one."""
    rt = LocalRuntime(1, shard_checkpoint_interval=1_000)
    rt.ingest(SnapEdgeSource(collegemsg_path()).read())
    core = rt.cores[0]
    records = len(core.vertices) + sum(
        len(r.out_edges) + len(r.in_edges) for r in core.vertices.values()
    )
    starts = [0] + [wc for wc, _ in core.checkpoints]
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert len(gaps) >= 3 and min(gaps) >= 1_000
    assert gaps[-1] >= 0.5 * records  # late ones, with a big shard, are further apart
    assert core.worker_clock - core.checkpoints[-1][0] < max(1_000, records) + 2_000
    rt.close()


def test_inspect_rows_and_schema():
    rt = LocalRuntime(1)
    rt.ingest([Update.add_edge(1, 2, 5.0, weight=2), Update.add_vertex("x", 6.0, tag=[1])])
    store = rt.cores[0].store
    events = list(log_rows(store, "events"))
    assert [e["wc"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["created"] == "TemporalVertex" and events[0]["edges"][0][0] == 2
    assert events[0]["sends"] == []  # stream edges: the target applies the update itself
    assert events[1]["vertex"] == 2 and events[1]["in"] == (1, events[0]["edges"][0][1])
    commands = list(log_rows(store, "commands"))
    assert commands[0]["kind"] == "update" and commands[0]["payload"][0] == "add_edge"
    assert commands[1]["kind"] == "in_edge" and commands[1]["vertex"] == 2
    assert [h["first"] for h in log_rows(store, "clocks")][0] == 1
    schema = read_schema(store)
    assert schema.ids == "str" and schema.edge["weight"] == "int"
    assert schema.vertex["tag"] == "json" and schema.vertex["last_ts"] == "float"
    assert math.isinf(LogReplay(store).at)
    rt.close()
