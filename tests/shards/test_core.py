"""ShardCore semantics, driven in-process (no Ray): real data against file oracles,
exactly-once channels, crash recovery from the log, failing behaviors, clocks."""

from __future__ import annotations

from typing import Any

import pytest

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import BitcoinCsvSource, SnapEdgeSource
from chronoray.testing import LocalRuntime, pair_counts
from shards.codec import K_IN_EDGE
from shards.core import Batch, ShardCore, VertexNotFound
from shards.logstore import MemoryLogStore
from shards.replay import LogReplay, headers, read_commands
from shards.routing import shard_of
from vertex import Context, TemporalVertex, Update, Vertex, VertexTypes


def _college_updates() -> list[Update]:
    return list(SnapEdgeSource(collegemsg_path()).read())


@pytest.fixture(scope="module")
def college_updates() -> list[Update]:
    return _college_updates()


def _check_temporal(rt: LocalRuntime, oracle: dict[tuple[int, int], list[tuple[float, float]]]):
    edges = rt.edges()
    assert {k: v["count"] for k, v in edges.items()} == dict(pair_counts(oracle))
    for pair, events in oracle.items():
        props = edges[pair]
        assert props["first_ts"] == min(t for t, _ in events)
        assert props["last_ts"] == max(t for t, _ in events)
    vertices = {v for pair in oracle for v in pair}
    assert sum(len(c.vertices) for c in rt.cores) == len(vertices)
    out_deg = {v: 0 for v in vertices}
    in_deg = {v: 0 for v in vertices}
    for src, dst in oracle:
        out_deg[src] += 1
        in_deg[dst] += 1
    for v in vertices:
        record = rt.vertex(v)
        assert record["state"]["out_degree"] == out_deg[v] == len(record["out_edges"])
        assert record["state"]["in_degree"] == in_deg[v] == len(record["in_edges"])


@pytest.mark.parametrize("shards", [1, 2, 4])
def test_collegemsg_equals_file(college, college_updates, shards):
    rt = LocalRuntime(shards)
    rt.ingest(college_updates)
    assert sum(len(c.vertices) for c in rt.cores) == 1899
    assert len(rt.edges()) == 20296
    _check_temporal(rt, college)
    rt.close()


def test_bitcoin_ratings_and_fractional_times(bitcoin):
    rt = LocalRuntime(2)
    rt.ingest(BitcoinCsvSource(bitcoinotc_path()).read())
    edges = rt.edges()
    assert sum(len(c.vertices) for c in rt.cores) == 5881
    assert len(edges) == 35592
    for pair, [(ts, rating)] in bitcoin.items():
        assert edges[pair]["weight"] == rating
        assert edges[pair]["first_ts"] == ts  # fractional seconds kept exactly
    rt.close()


def test_resent_batch_is_applied_once():
    core = ShardCore(0, 1, MemoryLogStore("resend"))
    updates = [Update.add_edge(1, 2, t).with_origin("s", t) for t in range(1, 11)]
    first = core.handle(Batch.of_updates(updates[:6]))
    assert first.executed == 6 and first.applied == 6
    again = core.handle(Batch.of_updates(updates[:6]))  # a resend after a lost ack
    assert again.executed == 0 and again.duplicates == 6
    overlap = core.handle(Batch.of_updates(updates[3:], prev=0))
    assert overlap.executed == 4 and overlap.duplicates == 3
    while (batch := core.take_batch(0)) is not None:
        core.ack(0, core.handle(batch).applied)
    assert core.vertex(1)["out_edges"][2]["count"] == 10
    assert core.vertex(2)["in_edges"][1]["count"] == 10
    core.store.close()
    MemoryLogStore.destroy("resend")


def test_out_of_order_batches_wait_for_their_predecessor():
    core = ShardCore(0, 1, None)
    u = [Update.add_edge(1, 2, t).with_origin("s", t) for t in (1, 2, 3, 4)]
    late = core.handle(Batch.of_updates(u[2:], prev=2))
    assert late.buffered and late.applied == 0
    early = core.handle(Batch.of_updates(u[:2], prev=0))
    assert early.executed == 4 and early.applied == 4


