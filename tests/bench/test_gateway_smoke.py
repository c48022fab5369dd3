"""The gateway benchmark still runs (tiny size, one trial, in a process of its own) and
writes its JSON and table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# long (the default suite stays under its time budget): `./run bench` runs this bench and
# its last results are in bench/results/; run the smoke test with `-m long`
pytestmark = [pytest.mark.slow, pytest.mark.long]


def test_gateway_benchmark_writes_results(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bench.gateway", "--lines", "2000", "--batch", "250"]
        + ["--trials", "1", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "gateway.json").read_text())
    assert result["records"] == 2000
    assert set(result["runs"]) == {
        "in-process, 1 feeder",
        "gRPC, 1 feeder",
        "in-process, 4 feeders",
        "gRPC, 4 feeders",
    }
    for run in result["runs"].values():
        assert run["records"] == 2000 and run["batches"] >= 8
        assert 0 < run["ack_p50_ms"] <= run["ack_p99_ms"]
    assert "| gRPC, 4 feeders |" in (tmp_path / "gateway.md").read_text()
