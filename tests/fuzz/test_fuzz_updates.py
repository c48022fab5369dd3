"""Fuzzing the ``Update`` API and what a graph does with odd updates: any arguments give an
``Update`` or a ``TypeError``/``ValueError`` saying why; a stream of updates with odd times
and properties is applied up to the first one refused (a clear error naming its position)
and nothing after it, and a refused stream leaves no half-applied update."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronoray as cr
from chronoray.testing import LocalRuntime

odd = st.one_of(
    st.integers(-(2**70), 2**70),
    st.text(max_size=5),
    st.floats(),
    st.none(),
    st.booleans(),
    st.tuples(st.integers()),
    st.lists(st.integers(), max_size=2),
    st.binary(max_size=3),
)
props = st.dictionaries(st.text(max_size=4), odd, max_size=3)
KINDS = ("add_edge", "update_edge", "remove_edge", "add_vertex", "remove_vertex", "message")


@given(kind=st.sampled_from(KINDS), a=odd, b=odd, ts=odd, extra=props)
def test_update_constructors_accept_or_say_why(kind, a, b, ts, extra):
    make = getattr(cr.Update, kind)
    try:
        if kind in ("add_edge", "update_edge"):
            update = make(a, b, ts, **extra)
        elif kind == "remove_edge":
            update = make(a, b, ts)
        elif kind == "add_vertex":
            update = make(a, ts)
        elif kind == "remove_vertex":
            update = make(a, ts)
        else:
            update = make(a, ts, **extra)
    except (TypeError, ValueError) as exc:
        assert str(exc)
        return
    assert isinstance(update, cr.Update) and update.kind == kind


edges = st.tuples(
    st.integers(0, 6),
    st.integers(0, 6),
    st.one_of(st.integers(0, 100), st.floats(), st.sampled_from([math.nan, math.inf, -1.0])),
    props,
)


@given(rows=st.lists(edges, min_size=1, max_size=15))
def test_odd_update_streams_apply_a_prefix_or_everything(rows):
    updates = []
    for src, dst, ts, extra in rows:
        try:
            updates.append(cr.Update.add_edge(src, dst, ts, **extra))
        except (TypeError, ValueError):
            continue
    rt = LocalRuntime(2)
    refused = None
    try:
        rt.ingest(updates, "fuzz", allowed_lateness=math.inf)
    except (cr.MalformedRecord, cr.OutOfOrder, TypeError, ValueError) as exc:
        refused = exc
        assert str(exc)
    applied = {pair: p["count"] for pair, p in rt.edges().items()}
    # what a graph holds is the occurrences of a prefix of the stream, never a part of one
    for n in range(len(updates), -1, -1):
        counts: dict[tuple[int, int], int] = {}
        for u in updates[:n]:
            counts[(u.vertex, u.dst)] = counts.get((u.vertex, u.dst), 0) + 1
        if counts == applied:
            break
    else:
        pytest.fail(f"graph {applied} is no prefix of {updates} (refused: {refused!r})")
    if refused is None:
        assert n == len(updates)
    rt.close()
