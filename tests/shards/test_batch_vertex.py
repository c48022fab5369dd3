"""Batch behaviors (``BatchVertex.on_updates``, here ``chronoray.testing.LedgerVertex``): a
class whose stream messages run as columns gives exactly what the same rule run one
message at a time gives -- the same vertices in memory (state, clock, time), the same
failures, the same graph rebuilt from the log and the same states at every past time --
on random streams of messages, vertex adds of several classes, edges and messages that
make the behavior fail, over 1-3 shards, with the stream's runs of messages as rows or as
columns (:meth:`~chronoray.sources.IterableSource.batches`); and on both runtimes through
the public API."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chronoray as cr
from chronoray.sources import IterableSource
from chronoray.testing import LedgerRowsVertex
from chronoray.testing import LedgerVertex as Account
from shards.core import ShardCore
from shards.local import LocalRuntime
from vertex.batch import BatchVertex, MessageBatch
from vertex.model import TemporalVertex, VertexTypes
from vertex.records import Update


class Reference(LedgerRowsVertex):
    """The same rule, one message at a time, with its own ``on_message``, under the batch
    class's type name (the twin a stream's vertices are compared with)."""

    type_name = Account.type_name


ids = st.integers(0, 7)
amounts = st.integers(-5, 30).map(lambda x: "bad" if x == 30 else 0.5 if x == 29 else x)


@st.composite
def updates(draw: st.DrawFn) -> Update:
    kind = draw(st.sampled_from(["msg"] * 8 + ["vertex", "edge", "delete"]))
    vid, ts = draw(ids), draw(st.integers(0, 30))
    if kind == "msg":
        return Update.message(vid, ts, amount=draw(amounts))
    if kind == "vertex":
        return Update.add_vertex(
            vid, ts, vertex_type=draw(st.sampled_from([Account.type_name, None]))
        )
    if kind == "edge":
        return Update.add_edge(vid, draw(ids), ts)
    return Update.remove_vertex(vid, ts)


def _run(stream: list[Update], shards: int, cls: type, columns: bool = False) -> Any:
    """Vertices in memory, errors, and the vertices rebuilt from the log, per shard
    (``columns``: runs of messages travel as columns)."""
    types = VertexTypes([TemporalVertex, cls])
    rt = LocalRuntime(shards, types, batch_size=30, shard_checkpoint_interval=25)
    try:
        ordered = sorted(stream, key=lambda u: u.ts)
        stamped = [u.with_origin("s", i + 1) for i, u in enumerate(ordered)]
        rt.ingest(IterableSource(stamped, "s").batches() if columns else stamped)
        rt.run_until_quiet()
        memory = [_vertices(core) for core in rt.cores]
        errors = [(core.errors, [(wc, v) for wc, v, _ in core.recent_errors]) for core in rt.cores]
        rebuilt = [
            _vertices(ShardCore(core.shard_id, shards, core.store, types)) for core in rt.cores
        ]
        return memory, errors, rebuilt, [c.max_time for c in rt.cores]
    finally:
        rt.close()


def _vertices(core: ShardCore) -> dict[Any, Any]:
    return {v: (r.state, r.clock, r.time, r.out_edges) for v, r in core.vertices.items()}


@settings(max_examples=60, deadline=None)
@given(
    accounts=st.sets(ids, min_size=3),
    updates=st.lists(updates(), min_size=20, max_size=80),
    shards=st.integers(1, 3),
)
def test_batches_give_what_one_message_at_a_time_gives(
    accounts: set[int], updates: list[Update], shards: int
) -> None:
    stream = [Update.add_vertex(v, -1, vertex_type=Account.type_name) for v in sorted(accounts)]
    stream += updates
    batched = _run(stream, shards, Account)
    assert batched == _run(stream, shards, Reference)
    assert _run(stream, shards, Account, columns=True) == batched
    assert _run(stream, shards, Reference, columns=True) == batched
    with pytest.MonkeyPatch.context() as m:  # the batch class on its one-message path
        m.setattr(ShardCore, "_run_batch", _one_at_a_time)
        assert _run(stream, shards, Account) == batched
        assert _run(stream, shards, Account, columns=True) == batched


def _one_at_a_time(self: ShardCore, stretch: Any, block: Any, released: Any) -> None:
    for msg in stretch.messages():
        self._execute(msg, block, released)


def test_a_stretch_of_messages_runs_as_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages to existing vertices take one ``on_updates`` call per batch and class."""
    calls: list[int] = []
    original = Account.on_updates

    def counting(self: Any, batch: MessageBatch) -> Mapping[str, Any]:
        calls.append(len(batch))
        return original(self, batch)

    monkeypatch.setattr(Account, "on_updates", counting)
    rt = LocalRuntime(1, VertexTypes([TemporalVertex, Account]), batch_size=1000)
    try:
        created = [Update.add_vertex(v, 0, vertex_type=Account.type_name) for v in range(10)]
        messages = [Update.message(i % 10, 1 + i, amount=i) for i in range(500)]
        rt.ingest([u.with_origin("s", i + 1) for i, u in enumerate(created + messages)])
        rt.run_until_quiet()
        assert calls == [500]
        state = rt.cores[0].vertices[3].state
        assert state["balance"] == sum(range(3, 500, 10)) and state["messages"] == 50
    finally:
        rt.close()


