"""The live-computation column benchmark still runs (one short paced run per mode, the
histogram's throughput in both modes, CollegeMsg once) on the session's Ray, and its
table is made from what it measured."""

from __future__ import annotations

import pytest

from bench.live_columns import _table, run, throughput

# long, as the other Ray benchmarks' smoke tests (about 50 s: seven graphs start);
# `./run bench` runs the benchmark and its last results are in bench/results/
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.long]


def test_live_columns_benchmark_measures_both_modes(ray_session, tmp_path):
    runs = [run(mode, 2000.0, 0.3, 2, tmp_path) for mode in ("rows", "batches")]
    for r in runs:
        assert r["samples"] == r["paced_updates"] == 600
        assert r["p50_ms"] <= r["p99_ms"] <= r["max_ms"]
    assert runs[0]["batches"] == 0 < runs[1]["batches"]
    pagerank = run("batches", 2000.0, 0.3, 2, tmp_path, "PageRank (tol 1e-6)")
    assert 0 < pagerank["samples"] <= 600 and pagerank["batches"] > 0
    rates = [
        throughput(name, mode, 1, 2, tmp_path)
        for name in ("no live computation", "degree histogram")
        for mode in (("batches",) if name.startswith("no ") else ("rows", "batches"))
    ]
    assert {r["updates"] for r in rates} == {59_835}
    assert [r["batches"] > 0 for r in rates] == [False, False, True]
    table = _table(
        {
            "shards": 2,
            "seconds": 0.3,
            "copies": 1,
            "machine": {"cpus": 2},
            "runs": [*runs, pagerank],
            "throughput": rates,
        }
    )
    assert "| degree histogram | 2,000 | batches | 600 of 600 |" in table
    assert "| PageRank (tol 1e-6) | 2,000 | batches |" in table
    assert "| degree histogram | rows | 59,835 |" in table
