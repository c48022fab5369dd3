"""The cluster benchmark still runs (tiny size, one trial, its own simulated cluster in a
process of its own) and writes its JSON and table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# long (the default suite stays under its time budget): `./run bench` runs this bench and
# its last results are in bench/results/; run the smoke test with `-m long`
pytestmark = [pytest.mark.slow, pytest.mark.long]


def test_cluster_benchmark_writes_results(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.cluster",
            "--lines",
            "3000",
            "--trials",
            "1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "cluster.json").read_text())
    assert result["updates"] == 3000
    assert result["runs"]["spread / source actor"]["nodes"] == ["n0", "n1"]
    assert result["runs"]["pack / driver"]["nodes"] == ["n0"]
    assert "| pack / source actor | n0 |" in (tmp_path / "cluster.md").read_text()
