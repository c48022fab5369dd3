"""Stream messages as columns (:class:`~shards.codec.MessageRun`), from a list's runs of
``Update.message`` (:meth:`~chronoray.sources.IterableSource.batches`) through the feed and
the shard to the commands log, mean exactly what the row path means: a list's runs unroll
to the updates ``records()`` gives (payloads that do not fit one Arrow column each stay
rows); a run's items are the row path's messages and its logged form decodes to the same
entries; a graph of a batch class, of a per-message class and of the built-in class gets,
block by block, the same events and commands logs and the same cuts as from rows; resent
and duplicate columns apply once; behind a gate of two sources the columns fall back and
stay exact; a shard crashed between message batches recovers exactly once; and, through
the public API on both runtimes, a list and a generator of the same updates give the same
graph and cuts, and a malformed item in the middle of a list is reported as before."""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import chronoray as cr
from chronoray.sources import IterableSource, MalformedRecord
from chronoray.testing import LedgerRowsVertex, LedgerVertex
from shards.codec import MessageRun, decode_commands, encode_commands, owner_message
from shards.core import Batch, ShardCore
from shards.feed import SourceFeed, _Buffer
from shards.local import LocalRuntime
from shards.logstore import LogName, LogStore, MemoryLogStore
from shards.replay import LogReplay, read_commands
from vertex.batch import MessageBatch, Payloads
from vertex.columns import UpdateBatch
from vertex.model import Context, TemporalVertex, VertexTypes
from vertex.records import Update


class Talker(TemporalVertex):
    """``on_message`` taking every branch a message can: a failure, no change, a dropped
    key, a message sent, an edge added (and a few other vertices created by them)."""

    type_name = "Talker"

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        amount = msg["amount"]
        if amount == 13:
            raise ValueError("unlucky")
        if amount % 10 == 0:
            return  # no change
        if amount % 9 == 0:
            ctx.state.pop("last", None)
        else:
            ctx.state["last"] = amount
        if amount % 7 == 0:
            ctx.send(amount % 5, {"echo": amount})  # a user message to another vertex
        if amount % 11 == 0:
            ctx.add_edge(amount % 3, amount=amount)


CLASSES = {
    "batch": LedgerVertex,
    "per message": LedgerRowsVertex,
    "built-in": TemporalVertex,
    "every branch": Talker,
}


def _stream(n: int = 2_000, accounts: int = 60, seed: int = 5) -> list[Update]:
    """Accounts created, then messages to them (and to a few new vertices) with an edge
    now and then: runs of messages between other updates."""
    rng = np.random.default_rng(seed)
    out = [Update.add_vertex(v, 0, vertex_type="V") for v in range(accounts)]
    for i in range(n):
        t = 1 + i // 3  # several updates share a time
        if i % 601 == 300:
            out.append(Update.add_edge(int(rng.integers(accounts)), 7, t))
        else:
            to = int(rng.integers(accounts + 5))  # a few messages create their vertex
            out.append(Update.message(to, t, amount=int(rng.integers(-50, 100))))
    return out


def _typed(stream: list[Update], cls: type) -> list[Update]:
    """``stream`` with its vertex class named ``cls``'s."""
    return [
        Update.add_vertex(u.vertex, u.ts, vertex_type=cls.type_name) if u.vertex_type else u
        for u in stream
    ]


def _stamped(stream: list[Update], source: str = "s") -> list[Update]:
    return [u.with_origin(source, i + 1) for i, u in enumerate(stream)]


def _ingest(items: Any, cls: type, shards: int = 2) -> LocalRuntime:
    types = VertexTypes([TemporalVertex, cls])
    rt = LocalRuntime(shards, types, batch_size=128, shard_checkpoint_interval=700)
    rt.ingest(items, "s")
    rt.run_until_quiet()
    return rt


def _columns(stream: list[Update]) -> list[UpdateBatch | Update]:
    items = list(IterableSource(_stamped(stream), "s").batches())
    assert all(item is not None and not isinstance(item, MalformedRecord) for item in items)
    return items  # type: ignore[return-value]


def _stores(rt: LocalRuntime) -> list[LogStore]:
    return [core.store for core in rt.cores]  # type: ignore[misc]


