"""Spark DataFrames into the graph: CollegeMsg and Bitcoin OTC read by Spark from Parquet and
CSV files written here, checked against the files; a shuffled frame, bad rows, a killed
source actor; the CLI. One Spark session (the root ``spark`` fixture), 2 shards."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from pyspark.sql import functions as F

import chronoray as cr
from chronoray.cli import main
from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.testing import kill_source, pair_counts, pair_counts_between
from spark_bridge.ingest import read_table

pytestmark = [pytest.mark.ray, pytest.mark.slow]

COLUMNS = {"src": "src", "dst": "dst", "time": "time"}


@pytest.fixture(scope="module")
def college_parquet(tmp_path_factory) -> str:
    """CollegeMsg as a Parquet file (src, dst, time as int64), in file order."""
    rows = [line.split() for line in collegemsg_path().read_text().splitlines()]
    table = pa.table({name: [int(r[i]) for r in rows] for i, name in enumerate(COLUMNS)})
    path = tmp_path_factory.mktemp("tables") / "college.parquet"
    pq.write_table(table, path)
    return str(path)


def _counts(graph: cr.GraphCluster) -> dict[tuple[int, int], int]:
    return {(s, d): p["count"] for s, d, p in graph.edges()}


def test_bitcoin_csv_equals_the_file(spark, tmp_path, bitcoin):
    """CSV through Spark with a property column (CollegeMsg's Parquet file goes through
    Spark in the shuffled test below: report, totals, vertex count and cuts)."""
    csv = tmp_path / "bitcoin.csv"
    csv.write_text("src,dst,rating,time\n" + bitcoinotc_path().read_text())
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "btc")) as g:
        frame = read_table(g.spark(), str(csv), "csv")
        g.ingest_spark(frame, **COLUMNS, props={"weight": "rating"}, source="btc")
        edges = {(s, d): p for s, d, p in g.edges()}
    assert set(edges) == set(bitcoin)  # one rating per pair: time and rating kept exactly
    for pair, [(ts, rating)] in bitcoin.items():
        props = edges[pair]
        assert (props["count"], props["first_ts"], props["weight"]) == (1, ts, rating)


def test_a_shuffled_frame_gives_the_same_graph_and_exact_time_cuts(
    spark, tmp_path, college, college_parquet
):
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        frame = read_table(g.spark(), college_parquet, "parquet")
        shuffled = frame.orderBy(F.rand(seed=7)).repartition(3)
        first = g.ingest_spark(shuffled, **COLUMNS, source="college")
        assert (first.rows, first.updates, first.rejected) == (59835, 59835, 0)
        assert _counts(g) == dict(pair_counts(college))
        assert g.stats().vertices == 1899
        for t in (1082100000.0, 1083000000.0, 1090000000.0):
            edges = g.snapshot(at=t).to_pandas()[1]
            cut = dict(
                zip(zip(edges["src"], edges["dst"], strict=True), edges["count"], strict=True)
            )
            assert cut == pair_counts_between(college, t), t
        again = g.ingest_spark(frame, **COLUMNS, source="college")  # file order: same ids
        assert (again.fingerprint, again.skipped) == (first.fingerprint, 59835)
        assert _counts(g) == dict(pair_counts(college))
        with pytest.raises(cr.SourceMismatch, match="source 'college' was ingested before"):
            g.ingest_spark(frame.limit(1000), **COLUMNS, source="college")


BAD_CSV = """src,dst,time,kind,w
1,2,10,add_edge,1
2,3,abc,add_edge,1
,3,11,add_edge,1
3,1,-5,add_edge,1
4,,12,add_edge,1
5,6,13,explode,1
7,,14,add_vertex,2
8,9,15,add_vertex,1
x,1,16,add_edge,1
1,2,nan,add_edge,1
2,1,17,,1
2,1,18,add_edge,4
"""
BAD_ROWS = [
    (2, "time is not a number: 'abc'"),
    (3, "source id is null"),
    (4, "negative time: '-5'"),
    (5, "target id is null"),
    (6, "unknown kind 'explode' (expected one of add_vertex, remove_vertex, add_edge, "),
    (8, "add_vertex takes no target id: '9'"),
    (9, "source id is not an integer: 'x'"),
    (10, "time is not finite: 'nan'"),
    (11, "kind is null"),
]


def test_bad_rows_refuse_the_ingest_or_go_to_the_rejects_table(spark, tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text(BAD_CSV)
    columns = dict(COLUMNS, kind="kind", props=["w"], ids="int")
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        frame = read_table(g.spark(), str(csv), "csv")
        with pytest.raises(cr.MalformedRecord) as refused:
            g.ingest_spark(frame, **columns, source="bad")
        assert (refused.value.line, refused.value.text) == (
            2,
            "src='2', dst=3, time='abc', kind='add_edge', w=1",
        )
        assert "time is not a number: 'abc' (9 bad rows in all; nothing ingested)" in str(
            refused.value
        )
        assert g.stats().vertices == 0 and g.status().sources == {}  # nothing half-applied
        rejects = tmp_path / "rejects.parquet"
        report = g.ingest_spark(frame, **columns, source="bad", on_error="skip", rejects=rejects)
        assert (report.rows, report.rejected, report.rejects) == (3, 9, str(rejects))
        table = pd.read_parquet(rejects).sort_values("row")
        assert [
            (r, reason[: len(want)])
            for r, reason, (_, want) in zip(table["row"], table["reason"], BAD_ROWS, strict=True)
        ] == BAD_ROWS
        assert list(table.columns) == ["source", "row", "reason", "src", "dst", "time", "kind", "w"]
        assert _counts(g) == {(1, 2): 1, (2, 1): 1}
        assert g.out_edges(2)[1]["w"] == 4 and g.vertex(7)["state"]["w"] == 2


def test_frames_that_cannot_make_updates_are_refused_before_spark_runs(spark, tmp_path):
    frame = spark.createDataFrame([(1.5, 2, 10)], "src double, dst long, time long")
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        with pytest.raises(ValueError, match="column 'src' is double: vertex ids are integers"):
            g.ingest_spark(frame, **COLUMNS, source="f")
        with pytest.raises(ValueError, match="no column 'when' in the DataFrame"):
            g.ingest_spark(frame, src="dst", dst="dst", time="when", source="f")
        with pytest.raises(ValueError, match="parts must be between 1 and the shard count 2"):
            g.ingest_spark(frame, **COLUMNS, source="f", parts=3)


def test_a_killed_source_actor_resumes_nothing_lost_or_doubled(
    spark, tmp_path, college, college_parquet
):
    log_dir = str(tmp_path / "g")
    with cr.GraphCluster(num_shards=2, log_dir=log_dir, batch_size=200, max_inflight=1) as g:
        frame = read_table(g.spark(), college_parquet, "parquet")
        job = g.ingest_spark(frame, **COLUMNS, source="college", wait=False)
        victim = job.jobs[0]
        while victim.progress().get("acked", 0) < 2000:
            assert not victim.done(), "the part ended before its source could be killed"
        kill_source(victim)
        report = job.wait(timeout=300)
        g.wait_idle()
        assert report.parts[0].skipped >= 2000  # resumed from what the shards logged
        assert report.updates == 59835 and _counts(g) == dict(pair_counts(college))


def test_cli_ingest_spark_csv(spark, tmp_path, college):
    csv = tmp_path / "college.csv"
    csv.write_text("a,b,t\n" + collegemsg_path().read_text().replace(" ", ","))
    log_dir = tmp_path / "g"
    args = ["ingest", "--spark", str(csv), "--format", "csv", "--src", "a", "--dst", "b"]
    result = CliRunner().invoke(main, [*args, "--time", "t", "--log-dir", str(log_dir)])
    assert result.exit_code == 0, result.output
    assert "ingested 59,835 rows of" in result.output and "in 2 parts" in result.output
    with cr.GraphCluster.open(log_dir, runtime="local") as g:  # the logs Ray wrote, read here
        assert _counts(g) == dict(pair_counts(college))