def test_unknown_vertex_is_not_found():
    core = ShardCore(0, 1, None)
    with pytest.raises(VertexNotFound, match="vertex 42 not found"):
        core.vertex(42)


def _replayed(rt: LocalRuntime) -> list[dict[Any, Any]]:
    return [{v: r.snapshot() for v, r in core.vertices.items()} for core in rt.cores]


@pytest.mark.parametrize("shard_checkpoints", [100_000, 3_000])
def test_recovery_rebuilds_the_same_shards(college_updates, shard_checkpoints):
    rt = LocalRuntime(3, shard_checkpoint_interval=shard_checkpoints)
    rt.ingest(college_updates[:20000])
    before = _replayed(rt)
    clocks = [c.worker_clock for c in rt.cores]
    for shard in range(3):
        rt.crash(shard)
    assert _replayed(rt) == before
    assert [c.worker_clock for c in rt.cores] == clocks
    rt.close()


class OwnerTemporal(TemporalVertex):
    """The temporal vertex deciding its edges in its own code: edges have owner notices."""

    def on_edge_event(self, ctx: Context, kind: Any, dst: Any, ts: float, props: Any) -> None:
        super().on_edge_event(ctx, kind, dst, ts, props)


def test_crash_with_undelivered_messages_loses_nothing(college, college_updates):
    """A shard crashes after logging a batch but before its messages were delivered; and a
    receiver crashes after applying messages but before the sender saw the ack."""
    rt = LocalRuntime(2, VertexTypes([OwnerTemporal]), batch_size=500)
    half = len(college_updates) // 2
    rt.ingest(college_updates[:half])
    by_shard: list[list[Update]] = [[], []]
    for u in college_updates[half:]:
        by_shard[shard_of(u.vertex, 2)].append(u)
    # shard 0 logs its part (its edge notices wait in its outbox) and crashes
    applied = rt.cores[0].applied.get("src:iterable", 0)
    rt.cores[0].handle(Batch.of_updates(by_shard[0], prev=applied))
    assert rt.cores[0].pending(1) > 0
    rt.crash(0)
    assert rt.cores[0].pending(1) > 0  # rebuilt from the log
    # shard 1 applies what shard 0 sends, then crashes before shard 0 sees the ack
    batch = rt.cores[0].take_batch(1)
    rt.cores[1].handle(batch)
    rt.crash(1)
    rt.cores[0].rewind(1)
    rt.run_until_quiet()
    rt.ingest(college_updates)  # the source resends everything: duplicates are skipped
    _check_temporal(rt, college)
    rt.close()


class Picky(Vertex):
    """Rejects incoming edges with a negative weight; fails on messages saying "boom"."""

    def on_create(self, ctx: Context, props: Any) -> None:
        ctx.state["seen"] = 0

    def on_add_edge(self, ctx: Context, src: Any, props: Any) -> bool:
        return props.get("weight", 0) >= 0

    def on_message(self, ctx: Context, msg: Any) -> None:
        ctx.state["seen"] += 1
        if "to" in msg:
            ctx.send(msg["to"], {"hop": 1})
        if msg.get("boom"):
            raise RuntimeError("boom")


def test_rejected_edges_are_removed_at_the_source():
    rt = LocalRuntime(2, VertexTypes([Picky]))
    rt.ingest([Update.add_edge(1, 2, 1, weight=5), Update.add_edge(3, 2, 2, weight=-1)])
    assert rt.edges().keys() == {(1, 2)}
    assert set(rt.vertex(2)["in_edges"]) == {1}
    rt.close()


def test_failing_behavior_applies_nothing_and_is_logged():
    rt = LocalRuntime(1, VertexTypes([Picky]))
    rt.ingest([Update.message(1, 1, to=2), Update.message(1, 2, to=3, boom=True)])
    core = rt.cores[0]
    assert rt.vertex(1)["state"]["seen"] == 1  # the failed execution changed nothing
    assert 3 not in core.vertices and 2 in core.vertices  # its send never happened
    assert core.errors == 1
    failed = [s for s in LogReplay(core.store, checkpoint=False).entries() if s.error]
    assert len(failed) == 1 and failed[0].error == "RuntimeError: boom"
    assert failed[0].edges == () and core.pending(0) == 0  # and its send was never logged
    rt.ingest([Update.message(1, 3, to=2)], source="later")  # the shard keeps running
    assert rt.vertex(1)["state"]["seen"] == 2
    rt.crash(0)
    assert rt.vertex(1)["state"]["seen"] == 2 and rt.cores[0].errors == 1
    rt.close()