def _decoded(store: LogStore) -> list[Any]:
    """Every block of the events and commands logs, decoded."""
    from shards.codec import decode_events

    events = []
    for key, value in store.scan(LogName.EVENTS, 1):
        b = decode_events(value)
        events.append((key, b.vertex, b.clock, b.time, b.state, b.created, b.failed))
    commands = [(key, decode_commands(value)) for key, value in store.scan(LogName.COMMANDS, 1)]
    return [events, commands]


def _graph(rt: LocalRuntime) -> Any:
    return [
        (core.worker_clock, core.applied, {v: r.snapshot() for v, r in core.vertices.items()})
        for core in rt.cores
    ]


def _balances(rt: LocalRuntime) -> dict[Any, Any]:
    return {
        v: r.state["balance"]
        for core in rt.cores
        for v, r in core.vertices.items()
        if "balance" in r.state
    }


def _fold(stream: list[Any], accounts: int) -> dict[Any, int]:
    """Each account's balance: the sum of its messages' amounts."""
    want: dict[Any, int] = {}
    for u in stream:
        if isinstance(u, Update) and u.kind is cr.UpdateKind.MESSAGE and u.vertex < accounts:
            want[u.vertex] = want.get(u.vertex, 0) + u.props["amount"]
    return want


def _column_runs(rt: LocalRuntime) -> int:
    """Runs of the commands logs logged as columns."""
    return sum(
        type(items) is bytes
        for store in _stores(rt)
        for _, value in store.scan(LogName.COMMANDS, 1)
        for _, items in pickle.loads(value[:-4])["runs"]
    )


def _cuts(rt: LocalRuntime, times: list[float]) -> Any:
    return [
        {v: r.snapshot() for v, r in LogReplay(store, at=t).run().items()}
        for store in _stores(rt)
        for t in times
    ]


# -- the run itself ----------------------------------------------------------------------


def _run() -> MessageRun:
    payloads = [{"amount": i - 3, "note": f"n{i}", "ok": i % 2 == 0, "w": i / 4} for i in range(9)]
    return MessageRun(
        np.arange(2, 11, dtype=np.int64),
        np.array([5, 1, 5, 2, 2, 9, 1, 5, 3], np.int64),
        np.arange(20, 29, dtype=np.float64),
        pa.array(payloads),
    )


def test_a_run_means_the_row_path_messages_and_logs_the_same_entries() -> None:
    run = _run()
    updates = [
        Update.message(v, t, **p).with_origin("s", o)
        for o, v, t, p in zip(
            run.position.tolist(),
            run.vertex.tolist(),
            run.time.tolist(),
            run.prop_dicts(),
            strict=True,
        )
    ]
    assert run.items() == [(u.offset, owner_message(u, u.ts)) for u in updates]
    assert MessageRun.from_ipc(run.to_ipc()) == run
    assert run.updates() == 9 and not run.half.any()
    assert run.after(4) == run.slice(3, 9) and run.after(1) is run
    assert MessageRun.concat([run.slice(0, 4), run.slice(4, 9)]) == run
    order = np.array([3, 0, 8])
    assert run.take(order).items() == [run.items()[i] for i in order]
    entries = decode_commands(encode_commands(5, [("src:s", run)]))
    assert entries == decode_commands(encode_commands(5, [("src:s", run.items())]))
    empty = MessageRun(np.array([1, 2]), np.array([3, 4]), np.array([5, 6]), None)
    assert MessageRun.from_ipc(empty.to_ipc()) == empty
    assert empty.items()[1] == (2, (0, 4, None, ("message", None, {}, None), 6))


def test_payload_columns_give_what_the_payload_dicts_give() -> None:
    run = _run()
    payloads = Payloads(run.props, len(run))
    dicts = run.prop_dicts()
    assert list(payloads) == dicts and payloads.take([4, 1])[1] == dicts[1]
    batch = MessageBatch(run.vertex.tolist(), run.time, np.ones(9), payloads, [{}] * 5)
    rows = MessageBatch(run.vertex.tolist(), run.time, np.ones(9), dicts, [{}] * 5)
    for field, default, dtype in [
        ("amount", 0, None),
        ("amount", 0, np.float64),
        ("w", 0, None),
        ("ok", False, None),
        ("note", "", None),
        ("missing", 7, None),
    ]:
        got, want = batch.column(field, default, dtype), rows.column(field, default, dtype)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), field


