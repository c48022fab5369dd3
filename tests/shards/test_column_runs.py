"""Stream edge batches as columns (:class:`~shards.codec.EdgeRun`), from the source feed
through the shard to its commands log, mean exactly what the row path means: a run's items
are the row path's messages; a graph ingested as columns has, block by block, the same
decoded events and commands logs, the same vertices, edges and clocks, and the same cuts
at several times and clocks as the same updates ingested as rows (CollegeMsg, Bitcoin OTC
with weights and float times, a generated skewed stream); resent and duplicate columns
apply once; behind a gate of two sources and with an observer watching the columns fall
back to the row path and stay exact; a shard crashed between column batches recovers; a
log of format 3 is still read, and gets the format-6 manifest once a shard writes to it."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import open_source, read_columns
from shards.codec import (
    FORMAT_VERSION,
    MANIFEST_KEY,
    EdgeRun,
    Manifest,
    decode_commands,
    decode_events,
    decode_manifest,
    encode_commands,
    encode_manifest,
    owner_message,
    target_message,
)
from shards.core import Batch, ShardCore
from shards.local import LocalRuntime
from shards.logstore import LogBatch, LogName, LogStore, MemoryLogStore
from shards.replay import LogReplay, read_commands
from tests.shards.log_helpers import logged_events
from vertex.columns import UpdateBatch
from vertex.records import Update

_ROWS = 3_000  # rows of each SNAP file: a few hundred blocks, milliseconds per block


pytestmark = pytest.mark.usefixtures("temporal_columns_at_once")


def _file(path: Any, fmt: Any) -> list[UpdateBatch]:
    items, _ = read_columns(open_source(path, fmt, "s"))
    batches: list[UpdateBatch] = []
    left = _ROWS
    for item in items:
        assert isinstance(item, UpdateBatch)
        batches.append(item.slice(0, min(left, len(item))))
        left -= len(batches[-1])
        if not left:
            break
    return [b.slice(i, min(i + 700, len(b))) for b in batches for i in range(0, len(b), 700)]


def _skewed() -> list[UpdateBatch]:
    rng = np.random.default_rng(3)
    n = 4_000
    src = np.minimum(rng.zipf(1.6, n), 300)
    dst = rng.integers(1, 400, n)
    ts = np.cumsum(rng.integers(0, 3, n))
    batch = UpdateBatch.edges("s", src, dst, ts, np.arange(1, n + 1))
    return [batch.slice(i, min(i + 512, n)) for i in range(0, n, 512)]


STREAMS = {
    "college": lambda: _file(collegemsg_path(), "snap"),
    "bitcoin": lambda: _file(bitcoinotc_path(), "bitcoin-csv"),
    "skewed": _skewed,
}


def _rows(batches: list[UpdateBatch]) -> Iterator[Update]:
    for batch in batches:
        yield from batch.updates()


def _ingest(items: Any, shards: int = 2, **options: Any) -> LocalRuntime:
    rt = LocalRuntime(shards, batch_size=300, shard_checkpoint_interval=2_000, **options)
    rt.ingest(items, "s")
    rt.run_until_quiet()
    return rt


def _stores(rt: LocalRuntime) -> list[LogStore]:
    return [core.store for core in rt.cores]  # type: ignore[misc]


def _decoded(store: LogStore) -> list[Any]:
    """Every block of the events and commands logs, decoded (messages included)."""
    events = [(key, _events(value)) for key, value in store.scan(LogName.EVENTS, 1)]
    commands = [(key, decode_commands(value)) for key, value in store.scan(LogName.COMMANDS, 1)]
    return [events, commands]


def _events(value: bytes) -> Any:
    block = decode_events(value)
    fields = ("first", "vertex", "clock", "time", "state", "edge", "ins", "seq0", "edges")
    fields += ("created", "deleted", "failed", "dropped", "late")
    return [getattr(block, f) for f in fields], list(block.messages())


def _graph(rt: LocalRuntime) -> Any:
    return [
        (
            core.worker_clock,
            core.vector.as_tuple(),
            core.applied,
            core.edge_count,
            {v: r.snapshot() for v, r in core.vertices.items()},
        )
        for core in rt.cores
    ]


def _cuts(rt: LocalRuntime, times: list[float]) -> Any:
    out = []
    for store in _stores(rt):
        last = max(k for k, _ in store.scan(LogName.EVENTS, 1))
        for t in times:
            replay = LogReplay(store, at=t)
            out.append({v: r.snapshot() for v, r in replay.run().items()})
        for bound in (1, last // 3, last // 2, last):
            replay = LogReplay(store, bound=bound)
            out.append({v: r.snapshot() for v, r in replay.run().items()})
    return out


@pytest.mark.parametrize("stream", list(STREAMS))
def test_columns_and_rows_log_and_cut_the_same(stream: str) -> None:
    batches = STREAMS[stream]()
    by_rows, by_columns = _ingest(_rows(batches)), _ingest(batches)
    try:
        assert [_decoded(s) for s in _stores(by_columns)] == [_decoded(s) for s in _stores(by_rows)]
        assert _graph(by_columns) == _graph(by_rows)
        times = [batches[0].column("time")[0], batches[-1].column("time")[-1]]
        times = [float(np.quantile(np.array(times, float), q)) for q in (0, 0.3, 0.6, 1)]
        assert _cuts(by_columns, times) == _cuts(by_rows, times)
        logged = [v for s in _stores(by_columns) for _, v in s.scan(LogName.COMMANDS, 1)]
        assert sum(len(v) for v in logged) < sum(
            len(v) for s in _stores(by_rows) for _, v in s.scan(LogName.COMMANDS, 1)
        )  # the columns were logged as columns
    finally:
        by_rows.close()
        by_columns.close()


def _run(n: int) -> tuple[UpdateBatch, EdgeRun]:
    """``n`` updates with weights (some null) and float times, and their halves as a run."""
    weights = pa.array([i if i % 4 else None for i in range(n)], pa.int64())
    batch = UpdateBatch.edges(
        "s",
        np.arange(n) % 5,
        np.arange(n) % 3 + 7,
        np.arange(n) * 1.5,
        np.arange(1, n + 1),
        {"weight": weights},
    )
    rows = np.repeat(np.arange(n), 2)
    half = np.tile(np.array([0, 1], np.int8), n)
    src, dst = batch.column("vertex")[rows], batch.column("dst")[rows]
    props = batch.table.column("props").take(pa.array(rows))
    run = EdgeRun(
        batch.column("offset")[rows],
        half,
        np.where(half == 0, src, dst),
        np.where(half == 0, dst, src),
        batch.column("time")[rows],
        props,
    )
    return batch, run


def test_a_run_means_the_row_paths_messages() -> None:
    """The one function that builds a run's items builds the feed's row messages."""
    batch, run = _run(9)
    want = [
        (u.offset, m)
        for u in batch.updates()
        for m in (owner_message(u, u.ts), target_message(u, u.ts))
    ]
    assert run.items() == want
    assert [type(m[4]) for _, m in run.items()] == [float] * 18
    assert want[0][1][3][2] == {} and want[2][1][3][2] == {"weight": 1}  # a null: no property
    assert EdgeRun.from_ipc(run.to_ipc()) == run
    assert run.after(3).position.tolist() == [4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9]
    assert run.updates() == 9 and len(EdgeRun.concat([run, run.after(8)])) == 20
    big = _run(2_000)[1]
    columns = Batch("src:s", 0, [], None, None, True, big)
    rows = Batch("src:s", 0, big.items(), None, None, True)
    again = pickle.loads(pickle.dumps(columns, 5))
    assert again.columns == big and again.rows() == rows.rows() and again.size == rows.size
    buffers: list[Any] = []  # what Ray ships out of band, zero-copy: the columns' buffers
    assert len(pickle.dumps(columns, 5, buffer_callback=buffers.append)) < 1_000
    assert len(buffers) <= 10 and len(pickle.dumps(rows, 5)) > 100_000
    entries = decode_commands(encode_commands(5, [("src:s", run)]))
    assert entries == decode_commands(encode_commands(5, [("src:s", run.items())]))
    assert [e.wc for e in entries] == list(range(5, 23))


def _column_batches(shards: int, batches: list[UpdateBatch]) -> list[tuple[int, Batch]]:
    from shards.feed import SourceFeed

    feed = SourceFeed("s", shards, 300, halves=True)
    out = [sent for b in batches for sent in feed.offer_columns(b) or []]
    return out + feed.end()


def _live(core: ShardCore) -> Any:
    return core.worker_clock, {v: r.snapshot() for v, r in core.vertices.items()}


def test_resent_and_duplicate_columns_apply_once() -> None:
    batches = _skewed()
    once = _ingest(batches)
    cores = [ShardCore(k, 2, MemoryLogStore(f"dup-{k}")) for k in range(2)]
    sent = _column_batches(2, batches)
    assert all(b.columns is not None for _, b in sent)
    for i, (shard, batch) in enumerate(sent):
        cores[shard].handle(batch)
        if i % 3 == 0:  # a resend of the same batch: all duplicates
            outcome = cores[shard].handle(batch)
            assert (outcome.executed, outcome.duplicates) == (0, batch.size)
        if i % 5 == 1 and i + 1 < len(sent) and sent[i + 1][0] == shard:
            nxt = sent[i + 1][1]  # a resend overlapping the next one: half duplicates
            both = Batch(
                nxt.channel,
                batch.prev,
                [],
                None,
                None,
                True,
                EdgeRun.concat([batch.columns, nxt.columns]),
            )  # type: ignore[list-item]
            outcome = cores[shard].handle(both)
            assert outcome.duplicates == batch.size and outcome.executed == nxt.size
    try:
        assert [_live(c) for c in cores] == [_live(c) for c in once.cores]
    finally:
        once.close()


def test_columns_behind_a_gate_of_two_sources_stay_exact() -> None:
    batches = _skewed()
    a = [UpdateBatch("a", b.table) for b in batches[::2]]
    bb = [UpdateBatch("b", b.table) for b in batches[1::2]]

    def both(rows: bool) -> LocalRuntime:
        rt = LocalRuntime(2, batch_size=200)
        feed = {"a": _rows(a) if rows else iter(a), "b": _rows(bb) if rows else iter(bb)}
        rt.ingest_many(feed)
        rt.run_until_quiet()
        return rt

    by_rows, by_columns = both(True), both(False)
    try:
        assert _graph(by_columns) == _graph(by_rows)
        # a turn of a source is one update as rows, one batch as columns: the blocks
        # differ, the entries (merged by time, then channel) do not
        assert [_entries(s) for s in _stores(by_columns)] == [_entries(s) for s in _stores(by_rows)]
    finally:
        by_rows.close()
        by_columns.close()


def _entries(store: LogStore) -> Any:
    return logged_events(store), [e[1:] for e in read_commands(store)]


class _Watching:
    """An observer (:class:`~shards.observe.ShardObserver`) that watches every change:
    the columns must not run direct."""

    watching = True
    takes_batches = False

    def __init__(self) -> None:
        self.seen: list[tuple[Any, int, float]] = []

    def attach(self, shard: Any) -> None:
        pass

    def vertex_changed(self, change: Any) -> None:
        self.seen.append((change.vertex.vertex_id, change.clock, change.time))

    def side_pending(self, dest: int) -> int:
        return 0

    def take_side(self, dest: int) -> list[Any]:
        return []

    def receive_side(self, items: list[Any]) -> None:
        pass

    def side_processed(self) -> int:
        return 0


def test_columns_with_an_observer_watching_fall_back_and_stay_exact() -> None:
    batches = _skewed()
    by_rows = _ingest(_rows(batches), host_factory=_Watching)
    by_columns = _ingest(batches, host_factory=_Watching)
    try:
        assert _graph(by_columns) == _graph(by_rows)
        watched = [c.observer.seen for c in by_columns.cores]  # type: ignore[union-attr]
        assert watched == [c.observer.seen for c in by_rows.cores]  # type: ignore[union-attr]
        assert sum(map(len, watched)) == sum(c.worker_clock for c in by_columns.cores)
    finally:
        by_rows.close()
        by_columns.close()


class _Batching(_Watching):
    """An observer that takes change batches: it notes every execution it hears of, one
    by one or as a batch's row, with whether it created its vertex and the edges it
    added."""

    takes_batches = True

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[Any, ...]] = []
        self.batches = 0

    def vertex_changed(self, change: Any) -> None:
        super().vertex_changed(change)
        self.rows.append((change.wc, change.created, change.added_out, change.added_in))

    def changes(self, batch: Any) -> None:
        self.batches += 1
        assert not batch.vertex.flags.writeable
        for k in range(len(batch)):
            vid, other, new = batch.vertex[k].item(), batch.other[k].item(), bool(batch.new_edge[k])
            self.seen.append((vid, batch.clock[k].item(), batch.time[k].item()))
            added = (other,) if new else ()
            out, ins = (added, ()) if batch.half[k] == 0 else ((), added)
            self.rows.append((batch.wc[k].item(), bool(batch.created[k]), out, ins))
        views = {v.vertex_id: v for v in batch.views}
        assert list(views) == batch.touched.tolist()
        for view, old in zip(batch.views, batch.old_states, strict=True):
            rows = batch.vertex == view.vertex_id
            assert (old is None) == bool(batch.created[rows][0])
            assert view.state["out_degree"] == len(view.out_edges)  # written back


def _rows_with_flags(observer: _Watching) -> list[tuple[Any, ...]]:
    return observer.rows  # type: ignore[attr-defined, no-any-return]


def test_an_observer_taking_batches_hears_every_execution_once_in_order() -> None:
    """Rows that come as change batches, and the executions between them, are the row
    path's executions one for one: vertex, clock, time, log position, creation and the
    edges added, in the shard's order -- and the graph and logs are the same."""
    batches = _skewed()

    class _Noting(_Watching):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[tuple[Any, ...]] = []

        def vertex_changed(self, change: Any) -> None:
            super().vertex_changed(change)
            added_out = tuple(change.added_out)
            self.rows.append((change.wc, change.created, added_out, tuple(change.added_in)))

    by_rows = _ingest(_rows(batches), host_factory=_Noting)
    by_batches = _ingest(batches, host_factory=_Batching)
    try:
        assert _graph(by_batches) == _graph(by_rows)
        assert [_entries(s) for s in _stores(by_batches)] == [_entries(s) for s in _stores(by_rows)]
        for rows, cols in zip(by_rows.cores, by_batches.cores, strict=True):
            assert cols.observer.batches > 0  # type: ignore[union-attr]
            assert cols.observer.seen == rows.observer.seen  # type: ignore[union-attr]
            assert _rows_with_flags(cols.observer) == _rows_with_flags(rows.observer)  # type: ignore[arg-type]
            assert len(cols.observer.seen) == cols.worker_clock  # type: ignore[union-attr]
    finally:
        by_rows.close()
        by_batches.close()


