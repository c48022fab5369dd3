"""Spark analyses of real snapshots against networkx on the same cut, read from the file.

One graph per data set (2 shards on Ray), snapshots at several times, one Spark session.
"""

from __future__ import annotations

import os
from collections import Counter

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import chronoray as cr
from chronoray.cli import main
from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.testing import oracle_graph
from spark_bridge import (
    PageRankRun,
    activity,
    degree_distribution,
    pagerank,
    to_pandas,
    triangle_count,
    triangles,
    weakly_connected_components,
)

pytestmark = [pytest.mark.ray, pytest.mark.slow]

COLLEGE_TIMES = (1083000000.0, 1090000000.0)  # early (sparse), mid-stream
BITCOIN_TIMES = (1290000000.0, 1453684324.21)  # early, the last line


@pytest.fixture(scope="module")
def college_graph(ray_session, tmp_path_factory):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path_factory.mktemp("college"))) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        yield g


@pytest.fixture(scope="module")
def bitcoin_snapshots(ray_session, tmp_path_factory):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path_factory.mktemp("btc"))) as g:
        g.ingest(cr.BitcoinCsvSource(bitcoinotc_path()))
        yield {t: g.snapshot(at=t) for t in BITCOIN_TIMES}


def _as_dict(frame, key: str, value: str) -> dict:
    table = to_pandas(frame)  # Spark -> Ray -> pandas
    return dict(zip(table[key], table[value], strict=True))


def _assert_ranks_close(got: dict, expected: dict) -> None:
    assert set(got) == set(expected)
    worst = max(abs(got[v] - expected[v]) for v in expected)
    assert worst < 1e-6, f"largest PageRank difference {worst:.3g}"
    assert abs(sum(got.values()) - 1.0) < 1e-9


@pytest.mark.parametrize("engine", ["spark", "auto"])
def test_pagerank_equals_networkx_through_analyze(college_graph, college, tmp_path, engine):
    t = COLLEGE_TIMES[1]
    result = college_graph.analyze("pagerank", at=t, tol=1e-8, engine=engine)  # the driver API
    # a snapshot this small runs on the kernel unless Spark is asked for, and says why
    assert result.engine == ("spark" if engine == "spark" else "local")
    assert ("asked for" if engine == "spark" else "edges <=") in result.info["engine_reason"]
    got = dict(zip(result.to_pandas()["vertex"], result.to_pandas()["pagerank"], strict=True))
    expected = nx.pagerank(oracle_graph(college, t), tol=1e-12, max_iter=1000)
    _assert_ranks_close(got, expected)
    assert result.info["converged"] and result.info["vertices"] == len(expected)
    assert list(result.top(3)["vertex"]) == sorted(expected, key=expected.get, reverse=True)[:3]
    paths = result.save(tmp_path)
    saved = pd.read_parquet(tmp_path / "pagerank.parquet")
    assert list(saved.columns) == ["vertex", "pagerank"] and len(saved) == len(expected)
    assert (tmp_path / "pagerank.png").stat().st_size > 0 and len(paths) == 2


def test_pagerank_early_cut_and_weighted(college_graph, college, spark):
    t = COLLEGE_TIMES[0]  # unweighted PageRank in Spark: the analyze test above, at a later cut
    snap = college_graph.snapshot(at=t)
    graph = oracle_graph(college, t)
    weighted = _as_dict(pagerank(spark, snap, weight="count", tol=1e-8), "vertex", "pagerank")
    expected = nx.pagerank(graph, weight="count", tol=1e-12, max_iter=1000)
    _assert_ranks_close(weighted, expected)
    unweighted = nx.pagerank(graph, weight=None, tol=1e-12, max_iter=1000)
    assert max(abs(expected[v] - unweighted[v]) for v in graph) > 1e-4  # weights matter here


