"""Live computations, notification streams and indexes on real shard actors."""

from __future__ import annotations

from collections import defaultdict

import pytest

import chronoray as cr
from chronoray.testing import IndexedVertex
from ephemeral import (
    BfsDepth,
    DegreeHistogram,
    LivePageRank,
    Notification,
    WeaklyConnectedComponents,
)
from tests.ephemeral.conftest import (
    check_bfs,
    check_histogram,
    check_pagerank,
    check_wcc,
    graph_of,
)
from tests.ephemeral.test_streams_and_indexes import check_indexes

pytestmark = [pytest.mark.ray]


def test_live_computations_streams_and_indexes_on_ray(ray_session, tmp_path, college_updates):
    updates = college_updates[:20_000]  # the whole file in process: test_live_algorithms.py
    source = updates[0].vertex
    half = len(updates) // 2
    with cr.GraphCluster(
        num_shards=2, log_dir=str(tmp_path / "g"), vertex_types=[IndexedVertex]
    ) as g:
        hist = g.start_computation(DegreeHistogram())
        bfs = g.start_computation(BfsDepth(source=source))
        wcc = g.start_computation(WeaklyConnectedComponents(), id="wcc")
        pr = g.start_computation(LivePageRank(tol=1e-6))
        live = g.subscribe(buffer=1_000_000)
        for part, name in ((updates[:half], "first"), (updates[half:], "second")):
            g.ingest(part, name=name)  # returns once the graph and computations are idle
            seen = updates[: half if name == "first" else len(updates)]
            graph = graph_of(seen)
            check_histogram(hist.result(), graph)
            check_bfs(bfs.values(), graph, source)
            check_wcc(g.computation("wcc", WeaklyConnectedComponents()).values(), graph)
            check_pagerank(pr.values(), graph, pr.computation.error_bound)
            check_indexes(g, seen)
        assert bfs.value(source) == 0 and bfs.value(-1) is None
        notes = live.drain()
        assert len(notes) == sum(s.worker_clock for s in g.stats().shards)
        clocks = defaultdict(list)
        for n in notes:
            assert isinstance(n, Notification)
            clocks[n.vertex].append(n.clock)
        assert all(c == list(range(1, len(c) + 1)) for c in clocks.values())
        with g.subscribe(since=float("-inf")) as replay:
            replayed = replay.drain()
        assert sorted(replayed, key=lambda n: (n.shard, n.wc)) == sorted(
            notes, key=lambda n: (n.shard, n.wc)
        )
        live.close()
        for computation in (hist, bfs, wcc, pr):
            assert computation.stats()["errors"] == 0
            computation.stop()


def test_cli_live_and_subscribe(ray_session, tmp_path):
    import json
    import re

    from click.testing import CliRunner

    from chronoray.cli import main
    from chronoray.datasets import collegemsg_path

    data = tmp_path / "part.txt"
    lines = collegemsg_path().read_text().splitlines()[:3000]
    data.write_text("\n".join(lines) + "\n")
    log_dir = str(tmp_path / "g")
    result = CliRunner().invoke(
        main, ["live", str(data), "--log-dir", log_dir, "--computation", "wcc", "--refresh", "0.2"]
    )
    assert result.exit_code == 0, result.output
    expected = graph_of([cr.Update.add_edge(int(a), int(b)) for a, b, _ in map(str.split, lines)])
    components = sum(1 for _ in __import__("networkx").weakly_connected_components(expected))
    final = result.output.split("final result")[1]
    assert re.search(rf"components\s*│\s*{components}\s", final), final
    result = CliRunner().invoke(
        main, ["subscribe", "--log-dir", log_dir, "--vertex", lines[0].split()[0], "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    sent = sum(1 for line in lines if line.split()[0] == lines[0].split()[0])
    assert [r["clock"] for r in rows] == list(range(1, len(rows) + 1)) and len(rows) >= sent
    assert rows[0]["old_state"] is None


def test_live_computations_take_change_batches_on_ray(ray_session, tmp_path, college_updates):
    """The whole of CollegeMsg from its file: past a shard's first rows its temporal
    column pass runs, and the computations take its change batches -- with results equal
    to networkx's."""
    from chronoray.datasets import collegemsg_path

    source = college_updates[0].vertex
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        hist = g.start_computation(DegreeHistogram())
        bfs = g.start_computation(BfsDepth(source=source))
        wcc = g.start_computation(WeaklyConnectedComponents())
        pr = g.start_computation(LivePageRank(tol=1e-6))
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        graph = graph_of(college_updates)
        check_histogram(hist.result(), graph)
        check_bfs(bfs.values(), graph, source)
        check_wcc(wcc.values(), graph)
        check_pagerank(pr.values(), graph, pr.computation.error_bound)
        for computation in (hist, bfs, wcc, pr):
            stats = computation.stats()
            assert stats["errors"] == 0
            assert stats["batches"] > 0
