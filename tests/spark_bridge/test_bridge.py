"""A snapshot goes to Spark (Ray -> Spark) and a Spark result comes back (Spark -> Ray),
in the session's Ray cluster, with RayDP executors as Ray actors."""

from __future__ import annotations

import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.testing import pair_counts_between
from spark_bridge import snapshot_to_spark, spark_session, to_arrow, to_pandas

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_snapshot_to_spark_and_back(ray_session, spark, tmp_path, college):
    t = 1090000000.0
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        snap = g.snapshot(at=t)
    assert spark_session() is spark  # one session, reused
    vertices, edges = snapshot_to_spark(spark, snap)
    expected = pair_counts_between(college, t)
    assert edges.count() == len(expected) and vertices.count() == snap.meta.vertices
    per_source = edges.groupBy("src").sum("count")  # computed by Spark
    back = to_pandas(per_source)  # Spark -> Ray -> pandas
    sent = dict(zip(back["src"], back["sum(count)"], strict=True))
    oracle: dict[int, int] = {}
    for (src, _), n in expected.items():
        oracle[src] = oracle.get(src, 0) + n
    assert sent == oracle
    assert to_arrow(edges.select("src", "dst")).num_rows == len(expected)
