"""The live benchmark still runs (tiny sizes, in-process) and writes its JSON and table."""

from __future__ import annotations

import json

from bench.live import main


def test_live_benchmark_writes_results(tmp_path):
    result = main(
        [
            "--runtime",
            "local",
            "--rates",
            "2000,5000",
            "--seconds",
            "0.1",
            "--updates",
            "300",
            "--trials",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    assert [run["updates"] for run in result["latency"]] == [200, 500]
    assert all(run["p50_ms"] <= run["p99_ms"] <= run["p999_ms"] for run in result["latency"])
    assert result["throughput"]["WCC"]["updates"] == 300
    assert json.loads((tmp_path / "live.json").read_text())["benchmark"] == "live"
    assert "| PageRank (tol 1e-6) | 300 |" in (tmp_path / "live.md").read_text()
