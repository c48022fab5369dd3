"""The CEP benchmark still runs (a tiny input, in process) and writes its JSON and table."""

from __future__ import annotations

import json

from bench.cep import main


def test_cep_benchmark_writes_results(tmp_path):
    result = main(["--events", "3000", "--days", "4", "--runtime", "local", "--instances", "2",
                   "--profile", "500", "--latency", "0.5", "--out", str(tmp_path)])  # fmt: skip
    for name in ("q1", "q2-component", "q2-clique"):
        row = result["queries"][name]
        assert row["many"]["equal"] and row["one"]["equal"] and row["lines"] > 0
        assert row["latency"][0]["equal"] and row["java"]["earlier"]
    assert json.loads((tmp_path / "cep.json").read_text())["benchmark"] == "cep"
    assert "| q2-clique (" in (tmp_path / "cep.md").read_text()
