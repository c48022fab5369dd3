"""The vertex programming model in isolation: Context buffering, hooks, type registry."""

from __future__ import annotations

import pytest

from vertex import Context, TemporalVertex, Update, UpdateKind, Vertex, VertexTypes


def _ctx(out=None, state=None) -> Context:
    return Context(1, 1, 5.0, dict(state or {}), dict(out or {}), {})


def test_context_buffers_edge_effects_without_touching_edges():
    out = {2: {"count": 1}}
    ctx = _ctx(out)
    ctx.update_edge(2, count=2)
    ctx.add_edge(3, count=1)
    ctx.remove_edge(2)
    assert out == {2: {"count": 1}}  # nothing applied yet
    assert ctx.edge(2) is None and ctx.edge(3) == {"count": 1}
    assert ctx.edge_ops == {2: None, 3: {"count": 1}}
    with pytest.raises(KeyError, match="no edge to 9"):
        ctx.update_edge(9, x=1)
    with pytest.raises(TypeError):
        ctx.out_edges[5] = {}  # type: ignore[index]


def test_send_to_neighbors_sees_edges_changed_in_the_hook():
    ctx = _ctx({2: {}, 3: {}})
    ctx.remove_edge(3)
    ctx.add_edge(4)
    ctx.send_to_neighbors({"x": 1})
    assert sorted(d for d, _ in ctx.sends) == [2, 4]


def test_default_temporal_edge_semantics():
    v = TemporalVertex()
    ctx = _ctx(state={"out_degree": 0, "in_degree": 0, "sent": 0, "received": 0})
    v.on_edge_event(ctx, UpdateKind.ADD_EDGE, 2, 10.0, {"weight": 3})
    assert ctx.edge(2) == {"count": 1, "first_ts": 10.0, "last_ts": 10.0, "weight": 3}
    v.on_edge_event(ctx, UpdateKind.ADD_EDGE, 2, 7.0, {"weight": -1})
    assert ctx.edge(2) == {"count": 2, "first_ts": 7.0, "last_ts": 10.0, "weight": -1}
    assert ctx.state["out_degree"] == 1 and ctx.state["sent"] == 2
    assert (ctx.state["first_ts"], ctx.state["last_ts"]) == (7.0, 10.0)


def test_vertex_types_registry():
    class A(Vertex):
        pass

    class B(Vertex):
        type_name = "bee"

    types = VertexTypes([A, B])
    assert types.default is A and types.get("bee") is B and types.names() == ["A", "bee"]
    with pytest.raises(KeyError, match="unknown vertex type 'C'"):
        types.get("C")
    with pytest.raises(TypeError):
        VertexTypes([int])  # type: ignore[list-item]


def test_update_records_validate():
    u = Update.add_edge(1, 2, 3.5, weight=1)
    assert (u.kind, u.vertex, u.dst, u.props) == (UpdateKind.ADD_EDGE, 1, 2, {"weight": 1})
    assert u.with_origin("f", 7).offset == 7
    with pytest.raises(TypeError):
        Update.add_edge(1.5, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Update(UpdateKind.MESSAGE, 1, 0, dst=2)
    assert Update("add_vertex", "x").kind is UpdateKind.ADD_VERTEX  # type: ignore[arg-type]
