"""The chaos runner: a short run in the default suite (shard, source and gateway kills
while two sources feed 4 shards; the graph now, past cuts and what the clients were told
checked against the oracle), and the campaign of at least 100 kills, node kills
included, as a long runner (``pytest -m long``; ``python -m bench.chaos``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chronoray.testing import ChaosPlan, run_chaos


@pytest.mark.ray
@pytest.mark.slow
def test_short_chaos_run_loses_nothing_and_doubles_nothing(ray_session, tmp_path):
    plan = ChaosPlan(seed=7, kills=4, copies=1, past_times=2, gap=(0.3, 1.0))
    report = run_chaos(plan, tmp_path)
    assert len(report.kills) == 4, report.kills
    assert report.updates == 59835 + 35592
    assert report.final is not None and report.final.exact, report.failures()
    assert report.gateway_told.get("stats", 0) > 0
    assert not report.gateway_problems
    assert report.live_histogram == "exact" or report.live_histogram.startswith("refused")
    assert len(report.cuts) == 2  # past cuts are judged by the campaign (issue 20 owns a bug)


@pytest.mark.long
def test_chaos_campaign(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=7200,
    )
    result = json.loads((tmp_path / "chaos.json").read_text())
    assert result["total_kills"] >= 100
    assert done.returncode == 0, (tmp_path / "chaos.md").read_text()