def test_a_shard_crashed_between_column_batches_recovers() -> None:
    batches = _skewed()
    whole = _ingest(batches)

    def crashing() -> Iterator[UpdateBatch]:
        for i, batch in enumerate(batches):
            yield batch
            if i in (1, 4):
                rt.crash(i % 2)

    rt = LocalRuntime(2, batch_size=300, shard_checkpoint_interval=2_000)
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


def test_a_format_3_log_is_read_and_bumped_when_written(monkeypatch: Any) -> None:
    monkeypatch.setattr("shards.core.fits", lambda _: False)  # no entries logged as columns
    rt = _ingest(_skewed()[:2])
    store = rt.cores[0].store
    assert store is not None
    graph = _graph(rt)[0]
    old = LogBatch()
    old.put_meta(MANIFEST_KEY, encode_manifest(Manifest(3, 0, 2)))
    store.append(old)  # every value of format 3 is one of format 6: only the manifest says 3
    assert {v: r.snapshot() for v, r in LogReplay(store).run().items()} == graph[4]
    core = ShardCore(0, 2, store)
    assert (core.worker_clock, {v: r.snapshot() for v, r in core.vertices.items()}) == (
        graph[0],
        graph[4],
    )
    manifest = decode_manifest(store.get_meta(MANIFEST_KEY), "x")  # type: ignore[arg-type]
    assert manifest == Manifest(FORMAT_VERSION, 0, 2) and FORMAT_VERSION == 6
    rt.close()


def test_upgrade_log_gives_a_format_3_log_the_format_5_manifest(
    tmp_path: Any, monkeypatch: Any
) -> None:
    from shards.logstore import RocksLogStore

    monkeypatch.setattr("shards.core.fits", lambda _: False)  # no entries logged as columns
    from shards.upgrade import upgrade_shard_log

    path = tmp_path / "shard-0"
    store = RocksLogStore(path)
    core = ShardCore(0, 1, store)
    for _, sent in _column_batches(1, _skewed()[:2]):
        core.handle(sent)
    live = _live(core)
    old = LogBatch()
    old.put_meta(MANIFEST_KEY, encode_manifest(Manifest(3, 0, 1)))
    store.append(old)
    store.close()
    result = upgrade_shard_log(path)
    assert (result.converted, result.shard, result.num_shards) == (True, 0, 1)
    again = RocksLogStore(path)
    try:
        raw = again.get_meta(MANIFEST_KEY)
        assert raw is not None and decode_manifest(raw, str(path)).format == FORMAT_VERSION
        assert _live(ShardCore(0, 1, again)) == live
    finally:
        again.close()
    assert not upgrade_shard_log(path).converted
