"""The reconstruction benchmark still runs (1,500 lines, no Ray) and its counts add up."""

from __future__ import annotations

import json

from bench.reconstruct import main


def test_reconstruct_benchmark_writes_consistent_results(tmp_path):
    result = main(
        [
            "--limit-lines", "1500",
            "--repeat", "2",
            "--intervals", "2500,1500",
            "--trials", "1",
            "--out", str(tmp_path),
        ]
    )  # fmt: skip
    saved = json.loads((tmp_path / "reconstruct.json").read_text())
    for key in ("ingest", "rate", "latency_vs_history", "summary", "reference", "entries"):
        assert key in saved
    assert set(saved["rate"]) == {"none", "2500", "1500"}
    assert set(saved["latency_vs_history"]) == {"none", "2500"}
    for run in saved["rate"].values():
        for key in ("replayed", "checkpoint", "checkpoint_load_seconds", "latency", "history"):
            assert key in run
    assert "| none |" in (tmp_path / "reconstruct.md").read_text()

    entries = result["entries"]
    assert entries == 2 * 2 * 1500  # every edge: one execution at src, one at dst
    for name, run in result["ingest"].items():
        assert run["entries"] == entries
        assert bool(run["checkpoints"]) == (name != "none")

    # At the end: full replay replays every entry, checkpoints leave only the tail.
    rate = result["rate"]
    full = rate["none"]
    assert (full["checkpoint"], full["replayed"], full["history"]) == (0, entries, entries)
    for name in ("2500", "1500"):
        run = rate[name]
        assert run["checkpoint"] == result["ingest"][name]["checkpoints"][-1] > 0
        assert 0 < run["replayed"] == entries - run["checkpoint"] < entries
        assert (run["vertices"], run["edges"]) == (full["vertices"], full["edges"])

    # At times T: the same cut whatever the interval, never more replayed than without.
    lat = result["latency_vs_history"]
    for rows in lat.values():
        assert [row["fraction"] for row in rows] == [0.25, 0.5, 0.75, 1.0]
        histories = [row["history"] for row in rows]
        assert histories == sorted(histories) and histories[-1] == entries
        for row in rows:
            assert row["replayed"] <= row["history"] - row["checkpoint"]
            assert row["cut"] == row["checkpoint"] + row["replayed"] <= row["history"]
            assert row["scanned"] == entries - row["checkpoint"]
    for plain, checkpointed in zip(lat["none"], lat["2500"], strict=True):
        assert plain["checkpoint"] == 0 and plain["replayed"] == plain["cut"]
        assert checkpointed["cut"] == plain["cut"]
        assert checkpointed["history"] == plain["history"]
        assert checkpointed["replayed"] <= plain["replayed"]
    assert lat["none"][-1]["replayed"] == entries
    assert lat["2500"][-1]["replayed"] == rate["2500"]["replayed"] < entries
