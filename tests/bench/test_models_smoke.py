"""The processing-model benchmark still runs (3,000 lines, 1 and 2 partitions on Ray) and
every model's PageRank in it agrees with networkx."""

from __future__ import annotations

import json

import pytest

from bench.models import main

pytestmark = [pytest.mark.ray, pytest.mark.long]  # a benchmark smoke test: the long set


def test_models_benchmark_writes_consistent_results(ray_session, tmp_path):
    result = main(
        [
            "--limit-lines",
            "3000",
            "--partitions",
            "1,2",
            "--trials",
            "1",
            "--no-spark",  # Spark has its own tests; its session costs seconds
            "--out",
            str(tmp_path),
        ]  # fmt: skip
    )
    saved = json.loads((tmp_path / "models.json").read_text())
    for key in ("snapshot", "pagerank", "pause_shift_resume", "spark", "machine"):
        assert key in saved
    rows = result["pagerank"]
    measured = [r for r in rows if r["iterations"] is not None]
    assert {(r["model"], r["where"], r["partitions"]) for r in measured} == {
        (m, w, p)
        for m in ("pregel", "scatter_gather")
        for w, p in (("local", 1), ("ray", 1), ("ray", 2))
    }
    assert all(r["max_error"] < 1e-6 for r in measured)
    assert len({r["iterations"] for r in measured if r["model"] == "pregel"}) == 1
    shift = result["pause_shift_resume"]
    assert [(r["earlier_at_fraction"], r["pause_after"]) for r in shift["runs"]] == [
        (0.9, 30), (0.9, "converged"), (0.99, 30), (0.99, "converged")
    ]  # fmt: skip
    assert all(run["max_error"] < 1e-6 and run["resumed_supersteps"] > 0 for run in shift["runs"])
    assert "| pregel | ray | 2 |" in (tmp_path / "models.md").read_text()