# -- the edge: a list's runs of messages as columns --------------------------------------


def _odd_messages() -> list[Any]:
    """Messages whose payloads fit columns, and others that must stay rows."""
    items: list[Any] = [Update.message(i, i, amount=i) for i in range(5)]
    items += [Update.message(9, 6.5, amount=1), Update.message(9, 7.0, amount=2)]  # float times
    items += [Update.message(1, 8, amount=1), Update.message(1, 8, amount=1.5)]  # int and float
    items += [Update.message(2, 9, amount=None), Update.message(2, 9, amount=3)]  # a None
    items += [Update.message(3, 10, x=True), Update.message(3, 10, x=False)]  # bools
    items += [Update.message(3, 11, x=1), Update.message(3, 11, x=True)]  # int and bool
    items += [Update.message(4, 12, a=1, b="x"), Update.message(4, 12, b="y", a=2)]  # key order
    items += [Update.message(5, 13), Update.message(5, 14), "not an update"]  # empty payloads
    items += [Update.message(6, 15, big=2**70), Update.message(6, 15, big=1)]  # beyond int64
    items += [Update.message("str id", 16, amount=1), Update.message(7, 16, amount=[1])]
    items += [Update(cr.UpdateKind.MESSAGE, 8, 17, None, {1: 2})]  # a key that is no str
    items += [Update.add_vertex(8, 18, vertex_type="V"), Update.message(8, 19, amount=4)]
    items += [Update.message(i, 20 + i, amount=i).with_origin("mine", 100 + i) for i in range(9000)]
    return items


def test_a_lists_messages_come_as_columns_and_unroll_to_its_records() -> None:
    source = IterableSource(_odd_messages(), name="mine")
    batches = list(source.batches())
    columns = [b for b in batches if isinstance(b, UpdateBatch)]
    assert all(b.only_messages for b in columns) and len(columns) >= 7
    assert max(map(len, columns)) <= 8192  # a chunk of the list at most
    unrolled: list[Any] = []
    for item in batches:
        unrolled += list(item.updates()) if isinstance(item, UpdateBatch) else [item]
    records = list(source.records())
    assert len(unrolled) == len(records)
    for got, want in zip(unrolled, records, strict=True):
        if isinstance(want, MalformedRecord):
            assert isinstance(got, MalformedRecord) and str(got) == str(want)
            continue
        assert got == want and type(got.ts) is type(want.ts)
        assert list(got.props) == list(want.props)  # key order too
        assert [type(v) for v in got.props.values()] == [type(v) for v in want.props.values()]
    lazy = IterableSource(iter(_odd_messages()), name="mine")
    assert not any(isinstance(b, UpdateBatch) for b in lazy.batches())


# -- feed and shard: columns and rows give the same logs, graph and cuts -----------------


@pytest.mark.parametrize("name", list(CLASSES))
def test_message_columns_and_rows_log_and_cut_the_same(name: str) -> None:
    cls = CLASSES[name]
    stream = _typed(_stream(), cls)
    items = _columns(stream)
    assert sum(isinstance(i, UpdateBatch) and i.only_messages for i in items) >= 3
    by_rows, by_columns = _ingest(_stamped(stream), cls), _ingest(items, cls)
    try:
        assert [_decoded(s) for s in _stores(by_columns)] == [_decoded(s) for s in _stores(by_rows)]
        assert _graph(by_columns) == _graph(by_rows)
        assert _cuts(by_columns, [0, 150.5, 400, 700]) == _cuts(by_rows, [0, 150.5, 400, 700])
        assert _column_runs(by_columns) >= 10 and _column_runs(by_rows) == 0
        if cls in (LedgerVertex, LedgerRowsVertex):  # (a message creating its vertex
            assert _balances(by_columns) == _fold(stream, accounts=60)  # makes a built-in)
        if cls is Talker:  # every branch was taken
            errors = sum(core.errors for core in by_columns.cores)
            edges = sum(core.edge_count for core in by_columns.cores)
            assert errors > 0 and edges > 0
    finally:
        by_rows.close()
        by_columns.close()


