"""``chronoray pipeline`` (docs/spark.md's pipeline) runs, and its Parquet result is what
the ratings file says about the graph at the snapshot's time.

In the long set (2-3 min: a Ray cluster, a Spark session, a live PageRank and two hand-overs
in one command); the default suite checks its parts -- ``ingest_spark`` against the files in
``test_spark_ingest.py``, ``snapshot_to_spark`` in ``test_bridge.py`` -- and the docs runner
runs docs/spark.md's pipeline as written."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from chronoray.cli import main
from chronoray.pipeline import AT

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.long]


def test_pipeline_writes_the_trust_of_every_rated_vertex_at_t(spark, tmp_path, bitcoin):
    result = CliRunner().invoke(main, ["pipeline", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "35,592 ratings" in result.output and "wrote" in result.output
    got = pd.read_parquet(tmp_path / "trust.parquet").set_index("vertex")
    ratings = [
        (dst, rating) for (_, dst), events in bitcoin.items() for ts, rating in events if ts <= AT
    ]
    frame = pd.DataFrame(ratings, columns=["vertex", "rating"])
    expected = frame.groupby("vertex")["rating"].agg(
        raters="count",
        positive=lambda r: int((r > 0).sum()),
        negative=lambda r: int((r < 0).sum()),
        mean_rating="mean",
    )
    assert list(got.index) == sorted(expected.index)
    pd.testing.assert_frame_equal(got, expected.loc[got.index], check_dtype=False)
