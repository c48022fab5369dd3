"""The reconstruction benchmark still runs (1,500 lines, no Ray, before/after) and its
counts add up."""

from __future__ import annotations

import json

from bench.reconstruct import main


def test_reconstruct_benchmark_writes_consistent_results(tmp_path):
    result = main(
        ["--limit-lines", "1500", "--repeat", "2", "--interval", "1000", "--trials", "1"]
        + ["--out", str(tmp_path)]
    )
    saved = json.loads((tmp_path / "reconstruct.json").read_text())
    assert set(saved["runs"]) == {"now, default", "now, none", "before, default", "before, none"}
    entries = result["entries"]
    assert entries == 2 * 2 * 1500  # every edge: one execution at src, one at dst
    for name, run in result["runs"].items():
        assert run["entries"] == run["build"]["entries"] == entries, name
        assert bool(run["build"]["checkpoints"]) == name.endswith("default"), name
        end = run["end"]
        # at the end: everything after the start checkpoint is replayed
        assert end["checkpoint"] + end["replayed"] == entries, name
        cuts = run["cuts"]
        assert [c["fraction"] for c in cuts] == [0.25, 0.5, 0.75, 1.0]
        assert [c["bound"] for c in cuts] == sorted(c["bound"] for c in cuts)
    for log in ("default", "none"):  # both trees rebuild the same graphs
        now, before = result["runs"][f"now, {log}"], result["runs"][f"before, {log}"]
        for a, b in zip(now["cuts"], before["cuts"], strict=True):
            assert (a["vertices"], a["edges"]) == (b["vertices"], b["edges"])
    for cut in result["runs"]["now, none"]["cuts"]:  # format 2 decodes a prefix
        assert cut["replayed"] <= cut["decoded"] <= entries
    assert "full replay: now / before" in result["summary"]
    assert "| now, none |" in (tmp_path / "reconstruct.md").read_text()
