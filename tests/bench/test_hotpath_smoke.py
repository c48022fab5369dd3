"""The hot-path benchmark still runs (small workloads) and builds the issue's table."""

from __future__ import annotations

import json

from bench.hotpath import main


def test_hotpath_benchmark_writes_profile_memory_and_table(tmp_path):
    result = main(["--scale", "0.01", "--lines", "5", "--out", str(tmp_path)])
    assert set(result["profiles"]) == {"ring", "collegemsg"}
    assert "ncalls" in result["profiles"]["ring"]["top"]
    assert set(result["memory"]) == {"now", "before"}
    assert result["memory"]["now"]["bytes_per_vertex_beyond_state"] > 0
    # no other results in tmp_path: the table has the memory row only
    assert [row[0] for row in result["table"]] == [
        "memory per vertex beyond its state (in-process core)"
    ]
    assert json.loads((tmp_path / "hotpath.json").read_text())["benchmark"] == "hotpath"
    assert "| measure | issue | before | now | target |" in (tmp_path / "hotpath.md").read_text()