def test_runs_of_other_kinds_waiting_for_one_shard_batch_keep_their_types() -> None:
    """Message runs whose payload field is an int in one and a float in the next, or
    whose times are ints in one and floats in the next, cannot be one run: the shard's
    buffer gives their items, each value and time of its own type."""
    ints = MessageRun(
        np.arange(1, 4),
        np.ones(3, np.int64),
        np.arange(1, 4),
        pa.StructArray.from_arrays([pa.array([1, 2, 3])], ["amount"]),
    )
    floats = MessageRun(
        np.arange(4, 7),
        np.ones(3, np.int64),
        np.arange(4, 7),
        pa.StructArray.from_arrays([pa.array([0.5, 1.0, 1.5])], ["amount"]),
    )
    float_times = MessageRun(np.arange(7, 9), np.ones(2, np.int64), np.array([7.5, 8.5]), None)
    for runs in ([ints, floats], [floats, ints], [ints, float_times], [ints, ints]):
        buffer = _Buffer()
        for run in runs:
            buffer.add_run(run)
        rows, joined = buffer.take()
        got = rows if joined is None else joined.items()
        want = [item for run in runs for item in run.items()]
        assert got == want
        assert [type(v) for _, m in got for v in (m[4], *m[3][2].values())] == [
            type(v) for _, m in want for v in (m[4], *m[3][2].values())
        ]
        assert (joined is not None) == (runs[0] is runs[1])


def _message_batches(stream: list[Update], shards: int) -> list[tuple[int, Batch]]:
    feed = SourceFeed("s", shards, 100)
    out: list[tuple[int, Batch]] = []
    for item in _columns(stream):
        if isinstance(item, UpdateBatch):
            feed.offer_batch(item, out.extend)
        else:
            out += feed.offer(item)
    return out + feed.end()


def test_resent_and_duplicate_message_columns_apply_once() -> None:
    stream = [u for u in _typed(_stream(), LedgerVertex) if u.kind is not cr.UpdateKind.ADD_EDGE]
    once = _ingest(_stamped(stream), LedgerVertex)
    types = VertexTypes([TemporalVertex, LedgerVertex])
    cores = [ShardCore(k, 2, MemoryLogStore(f"message-dup-{k}"), types) for k in range(2)]
    sent = _message_batches(stream, 2)
    assert sum(b.columns is not None for _, b in sent) >= 10
    for i, (shard, batch) in enumerate(sent):
        cores[shard].handle(batch)
        if i % 3 == 0:  # a resend of the same batch: all duplicates
            outcome = cores[shard].handle(batch)
            assert (outcome.executed, outcome.duplicates) == (0, batch.size)
        nxt = sent[i + 1][1] if i + 1 < len(sent) and sent[i + 1][0] == shard else None
        if i % 5 == 1 and nxt is not None and batch.columns is not None and nxt.columns:
            both = MessageRun.concat([batch.columns, nxt.columns])  # type: ignore[list-item]
            outcome = cores[shard].handle(Batch(nxt.channel, batch.prev, [], columns=both))
            assert outcome.duplicates == batch.size and outcome.executed == nxt.size
    try:
        live = [(c.worker_clock, {v: r.snapshot() for v, r in c.vertices.items()}) for c in cores]
        assert live == [
            (c.worker_clock, {v: r.snapshot() for v, r in c.vertices.items()}) for c in once.cores
        ]
    finally:
        once.close()
        for core in cores:
            core.store.close()  # type: ignore[union-attr]


def test_message_columns_behind_a_gate_of_two_sources_stay_exact() -> None:
    stream = _typed(_stream(), LedgerVertex)
    a = [u for i, u in enumerate(stream) if i % 2 == 0 or u.vertex_type]
    b = [u for i, u in enumerate(stream) if i % 2 == 1 and not u.vertex_type]

    def both(columns: bool) -> LocalRuntime:
        rt = LocalRuntime(2, VertexTypes([TemporalVertex, LedgerVertex]), batch_size=64)
        sa, sb = _stamped(a, "a"), _stamped(b, "b")
        feed = {
            "a": IterableSource(sa, "a").batches() if columns else iter(sa),
            "b": IterableSource(sb, "b").batches() if columns else iter(sb),
        }
        rt.ingest_many(feed, chunk=50)
        rt.run_until_quiet()
        return rt

    by_rows, by_columns = both(False), both(True)
    try:
        assert _graph(by_columns) == _graph(by_rows)
        entries = [[e[1:] for e in read_commands(s)] for s in _stores(by_columns)]
        assert entries == [[e[1:] for e in read_commands(s)] for s in _stores(by_rows)]
    finally:
        by_rows.close()
        by_columns.close()


