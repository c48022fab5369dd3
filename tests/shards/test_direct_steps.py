"""The one-step execution of hot stream edge halves (``ShardCore._execute_direct``) logs
exactly what the general execute steps log: on random streams of every update kind (edge
adds with and without properties, reserved property names that fail, updates and removals
of missing edges, vertex adds with classes, removals, messages, late updates), over 1-3
shards and several vertex classes, every log of every shard is byte for byte the same
with and without it, and so are the vertices in memory."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shards.core import ShardCore
from shards.local import LocalRuntime
from shards.logstore import _MEMORY_DATA
from vertex.model import Context, TemporalVertex, Vertex, VertexTypes
from vertex.records import Update


class Counter(TemporalVertex):
    """A user class: counts messages (own code for messages and edge updates)."""

    def on_message(self, ctx: Context, payload: Any) -> None:
        ctx.state["messages"] = ctx.state.get("messages", 0) + 1

    def on_update_edge(self, ctx: Context, src: Any, props: Any) -> None:
        ctx.state["updated"] = ctx.state.get("updated", 0) + 1


class Plain(Vertex):
    """No temporal state: the plain built-in hooks."""


TYPES = {
    "temporal": lambda: VertexTypes(),
    "plain": lambda: VertexTypes([Plain]),
    "mixed": lambda: VertexTypes([TemporalVertex, Counter, Plain]),
}

ids = st.integers(0, 9)
props = st.sampled_from([{}, {"weight": 1}, {"weight": -2}, {"count": 5}, {"w": 1.5}])


@st.composite
def updates(draw: st.DrawFn, classes: tuple[str, ...]) -> Update:
    kind = draw(
        st.sampled_from(["add", "add", "add", "update", "remove", "vertex", "delete", "msg"])
    )
    src, dst, ts = draw(ids), draw(ids), draw(st.integers(0, 30))
    if kind == "add":
        return Update.add_edge(src, dst, ts, **draw(props))
    if kind == "update":
        return Update.update_edge(src, dst, ts, **draw(props))
    if kind == "remove":
        return Update.remove_edge(src, dst, ts)
    if kind == "vertex":
        return Update.add_vertex(src, ts, vertex_type=draw(st.sampled_from(classes)))
    if kind == "delete":
        return Update.remove_vertex(src, ts)
    return Update.message(src, ts, n=1)


def _logs(rt: LocalRuntime) -> list[Any]:
    names = [getattr(store, "name", None) for store in rt._stores]
    data = [_MEMORY_DATA[name] for name in names]  # type: ignore[index]
    return [({n: (log.seqs, log.values) for n, log in d.logs.items()}, dict(d.meta)) for d in data]


def _run(stream: list[Update], shards: int, types: str, lateness: float | None) -> Any:
    rt = LocalRuntime(shards, TYPES[types](), batch_size=7, shard_checkpoint_interval=40)
    try:
        ordered = sorted(stream, key=lambda u: u.ts) if lateness is None else stream
        rt.ingest(
            [u.with_origin("s", i + 1) for i, u in enumerate(ordered)],
            allowed_lateness=lateness,
            late="apply",
        )
        rt.run_until_quiet()
        vertices = [
            {
                v: (r.type_name, r.state, r.out_edges, r.in_edges, r.clock, r.time)
                for v, r in core.vertices.items()
            }
            for core in rt.cores
        ]
        return _logs(rt), vertices, [c.edge_count for c in rt.cores], [c.max_time for c in rt.cores]
    finally:
        rt.close()


@pytest.mark.parametrize("types", sorted(TYPES))
@settings(max_examples=40, deadline=None)  # timing is not what it checks
@given(data=st.data(), shards=st.integers(1, 3), lateness=st.sampled_from([None, 5.0]))
def test_direct_steps_log_what_the_general_steps_log(
    types: str,
    data: st.DataObject,
    shards: int,
    lateness: float | None,
) -> None:
    classes = tuple(TYPES[types]().names())
    stream = data.draw(st.lists(updates(classes), min_size=1, max_size=60))
    with_direct = _run(stream, shards, types, lateness)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ShardCore, "_execute_direct", lambda self, msg, block: False)
        general = _run(stream, shards, types, lateness)
    assert with_direct == general


def test_the_direct_steps_take_the_hot_halves(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a plain edge stream nearly every execution is a direct step."""
    taken = []
    original = ShardCore._execute_direct

    def counting(self: ShardCore, msg: Any, block: Any) -> bool:
        done = original(self, msg, block)
        taken.append(done)
        return done

    monkeypatch.setattr(ShardCore, "_execute_direct", counting)
    stream = [Update.add_edge(i % 5, (i * 3) % 7, i) for i in range(200)]
    _run(stream, 2, "temporal", None)
    assert len(taken) == 400 and sum(taken) >= 400 - 2 * 12  # creations go the general way