@pytest.mark.parametrize("owner", [False, True], ids=["stream edges", "owner edges"])
def test_log_entries_and_clocks(owner):
    rt = LocalRuntime(2, VertexTypes([OwnerTemporal]) if owner else None)
    rt.ingest([Update.add_edge(1, 2, t) for t in range(1, 8)])
    src = rt.cores[shard_of(1, 2)]
    dst = rt.cores[shard_of(2, 2)]
    steps = list(LogReplay(src.store, checkpoint=False).entries())
    mine = [s for s in steps if s.vertex == 1]
    assert [s.clock for s in mine] == list(range(1, 8))
    assert [s.created for s in mine] == [True] + [False] * 6
    assert [s.time for s in mine] == list(range(1, 8))
    assert [s.wc for s in steps] == list(range(1, len(steps) + 1))
    commands = [c for c in read_commands(src.store) if c.vertex == 1]
    assert [(c.channel, c.position) for c in commands] == [("src:iterable", t) for t in range(1, 8)]
    assert [c.payload[:4] for c in commands] == [("add_edge", 1, t, 2) for t in range(1, 8)]
    received = [c for c in read_commands(dst.store) if c.vertex == 2]
    times = [s.time for s in LogReplay(dst.store, checkpoint=False).entries() if s.vertex == 2]
    assert times == list(range(1, 8))
    if not owner:  # the target's half of each update comes from the source, in order
        assert [(c.channel, c.position, c.kind) for c in received] == [
            ("src:iterable", t, K_IN_EDGE) for t in range(1, 8)
        ]
        assert [c.payload[:4] for c in received] == [("add_edge", 1, t, 2) for t in range(1, 8)]
    elif src is not dst:
        # the receiver's vector clock knows the sender's worker clock after the messages
        vectors = [v for h in headers(dst.store) for _, v in h.vectors]
        assert vectors and vectors[-1][src.shard_id] >= 1
        assert all(c.channel == f"shard:{src.shard_id}" for c in received)
    rt.close()


def test_one_atomic_write_per_batch():
    class Counting(MemoryLogStore):
        appends = 0

        def append(self, batch):  # type: ignore[override]
            Counting.appends += 1
            super().append(batch)

    core = ShardCore(0, 1, Counting("atomic"))
    written = Counting.appends
    core.handle(Batch.of_updates([Update.add_edge(1, 2, t).with_origin("s", t) for t in (1, 2, 3)]))
    assert Counting.appends == written + 1
    core.store.close()
    MemoryLogStore.destroy("atomic")


def test_vertex_types_and_spawn_and_delete():
    class Parent(Vertex):
        def on_message(self, ctx: Context, msg: Any) -> None:
            ctx.spawn(msg["child"], "TemporalVertex", label="kid")
            ctx.add_edge(msg["child"], kind="parent")

    rt = LocalRuntime(2, VertexTypes([TemporalVertex, Parent]))
    rt.ingest([Update.add_vertex("p", 1, "Parent"), Update.message("p", 2, child="c")])
    assert rt.vertex("p")["type"] == "Parent"
    assert rt.vertex("c")["state"]["label"] == "kid"
    assert rt.vertex("c")["in_edges"] == {"p": {"kind": "parent"}}
    rt.ingest([Update.remove_vertex("c", 3)], source="later")
    with pytest.raises(VertexNotFound):
        rt.vertex("c")
    assert rt.vertex("p")["out_edges"] == {}
    rt.close()


def test_shard_refuses_a_foreign_log():
    store = MemoryLogStore("foreign")
    ShardCore(0, 2, store)
    store.close()
    again = MemoryLogStore("foreign")
    with pytest.raises(ValueError, match="shard 0 of 2"):
        ShardCore(1, 2, again)
    again.close()
    MemoryLogStore.destroy("foreign")