def test_snapshot_analyses_run_in_one_job_from_the_object_store(college_graph, college, spark):
    """From a snapshot, PageRank and WCC are one Spark job each (ids from the snapshot's
    tables on the driver, edges read by the task from the object store); with 2 shares
    (a job per iteration, shares with targets in common) the ranks are the same."""
    from spark_bridge.analyses.metrics import counting_jobs

    t = COLLEGE_TIMES[1]
    snap = college_graph.snapshot(at=t)
    graph = oracle_graph(college, t)
    expected = nx.pagerank(graph, tol=1e-12, max_iter=1000)
    runs: list[PageRankRun] = []
    frame, work = counting_jobs(spark, lambda: pagerank(spark, snap, tol=1e-10, run=runs))
    assert (work.jobs, runs[0].partitions, runs[0].jobs_per_iteration) == (1, 1, 0.0)
    fused = {r.vertex: r.pagerank for r in frame.collect()}
    _assert_ranks_close(fused, expected)
    # 2 shares run a job per iteration (~0.4-0.8 s each here): compared at a loose tolerance
    loose = {r.vertex: r.pagerank for r in pagerank(spark, snap, tol=1e-3, run=runs).collect()}
    frame, work = counting_jobs(
        spark, lambda: pagerank(spark, snap, tol=1e-3, partitions=2, run=runs)
    )
    assert runs[2].iterations == runs[1].iterations > 1 and work.jobs == runs[2].iterations + 1
    shared = {r.vertex: r.pagerank for r in frame.collect()}
    assert set(shared) == set(loose) == set(fused)
    assert max(abs(shared[v] - loose[v]) for v in loose) < 1e-15
    for partitions in (None, 3):
        rows, work = counting_jobs(
            spark, lambda p=partitions: weakly_connected_components(spark, snap, partitions=p)
        )
        assert work.jobs == 1
        members: dict = {}
        for row in rows.collect():
            members.setdefault(row.component, set()).add(row.vertex)
        assert {frozenset(g) for g in members.values()} == {
            frozenset(c) for c in nx.weakly_connected_components(graph)
        }


def test_snapshot_pagerank_names_a_missing_weight_column(college_graph, spark):
    snap = college_graph.snapshot(at=COLLEGE_TIMES[0])
    with pytest.raises(ValueError, match=r"edge column 'weight' is not in the snapshot's edges"):
        pagerank(spark, snap, weight="weight")


def test_shares_of_the_parts_cover_every_row_once():
    import pyarrow as pa

    from spark_bridge.convert import _share

    parts = [pa.table({"src": np.arange(n), "dst": np.arange(n) + 100}) for n in (0, 1, 7, 10)]
    for partitions in (1, 3, 25):
        shares = [_share(parts, k, partitions, {"a": "src", "w": None}) for k in range(partitions)]
        got = np.sort(np.concatenate([s["a"] for s in shares]))
        assert got.tolist() == sorted(v for t in parts for v in t["src"].to_pylist())
        assert got.dtype == np.int64 and all(len(s["w"]) == len(s["a"]) for s in shares)


def test_pagerank_bitcoin(bitcoin_snapshots, bitcoin, spark):
    t = BITCOIN_TIMES[0]
    got = _as_dict(pagerank(spark, bitcoin_snapshots[t], tol=1e-8), "vertex", "pagerank")
    _assert_ranks_close(got, nx.pagerank(oracle_graph(bitcoin, t), tol=1e-12, max_iter=1000))


def _small_graph(seed: int) -> tuple[list[int], list[tuple[int, int, float]]]:
    """Sparse ids (not 0..n-1), weighted edges, dangling and isolated vertices, and several
    components: what the block forms must get right across partitions."""
    rng = np.random.default_rng(seed)
    ids = sorted(int(i) for i in rng.choice(10_000, 120, replace=False))
    edges = {(ids[80], ids[81]): 2.0, (ids[82], ids[81]): 1.0}  # a third, small component
    for k in range(200):
        a, b = rng.choice(40, 2, replace=False) + 40 * (k % 2)  # two clusters
        if a % 7:  # every 7th never sends: dangling (unless isolated)
            edges[(ids[a], ids[b])] = float(rng.integers(1, 5))
    return ids, [(a, b, w) for (a, b), w in edges.items()]


def _small_frames(spark, seed: int):
    ids, edges = _small_graph(seed)
    vertices = spark.createDataFrame([(i,) for i in ids], ["id"])
    return ids, edges, (vertices, spark.createDataFrame(edges, ["src", "dst", "count"]))


