"""The CEP benchmark still runs (a tiny stream, in process) and writes its JSON and table."""

from __future__ import annotations

import json

from bench.cep import main


def test_cep_benchmark_writes_results(tmp_path):
    result = main(
        [
            "--events",
            "3000",
            "--days",
            "4",
            "--runtime",
            "local",
            "--profile",
            "500",
            "--out",
            str(tmp_path),
        ]  # fmt: skip
    )
    for query in ("q1", "q2"):
        q = result["queries"][query]
        assert q["equal"] and q["lines"] > 0
        assert q["distributed"]["events"] == q["reference"]["events"] > 0
    assert json.loads((tmp_path / "cep.json").read_text())["benchmark"] == "cep"
    assert "| Q2 | distributed |" in (tmp_path / "cep.md").read_text()
