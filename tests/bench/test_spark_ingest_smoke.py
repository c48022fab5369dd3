"""The Spark ingestion benchmark still runs (a small table, the session's Ray and Spark)
and both paths build the same graph."""

from __future__ import annotations

import json

import pytest

from bench.spark_ingest import main

# long (the default suite stays under its time budget): `./run bench` runs this bench and
# its last results are in bench/results/; run the smoke test with `-m long`
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.long]


def test_spark_ingest_benchmark_writes_results(spark, tmp_path):
    result = main(["--rows", "20000", "--trials", "1", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "spark_ingest.json").read_text())
    assert saved["rows"] == 20000 and saved["runs"]["spark"]["rows"] == 20000
    assert saved["runs"]["file"]["rows"] == 20000
    assert saved["spark / file"] == result["spark / file"] > 0
    assert saved["runs"]["spark"]["spark_seconds"] > 0
    assert "**Spark / file:" in (tmp_path / "spark_ingest.md").read_text()