def test_pagerank_blocks_with_dangling_vertices_and_weights(spark):
    ids, edges, frames = _small_frames(spark, 5)
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_weighted_edges_from(edges, weight="count")
    assert any(graph.out_degree(v) == 0 < graph.in_degree(v) for v in ids)  # dangling
    assert any(graph.degree(v) == 0 for v in ids)  # isolated
    weighted = nx.pagerank(graph, weight="count", tol=1e-13, max_iter=1000)
    unweighted = nx.pagerank(graph, weight=None, tol=1e-13, max_iter=1000)
    assert max(abs(weighted[v] - unweighted[v]) for v in ids) > 1e-4  # weights matter here
    for weight, expected in (("count", weighted), (None, unweighted)):
        runs: list[PageRankRun] = []
        frame = pagerank(spark, frames, weight=weight, tol=1e-12, run=runs)
        _assert_ranks_close({r.vertex: r.pagerank for r in frame.collect()}, expected)
        assert runs[0].converged and runs[0].jobs_per_iteration == 0.0  # one job, 1 partition


def test_pagerank_several_partitions_iterate_as_the_one_job_form(spark):
    """A job per iteration over 3 partitions (and over 1) gives the one-job form's ranks
    after the same iterations (the one-job form equals networkx, above)."""
    _, _, frames = _small_frames(spark, 6)
    ranks = {}
    for partitions, one_job in ((1, True), (1, False), (3, True)):
        runs: list[PageRankRun] = []
        frame = pagerank(
            spark, frames, weight="count", tol=0.0, max_iter=4, partitions=partitions,
            one_job=one_job, run=runs,
        )  # fmt: skip
        ranks[partitions, one_job] = {r.vertex: r.pagerank for r in frame.collect()}
        run = runs[0]
        assert (run.iterations, run.converged, run.partitions) == (4, False, partitions)
        assert run.delta > 0 and run.jobs_per_iteration == (
            0.0 if one_job and partitions == 1 else 1.0
        )
    fused = ranks[1, True]
    assert abs(sum(fused.values()) - 1.0) < 1e-12
    for key in ((1, False), (3, True)):
        assert set(ranks[key]) == set(fused)
        assert max(abs(ranks[key][v] - fused[v]) for v in fused) < 1e-15


@pytest.mark.parametrize("partitions", [1, 4])
def test_components_across_partitions_equal_networkx(spark, partitions):
    ids, edges, frames = _small_frames(spark, 7)
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_edges_from((a, b) for a, b, _ in edges)
    expected = {frozenset(c) for c in nx.weakly_connected_components(graph)}
    assert len([c for c in expected if len(c) > 1]) > 1  # several non-trivial components
    rows = weakly_connected_components(spark, frames, partitions=partitions).collect()
    members: dict = {}
    for row in rows:
        members.setdefault(row.component, set()).add(row.vertex)
    assert all(label == min(group) for label, group in members.items())
    assert {frozenset(g) for g in members.values()} == expected


def _components(frame) -> set[frozenset]:
    members: dict = {}
    for vertex, component in _as_dict(frame, "vertex", "component").items():
        members.setdefault(component, set()).add(vertex)
    assert all(label == min(group) for label, group in members.items())
    return {frozenset(group) for group in members.values()}


@pytest.mark.parametrize(
    "dataset",
    # the same Spark code on the second file (~40 s under the suite's load): in the long set
    ["college", pytest.param("bitcoin", marks=pytest.mark.long)],
)
def test_components_degrees_triangles_equal_networkx(
    dataset, college_graph, bitcoin_snapshots, college, bitcoin, spark
):
    if dataset == "college":
        t, oracle = COLLEGE_TIMES[1], college
        snap = college_graph.snapshot(at=t)
    else:
        t, oracle = BITCOIN_TIMES[1], bitcoin
        snap = bitcoin_snapshots[t]
    graph = oracle_graph(oracle, t)

    components = _components(weakly_connected_components(spark, snap))
    assert components == {frozenset(c) for c in nx.weakly_connected_components(graph)}

    dist = to_pandas(degree_distribution(spark, snap))
    for column, view in (("in_vertices", graph.in_degree()), ("out_vertices", graph.out_degree())):
        got = {d: n for d, n in zip(dist["degree"], dist[column], strict=True) if n}
        assert got == dict(Counter(d for _, d in view))

    simple = nx.Graph(graph.to_undirected())
    simple.remove_edges_from(nx.selfloop_edges(simple))
    expected = nx.triangles(simple)
    assert _as_dict(triangles(spark, snap), "vertex", "triangles") == expected
    assert triangle_count(spark, snap) == sum(expected.values()) // 3 > 0


