"""The ingest benchmark still runs (small streams, this checkout only) on Ray."""

from __future__ import annotations

import json

import pytest

from bench.ingest import main


# long: see the other bench smoke tests (its last results are in bench/results/)
@pytest.mark.slow
@pytest.mark.long
def test_ingest_benchmark_writes_results(tmp_path):
    result = main(
        ["--copies", "1", "--skewed-events", "3000", "--before", "none"] + ["--out", str(tmp_path)]
    )
    college, skewed = result["runs"]["collegemsg x1 (now)"], result["runs"]["skewed (now)"]
    assert (college["updates"], college["vertices"], college["edges"]) == (59_835, 1_899, 20_296)
    assert college["entries"] == 2 * college["updates"]
    assert skewed["updates"] == 3_000 and skewed["snapshot_mid_edges"] > 0
    for run in (college, skewed):
        assert run["log_bytes_per_event"] > 0 and run["rss_bytes_per_edge"] > 0
    assert json.loads((tmp_path / "ingest.json").read_text())["shards"] == 2
    assert "| skewed (now) | 3,000 |" in (tmp_path / "ingest.md").read_text()
