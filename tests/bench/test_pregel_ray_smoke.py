"""The Pregel-on-Ray benchmark still runs (one trial, its own Ray) and folds its JSON
line into the before/after table; its ranks agree with networkx."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.long]  # a benchmark smoke test: the long set

SCRIPT = Path(__file__).parents[2] / "bench" / "pregel_ray.py"


def test_pregel_ray_benchmark_measures_and_reports(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1])}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--label", "smoke", "--trials", "1"],
        capture_output=True, text=True, env=env, timeout=900, check=True,
    )  # fmt: skip
    line = next(x for x in done.stdout.splitlines() if x.startswith("{"))
    got = json.loads(line)
    assert (got["vertices"], got["edges"]) == (1753, 18385)
    for form in ("arrays", "vertex", "local"):
        assert got[form]["max_error"] < 1e-6 and got[form]["supersteps"] == 86
    arrays = got["arrays"]
    assert arrays["setup"] + arrays["supersteps_seconds"] <= arrays["seconds"]
    (tmp_path / "smoke.jsonl").write_text(line + "\n")
    table = subprocess.run(
        [sys.executable, str(SCRIPT), "--report", str(tmp_path / "smoke.jsonl")],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert table.splitlines()[2].startswith("| smoke | 1 x 1 |")
