"""Live computations on the in-process runtime against networkx: during ingestion, at a
paused intermediate point and at the end, on CollegeMsg and Bitcoin OTC, 1 and 4 shards;
and the logs are byte-for-byte the same with and without computations."""

from __future__ import annotations

import pytest
from rocksdict import AccessType, Options, Rdict

from chronoray.testing import LocalRuntime
from ephemeral import (
    BfsDepth,
    Computation,
    DegreeHistogram,
    LiveComputationLost,
    LivePageRank,
    WeaklyConnectedComponents,
)
from shards.logstore import RocksLogStore
from tests.ephemeral.conftest import (
    check_bfs,
    check_histogram,
    check_pagerank,
    check_wcc,
    graph_of,
)
from vertex import Update


@pytest.mark.parametrize(
    ("dataset", "shards", "pagerank_tol"),
    [
        ("college", 1, 1e-8),
        ("college", 4, None),
        ("bitcoin", 1, None),
        pytest.param("bitcoin", 4, 1e-6, marks=pytest.mark.long),  # long: ~60 s
    ],
)
def test_live_results_equal_networkx_paused_and_final(
    request, dataset, shards, pagerank_tol
) -> None:
    updates = request.getfixturevalue(f"{dataset}_updates")
    source = updates[0].vertex
    rt = LocalRuntime(shards, batch_size=5000)
    hist = rt.start_computation(DegreeHistogram())
    bfs = rt.start_computation(BfsDepth(source=source))
    wcc = rt.start_computation(WeaklyConnectedComponents())
    pr = rt.start_computation(LivePageRank(tol=pagerank_tol)) if pagerank_tol else None
    half = len(updates) // 2
    for part in (updates[:half], updates):  # pause half way (the second ingest resends
        rt.ingest(part[-half:] if part is updates else part)  # only the rest)
        g = graph_of(part)
        check_histogram(hist.result(), g)
        check_bfs(bfs.values(), g, source)
        check_wcc(wcc.values(), g)
        if pr is not None:
            check_pagerank(pr.values(), g, pr.computation.error_bound)
            assert pr.result()["vertices"] == g.number_of_nodes()
    for live in (hist, bfs, wcc):
        assert live.stats()["errors"] == 0
    rt.close()


def test_computation_started_on_a_running_graph_activates_on_old_and_new_vertices(
    college_updates,
):
    rt = LocalRuntime(2)
    third = len(college_updates) // 3
    rt.ingest(college_updates[:third])
    wcc = rt.start_computation(WeaklyConnectedComponents(), id="wcc")
    check_wcc(wcc.values(), graph_of(college_updates[:third]))
    rt.ingest(college_updates[third:])
    check_wcc(wcc.values(), graph_of(college_updates))
    assert rt.computation("wcc", WeaklyConnectedComponents()).result()["components"] > 0
    wcc.stop()
    with pytest.raises(KeyError, match="no computation"):
        wcc.result()
    rt.close()


class _Users(Computation):
    """Counts, per User vertex, the changes it saw; Accounts never activate."""

    def on_activate(self, ctx):
        ctx.state = 0

    def on_change(self, ctx, change):
        ctx.state += 1


def test_vertex_type_predicate_and_later_created_vertices():
    from vertex import TemporalVertex, VertexTypes

    class User(TemporalVertex):
        pass

    class Account(TemporalVertex):
        pass

    rt = LocalRuntime(2, VertexTypes([User, Account]))
    rt.ingest(
        [Update.add_vertex(1, vertex_type="User"), Update.add_vertex(2, vertex_type="Account")]
    )
    live = rt.start_computation(_Users(vertex_types=["User"]))
    rt.ingest(
        [Update.add_vertex(3, vertex_type="User"), Update.add_edge(1, 2), Update.add_edge(3, 1)],
        source="more",
    )
    # 1: activated at start, then its edge to 2 and the edge from 3; 3: created later
    assert live.values() == {1: 2, 3: 1}
    rt.close()


class _Failing(Computation):
    def on_activate(self, ctx):
        raise RuntimeError("boom")


def test_failing_hooks_are_counted_and_do_not_stop_the_graph(college_updates):
    rt = LocalRuntime(1)
    live = rt.start_computation(_Failing())
    rt.ingest(college_updates[:200])
    stats = live.stats()
    assert stats["errors"] == stats["active"] > 0
    assert "boom" in stats["recent_errors"][0]
    assert len(rt.edges()) == len(graph_of(college_updates[:200]).edges)
    rt.close()


def test_crashed_shard_loses_its_computation_state(college_updates):
    rt = LocalRuntime(2)
    hist = rt.start_computation(DegreeHistogram())
    rt.ingest(college_updates[:500])
    rt.crash(1)
    with pytest.raises(
        LiveComputationLost, match=rf"'{hist.id}' \(DegreeHistogram\) was lost on shard 1"
    ):
        hist.result()  # documented: restart() starts it again
    hist.restart()
    check_histogram(hist.result(), graph_of(college_updates[:500]))
    rt.ingest(college_updates[500:800])
    check_histogram(hist.result(), graph_of(college_updates[:800]))
    rt.close()


def _dump(path) -> dict[str, list[tuple[bytes, bytes]]]:
    names = ("commands", "events", "clocks", "checkpoints", "meta")
    cfs = {n: Options(raw_mode=True) for n in names}
    db = Rdict(
        str(path),
        Options(raw_mode=True),
        column_families=cfs,
        access_type=AccessType.read_only(),
    )
    try:
        return {n: list(db.get_column_family(n).items()) for n in names}
    finally:
        db.close()


def test_logs_are_byte_identical_with_and_without_computations(tmp_path, college_updates):
    updates = college_updates[:20_000]
    dumps = []
    for run, computations in enumerate(
        (
            [],
            [
                DegreeHistogram(),
                BfsDepth(source=updates[0].vertex),
                WeaklyConnectedComponents(),
                LivePageRank(tol=1e-4),
            ],
        )
    ):
        rt = LocalRuntime(
            3,
            store_factory=lambda k, run=run: RocksLogStore(tmp_path / f"run{run}" / f"shard-{k}"),
            shard_checkpoint_interval=5000,
        )
        lives = [rt.start_computation(c) for c in computations]
        rt.ingest(updates)
        if lives:  # they ran, and exchanged messages
            assert all(live.stats()["active"] > 0 for live in lives)
            assert sum(live.stats()["messages"] for live in lives) > 10_000
        rt.close()
        dumps.append([_dump(tmp_path / f"run{run}" / f"shard-{k}") for k in range(3)])
    assert all(len(d["events"]) > 10 and d["checkpoints"] for d in dumps[0])
    assert dumps[0] == dumps[1]