def test_activity_per_bucket_equals_the_file(college_graph, college, spark):
    t0, t1 = 1082040961.0, 1084000000.0  # first line .. some weeks in
    result = college_graph.analyze("activity", window=(t0, t1), buckets=4)
    assert result.engine == "local"  # the kernel; Spark's activity must say the same
    rows = result.to_pandas()
    edges = [ts for events in college.values() for ts, _ in events if ts <= t1]
    cuts = [t0 + (t1 - t0) * i / 4 for i in range(4)] + [t1]
    assert list(rows["time"]) == cuts
    previous = float("-inf")
    for row, cut in zip(rows.itertuples(), cuts, strict=True):
        graph = oracle_graph(college, cut)
        assert (row.vertices, row.edges) == (graph.number_of_nodes(), graph.number_of_edges())
        assert row.bucket_messages == sum(previous < ts <= cut for ts in edges)
        active = {p for p, evs in college.items() if any(previous < ts <= cut for ts, _ in evs)}
        assert row.active_edges == len(active)
        assert row.active_vertices == len({v for pair in active for v in pair})
        previous = cut
    again = to_pandas(activity(spark, result.snapshots))  # the library call directly
    pd.testing.assert_frame_equal(again, rows)


def test_cli_analyze_wcc_writes_parquet_and_picture(ray_session, college, tmp_path):
    t = COLLEGE_TIMES[0]
    lines = collegemsg_path().read_text().splitlines()
    part = tmp_path / "part.txt"  # the file's first weeks: the cut and ~13 k lines after it
    part.write_text("".join(f"{line}\n" for line in lines if float(line.split()[2]) <= t + 1e6))
    log_dir = tmp_path / "logs"
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir)) as g:
        g.ingest(cr.SnapEdgeSource(part))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["analyze", "wcc", "--log-dir", str(log_dir), "--at", str(t), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    saved = pd.read_parquet(out / "wcc.parquet")
    assert list(saved.columns) == ["vertex", "component"]
    graph = oracle_graph(college, t)
    largest = max(nx.weakly_connected_components(graph), key=len)
    assert str(len(largest)) in result.output  # the top table: the largest component's size
    assert "engine local:" in result.output  # chosen by size, and said
    assert len(saved) == graph.number_of_nodes() and (out / "wcc.png").stat().st_size > 0


@pytest.mark.long  # ~70 s: a new process starts its own Ray and Spark
def test_cli_output_has_no_spark_or_ray_log_lines(ray_session, tmp_path):
    """A new process (its own Ray and Spark): the terminal gets the table and the driver
    log's path, while Ray's, Spark's and log4j's own lines go to that log file."""
    import re
    import subprocess
    import sys

    log_dir = tmp_path / "logs"
    lines = collegemsg_path().read_text().splitlines(keepends=True)[:3000]
    small = tmp_path / "small.txt"
    small.write_text("".join(lines))
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir)) as g:
        g.ingest(cr.SnapEdgeSource(small))
    driver_log = tmp_path / "driver.log"
    command = [sys.executable, "-m", "chronoray.cli", "analyze", "degrees", "--engine", "spark"]
    command += ["--log-dir", str(log_dir), "--out", str(tmp_path / "out")]
    env = {**os.environ, "CHRONORAY_DRIVER_LOG": str(driver_log)}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    noise = re.compile(r"StatusConsoleListener|log4j|WARN|INFO|SparkContext|raylet|Ray instance")
    assert not [line for line in output.splitlines() if noise.search(line)], output
    assert str(driver_log) in output and driver_log.stat().st_size > 0
