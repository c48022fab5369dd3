"""The chaos runner: a short run in the default suite (a shard, a source, the controller
and the gateway killed, in the order the seed draws, while two sources feed 4 shards;
the graph now, past cuts and what the clients were told checked against the oracle),
and the campaign of at least 100 kills, node kills included, as a long runner
(``pytest -m long``; ``python -m bench.chaos``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chronoray.testing import ChaosPlan, run_chaos


@pytest.mark.ray
@pytest.mark.long  # 1-2 min, over the default suite's budget: bench/results/long_tests.md
def test_short_chaos_run_loses_nothing_and_doubles_nothing(ray_session, tmp_path):
    # x3: each kill waits for its target to answer again (a source or the controller
    # restarting takes seconds), and the four must all fall while the sources still run
    plan = ChaosPlan(seed=14, kills=4, copies=3, past_times=2, gap=(0.3, 1.0))
    assert [target for _, target, _ in plan.schedule()] == [
        "source",
        "shard",
        "controller",
        "gateway",
    ]
    report = run_chaos(plan, tmp_path)
    assert [k.target for k in report.kills] == ["source", "shard", "controller", "gateway"]
    assert all(k.recovered_after is not None for k in report.kills), report.kills
    assert "not killed" not in " ".join(k.detail for k in report.kills), report.kills
    assert report.counts()["per_target"]["controller"] == 1
    assert report.updates == 3 * 59835 + 35592
    assert report.final is not None and report.final.exact, report.failures()
    assert len(report.cuts) == 2 and all(c.exact for c in report.cuts), report.failures()
    assert all(c.exact for c in report.readers), report.failures()
    assert report.gateway_told.get("stats", 0) > 0
    assert not report.gateway_problems
    assert report.live_histogram.startswith("exact (restarted; told: live computation"), (
        report.live_histogram
    )
    assert not report.failures()


def test_a_chaos_plan_draws_its_kills_from_its_seed_alone():
    plan = ChaosPlan(seed=5, kills=30, targets=("shard", "controller", "node"))
    again = ChaosPlan(seed=5, kills=30, targets=("shard", "controller", "node"))
    assert plan.schedule() == again.schedule()
    targets = {target for _, target, _ in plan.schedule()}
    assert targets == {"shard", "controller"}  # no cluster: no node kills
    assert all(0.5 <= gap <= 2.0 and 0 <= pick < 1 for gap, _, pick in plan.schedule())
    assert ChaosPlan().targets == ("shard", "source", "gateway", "controller")
    cycled = ChaosPlan(seed=5, kills=5, targets=("node", "shard", "node", "source"), cycle=True)
    cycled.cluster = object()  # only its presence matters to the schedule
    assert [t for _, t, _ in cycled.schedule()] == ["node", "shard", "node", "source", "node"]
    with pytest.raises(ValueError, match="chaos targets"):
        ChaosPlan(targets=("shard", "disk"))
    with pytest.raises(ValueError, match="no cluster"):
        ChaosPlan(targets=("node",)).schedule()


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
