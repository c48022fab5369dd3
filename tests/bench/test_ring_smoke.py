"""The ring benchmark still runs (tiny sizes, no Ray, before/after) and writes its tables."""

from __future__ import annotations

import json

from bench.ring import main


def test_ring_benchmark_writes_results(tmp_path):
    result = main(
        ["--vertices", "10", "--messages", "200", "--skip-ray", "--trials", "1"]
        + ["--out", str(tmp_path)]
    )
    runs = result["runs"]
    for name in ("now", "before"):
        assert runs[f"core-logged ({name})"]["executions"] == 200
        assert runs[f"core-ephemeral ({name})"]["executions"] == 200
    assert runs["core-logged (now)"]["log_bytes"] > 0
    assert "core-logged: now / before" in result["ratios"]
    assert json.loads((tmp_path / "ring.json").read_text())["messages"] == 200
    assert "| core-ephemeral (now) | 200 |" in (tmp_path / "ring.md").read_text()
