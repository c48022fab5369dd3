"""Live computations and indexes fed by change batches (column runs through the shards'
temporal columns): the same results as networkx, the rules for which computations take
batches, and the row path wherever something needs every execution one by one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest

from chronoray.testing import IndexedVertex, LocalRuntime
from ephemeral import (
    BfsDepth,
    Computation,
    DegreeHistogram,
    LivePageRank,
    WeaklyConnectedComponents,
)
from ephemeral.computation import ChangeBatch, ChangesContext, EphemeralContext, batch_hook
from shards.observe import VertexChange
from tests.ephemeral.conftest import (
    check_bfs,
    check_histogram,
    check_pagerank,
    check_wcc,
    graph_of,
)
from tests.ephemeral.test_streams_and_indexes import check_indexes
from vertex import Update, VertexTypes
from vertex.columns import UpdateBatch

pytestmark = pytest.mark.usefixtures("temporal_columns_at_once")


def _batches(updates: list[Update], first: int = 1, size: int = 3000) -> list[UpdateBatch]:
    """``updates`` (plain edge additions) as column batches of source ``s``, numbered
    from offset ``first``."""
    src = np.array([u.vertex for u in updates], np.int64)
    dst = np.array([u.dst for u in updates], np.int64)
    ts = np.array([u.ts for u in updates], np.int64)
    offsets = np.arange(first, first + len(updates), dtype=np.int64)
    return [
        UpdateBatch.edges(
            "s", src[i : i + size], dst[i : i + size], ts[i : i + size], offsets[i : i + size]
        )
        for i in range(0, len(updates), size)
    ]


def test_live_results_from_change_batches_equal_networkx(college_updates) -> None:
    updates = college_updates
    source = updates[0].vertex
    rt = LocalRuntime(2, batch_size=5000)
    try:
        hist = rt.start_computation(DegreeHistogram())
        bfs = rt.start_computation(BfsDepth(source=source))
        wcc = rt.start_computation(WeaklyConnectedComponents())
        pr = rt.start_computation(LivePageRank(tol=1e-6))
        half = len(updates) // 2
        rt.ingest(_batches(updates[:half]), "s")
        for seen in (updates[:half], updates):
            if seen is updates:
                rt.ingest(_batches(updates[half:], first=half + 1), "s")
            g = graph_of(seen)
            check_histogram(hist.result(), g)
            assert hist.values() == {v: (g.out_degree(v), g.in_degree(v)) for v in g}
            check_bfs(bfs.values(), g, source)
            check_wcc(wcc.values(), g)
            check_pagerank(pr.values(), g, pr.computation.error_bound)
        for live in (hist, bfs, wcc, pr):
            stats = live.stats()
            assert stats["errors"] == 0
            assert stats["batches"] > 0  # the column path ran, with the computations
    finally:
        rt.close()


def test_indexes_follow_change_batches(college_updates) -> None:
    rt = LocalRuntime(2, VertexTypes([IndexedVertex]), batch_size=5000)
    try:
        rt.ingest(_batches(college_updates[:20_000]), "s")
        check_indexes(rt, college_updates[:20_000])
        assert sum(core.observer.takes_batches for core in rt.cores) == 2  # type: ignore[union-attr]
    finally:
        rt.close()


class _SeesEveryChange(DegreeHistogram):
    """Overrides ``on_change`` alone: it inherits a batch hook written for another
    ``on_change``, so it must get every execution."""

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        super().on_change(ctx, change)
        ctx.aggregate[0]["executions"] += 1


class _Net(Computation):
    net_changes: ClassVar[bool] = True

    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        pass


class _NetInherited(_Net):
    def on_change(self, ctx: EphemeralContext, change: VertexChange) -> None:
        pass


class _Raising(Computation):
    def on_activate(self, ctx: EphemeralContext) -> None:
        ctx.state = 0

    def on_changes(self, ctx: ChangesContext, batch: ChangeBatch) -> None:
        raise RuntimeError("broken batch hook")


def test_which_computations_take_change_batches() -> None:
    assert batch_hook(DegreeHistogram()) == "columns"
    assert batch_hook(WeaklyConnectedComponents()) == "net"
    assert batch_hook(LivePageRank()) == "net"
    assert batch_hook(BfsDepth(source=1)) == "net"
    assert batch_hook(_Net()) == "net"
    assert batch_hook(_SeesEveryChange()) is None
    assert batch_hook(_NetInherited()) is None
    assert batch_hook(Computation()) is None
    assert batch_hook(_Raising()) == "columns"


def test_a_computation_that_needs_every_execution_keeps_the_row_path(college_updates) -> None:
    updates = college_updates[:10_000]
    rt = LocalRuntime(2, batch_size=2000)
    try:
        every = rt.start_computation(_SeesEveryChange())
        hist = rt.start_computation(DegreeHistogram())
        rt.ingest(_batches(updates), "s")
        assert every.stats()["batches"] == hist.stats()["batches"] == 0
        stats = every.stats()  # every execution: a creation activates, the others change
        assert stats["changes"] + stats["active"] == sum(core.worker_clock for core in rt.cores)
        check_histogram(hist.result(), graph_of(updates))
        every.stop()  # now the histogram alone: batches again
        rt.ingest(_batches(college_updates[10_000:20_000], first=10_001), "s")
        assert hist.stats()["batches"] > 0
        check_histogram(hist.result(), graph_of(college_updates[:20_000]))
    finally:
        rt.close()


def _notifications(updates: list[Update], rows: bool, late: bool = False, **spec: Any) -> Any:
    """The notifications of a stream open while ``updates`` come as columns, per shard in
    order -- with the shards taking change batches, or (``rows``) one execution at a
    time, which a computation needing every change forces. ``late``: the stream opens
    (and the computations start) only after the first part ran with nothing watching."""
    rt = LocalRuntime(2, batch_size=2000)
    try:
        if late:
            rt.ingest(_batches(updates[:6000]), "s")
        # (starting a computation writes the shards' columns back: not before a late one)
        hist = None if late else rt.start_computation(DegreeHistogram())
        if rows:
            rt.start_computation(_SeesEveryChange())
        stream = rt.subscribe(buffer=100_000, **spec)
        if not late:
            rt.ingest(_batches(updates[:6000]), "s")
        rt.ingest(_batches(updates[6000:], first=6001), "s")
        if hist is not None:
            assert (hist.stats()["batches"] > 0) != rows
        notes = stream.drain()
        return sorted(notes, key=lambda n: (n.shard, n.wc))
    finally:
        rt.close()


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"ids": [9, 20, 41]},
        {"predicate": lambda old, new: new is not None and new["in_degree"] % 7 == 3},
    ],
    ids=["all", "ids", "predicate"],
)
@pytest.mark.parametrize("late", [False, True], ids=["from-the-start", "late"])
def test_streams_from_change_batches_equal_the_row_paths(college_updates, spec, late) -> None:
    updates = college_updates[:12_000]
    by_batches = _notifications(updates, rows=False, late=late, **spec)
    assert by_batches == _notifications(updates, rows=True, late=late, **spec)
    assert by_batches and all(n.type_name == "TemporalVertex" for n in by_batches)
    if not spec:  # every execution, both halves
        assert len(by_batches) == 2 * (len(updates) - (6000 if late else 0))


def test_a_failing_batch_hook_is_counted_and_the_others_go_on(college_updates) -> None:
    updates = college_updates[:10_000]
    rt = LocalRuntime(2, batch_size=2000)
    try:
        broken = rt.start_computation(_Raising())
        hist = rt.start_computation(DegreeHistogram())
        rt.ingest(_batches(updates), "s")
        stats = broken.stats()
        assert 0 < stats["errors"] <= stats["batches"]
        assert "broken batch hook" in stats["recent_errors"][0]
        check_histogram(hist.result(), graph_of(updates))
    finally:
        rt.close()


def test_a_change_batch_describes_its_rows() -> None:
    """Net changes: one per touched vertex in first-touch order, the edges new in the
    batch, the state before (``None``: created in it)."""
    rt = LocalRuntime(1, batch_size=100)
    seen: list[Any] = []

    class Probe(Computation):
        def on_changes(self, ctx: ChangesContext, batch: ChangeBatch) -> None:
            seen.append((batch, batch.net_changes(), ctx.rows.copy()))

        def on_activate(self, ctx: EphemeralContext) -> None:
            ctx.state = 0

    try:
        rt.start_computation(Probe())
        edges = [(1, 2, 10), (1, 3, 11), (2, 3, 12)]
        rt.ingest(_batches([Update.add_edge(*e) for e in edges]), "s")
        # vertex 1's creation made the class's plan on the general path; the pass ran the
        # rest: 2 and 3 were created in it (activated after it), 1 was active before
        ((batch, net, rows),) = seen
        assert batch.vertex.tolist() == [2, 1, 3, 2, 3]
        assert batch.created.tolist() == [True, False, True, False, False]
        assert [c.old_state is None for c in net] == [True, False, True]
        assert rows.tolist() == [False, True, False, False, False]
        seen.clear()
        rt.ingest(_batches([Update.add_edge(1, 2, 13), Update.add_edge(3, 1, 14)], first=4), "s")
        ((batch, net, rows),) = seen
        assert batch.vertex.tolist() == [1, 2, 3, 1]
        assert batch.half.tolist() == [0, 1, 0, 1]
        assert batch.new_edge.tolist() == [False, False, True, True]
        assert batch.touched.tolist() == [1, 2, 3]
        assert batch.touched_index.tolist() == [0, 1, 2, 0]
        assert batch.event_time.tolist() == [13, 13, 14, 14]
        assert rows.tolist() == [True] * 4
        assert batch.last_rows().tolist() == [3, 1, 2]
        by_vertex: Mapping[Any, VertexChange] = {c.vertex_id: c for c in net}
        one = by_vertex[1]
        assert one.added_out == () and one.added_in == (3,)
        assert one.old_state is not None and one.old_state["in_degree"] == 0
        assert one.state is not None and one.state["in_degree"] == 1
        assert by_vertex[3].added_out == (1,) and by_vertex[2].added_out == ()
        assert one.wc == batch.wc[3] and one.clock == batch.clock[3]
    finally:
        rt.close()
