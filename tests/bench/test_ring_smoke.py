"""The ring benchmark still runs (tiny sizes, no Ray) and writes its JSON and table."""

from __future__ import annotations

import json

from bench.ring import main


def test_ring_benchmark_writes_results(tmp_path):
    result = main(
        [
            "--vertices",
            "10",
            "--messages",
            "200",
            "--skip-ray",
            "--trials",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    assert result["runs"]["core-logged"]["executions"] == 200
    assert json.loads((tmp_path / "ring.json").read_text())["messages"] == 200
    assert "| core-ephemeral | 200 |" in (tmp_path / "ring.md").read_text()
