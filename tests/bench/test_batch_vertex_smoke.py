"""The batch-behavior benchmark runs at a tiny size and writes a consistent table."""

from __future__ import annotations

import json

from bench import batch_vertex


def test_batch_vertex_benchmark_writes_results(tmp_path):
    result = batch_vertex.main(
        ["--accounts", "50", "--messages", "2000", "--trials", "1", "--out", str(tmp_path)]
    )
    runs = result["runs"]
    assert set(runs) == set(batch_vertex.CLASSES)
    for run in runs.values():
        assert run["us_per_message"] > 0
        assert run["framework_us_per_message"] == run["us_per_message"] - run["user_us_per_message"]
        assert 0 < run["shard_framework_us_per_message"] < run["us_per_message"]
    assert runs["no user code (built-in)"]["user_us_per_message"] == 0
    assert runs["on_updates (batch)"]["user_us_per_message"] > 0
    saved = json.loads((tmp_path / "batch_vertex.json").read_text())
    assert saved["messages"] == 2000
    table = (tmp_path / "batch_vertex.md").read_text()
    assert "| on_updates (batch) |" in table and "_run_batch" in table