def test_a_malformed_result_names_the_class_and_field() -> None:
    class Short(BatchVertex):
        def on_updates(self, batch: MessageBatch) -> Mapping[str, Any]:
            return {"x": [1]}

    rt = LocalRuntime(1, VertexTypes([TemporalVertex, Short]), batch_size=100)
    try:
        created = [Update.add_vertex(1, 0, vertex_type="Short")]
        messages = [Update.message(1, t, a=t) for t in (1, 2, 3)]
        rt.ingest([u.with_origin("s", i + 1) for i, u in enumerate(created + messages)])
        rt.run_until_quiet()
        core = rt.cores[0]
        # the batch of three fails its check; one at a time each message is fine
        assert core.errors == 0 and core.vertices[1].clock == 4
    finally:
        rt.close()
    batch = MessageBatch([1, 1], [1.0, 2.0], [2, 3], [{}, {}], [{}])
    with pytest.raises(ValueError, match=r"Short.on_updates: field 'x' has 1 values for 2"):
        from vertex.batch import batch_rows

        batch_rows(Short(), batch)


RUNTIMES = ["local", pytest.param("ray", marks=pytest.mark.ray)]


@pytest.fixture(params=RUNTIMES)
def graph(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[cr.GraphCluster]:
    if request.param == "ray":
        request.getfixturevalue("ray_session")
    with cr.GraphCluster(
        runtime=request.param,
        num_shards=2,
        log_dir=str(tmp_path / "g"),
        vertex_types=[TemporalVertex, Account],
    ) as g:
        yield g


def test_time_travel_over_batched_messages_on_both_runtimes(graph: cr.GraphCluster) -> None:
    """States at past times, from the log, equal a plain fold over the messages."""
    rng = np.random.default_rng(7)
    accounts = list(range(40))
    stream = [Update.add_vertex(v, 0, vertex_type=Account.type_name) for v in accounts]
    sent = [(int(rng.integers(40)), 1 + i, int(rng.integers(-50, 100))) for i in range(3000)]
    stream += [Update.message(v, t, amount=a) for v, t, a in sent]
    graph.ingest(stream)
    for at in (0, 700, 1500.5, 3000):
        vertices, _ = graph.snapshot(at=at).to_pandas()
        got = {
            int(v): (int(b), int(n))
            for v, b, n in zip(
                vertices["id"], vertices["balance"], vertices["messages"], strict=True
            )
            if n == n  # noqa: PLR0124 (NaN: no message yet)
        }
        want: dict[int, tuple[int, int]] = {}
        for v, t, a in sent:
            if t <= at:
                b, n = want.get(v, (0, 0))
                want[v] = (b + a, n + 1)
        assert got == want, at