@pytest.mark.parametrize("name", ["batch", "per message"])
def test_a_shard_crashed_between_message_batches_recovers_exactly_once(name: str) -> None:
    cls = CLASSES[name]
    stream = _typed(_stream(), cls)
    whole = _ingest(_columns(stream), cls)
    items = _columns(stream)

    def crashing() -> Iterator[UpdateBatch | Update]:
        for i, item in enumerate(items):
            yield item
            if i in (3, 9, 15):
                rt.crash(i % 2)

    rt = LocalRuntime(2, VertexTypes([TemporalVertex, cls]), batch_size=128,
                      shard_checkpoint_interval=700)  # fmt: skip
    try:
        rt.ingest(crashing(), "s")
        rt.run_until_quiet()
        assert _graph(rt) == _graph(whole)
        assert [list(read_commands(s)) for s in _stores(rt)] == [
            list(read_commands(s)) for s in _stores(whole)
        ]
    finally:
        rt.close()
        whole.close()


# -- the public API, on both runtimes ---------------------------------------------------

RUNTIMES = ["local", pytest.param("ray", marks=pytest.mark.ray)]


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    if request.param == "ray":
        request.getfixturevalue("ray_session")
    return str(request.param)


def _public(runtime: str, where: Path, items: Any, cls: type, **options: Any) -> Any:
    with cr.GraphCluster(
        runtime=runtime, num_shards=2, log_dir=str(where), vertex_types=[TemporalVertex, cls]
    ) as g:
        report = g.ingest(cr.IterableSource(items, name="s"), **options)
        cuts = []
        for at in (0, 120, 333.5, 10_000):
            vertices, edges = g.snapshot(at=at).to_pandas()
            cuts.append((vertices.sort_values("id").reset_index(drop=True).to_json(), len(edges)))
        now = {v: g.vertex(v)["state"] for v in (0, 5, 61)}
        return cuts, now, report.updates, report.rejected


@pytest.mark.parametrize("name", ["batch", "per message"])
def test_a_list_and_a_generator_of_messages_make_the_same_graph(
    runtime: str, name: str, tmp_path: Path
) -> None:
    cls = CLASSES[name]
    stream = _typed(_stream(1_200), cls)
    by_list = _public(runtime, tmp_path / "list", stream, cls)
    on_ray = {"in_driver": True} if runtime == "ray" else {}  # a generator does not pickle
    by_generator = _public(runtime, tmp_path / "gen", (u for u in stream), cls, **on_ray)
    assert by_list == by_generator
    assert by_list[2] == len(stream)


def test_a_malformed_item_amid_messages_is_reported_as_before(tmp_path: Path) -> None:
    stream: list[Any] = _typed(_stream(600), LedgerVertex)
    stream.insert(400, "not an update")
    with cr.GraphCluster(
        runtime="local", num_shards=2, log_dir=str(tmp_path / "raise"),
        vertex_types=[TemporalVertex, LedgerVertex],
    ) as g:  # fmt: skip
        with pytest.raises(MalformedRecord, match=r"^s:401: item 401 is not an Update but str"):
            g.ingest(cr.IterableSource(stream, name="s"))
        got = {v: g.vertex(v)["state"].get("balance") for v in range(60)}
        # what came before it is applied, nothing after it
        assert {v: b for v, b in got.items() if b is not None} == _fold(stream[:400], 60)
    skipped = _public("local", tmp_path / "skip", stream, LedgerVertex, on_error="skip")
    rows = _public("local", tmp_path / "rows", iter(stream), LedgerVertex, on_error="skip")
    assert skipped == rows and skipped[3] == 1
