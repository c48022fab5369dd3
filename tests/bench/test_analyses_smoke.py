"""The analyses benchmark still runs (small sizes, no Spark, no Raphtory) and its engines
agree with networkx."""

from __future__ import annotations

import json

import pytest

from bench.analyses import main

pytestmark = [pytest.mark.ray, pytest.mark.long]  # a benchmark smoke test: the long set


def test_analyses_benchmark_writes_consistent_results(ray_session, tmp_path):
    result = main(
        ["--limit-lines", "3000", "--at", "1083000000", "--skewed-events", "20000",
         "--sizes", "2000,6000", "--trials", "1", "--no-spark", "--raphtory-python", "",
         "--out", str(tmp_path)]
    )  # fmt: skip
    saved = json.loads((tmp_path / "analyses.json").read_text())
    assert saved["college"]["kernel_max_error"] < 1e-8
    assert all(p["max_error"] < 1e-8 for p in saved["college"]["pregel"])
    assert {p["form"] for p in result["college"]["pregel"]} == {"arrays", "vertex"}
    assert [r["edges"] for r in saved["crossover"]] == [2000, 6000]
    assert not saved["college"]["raphtory"]["available"]
    text = (tmp_path / "analyses.md").read_text()
    assert "| PageRank on a snapshot" in text and "## Profiles" in text
    assert (tmp_path / "analyses_crossover.png").stat().st_size > 0
