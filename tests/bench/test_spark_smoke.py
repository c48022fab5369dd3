"""The Spark benchmark still runs (small sizes, the session's Ray and Spark) and its two
hand-over paths and two PageRank engines agree."""

from __future__ import annotations

import json

import pytest

from bench.spark import main

# long (the default suite stays under its time budget): `./run bench` runs this bench and
# its last results are in bench/results/; run the smoke test with `-m long`
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.long]


def test_spark_benchmark_writes_consistent_results(spark, tmp_path):
    result = main(
        ["--edges", "20000", "--trials", "1", "--limit-lines", "3000", "--tol", "1e-7",
         "--out", str(tmp_path)]
    )  # fmt: skip
    saved = json.loads((tmp_path / "spark.json").read_text())
    assert saved["handover"]["edges"] == 20000
    assert len(saved["handover"]["trials"]["direct"]) == 1
    assert saved["pagerank"]["max_difference"] < 1e-6
    assert saved["pagerank"]["spark_iterations"] == result["pagerank"]["spark_iterations"] > 0
    assert "Parquet / direct" in (tmp_path / "spark.md").read_text()
