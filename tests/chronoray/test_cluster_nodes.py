"""A graph spread over a simulated 3-node Ray cluster (``ray.cluster_utils.Cluster``),
each scenario a driver process of its own (``cluster_job.py``): placement, source actors,
snapshots and Spark across nodes; node loss with shared and with local storage."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chronoray.datasets import bitcoinotc_path
from chronoray.testing import edge_oracle, pair_counts, pair_counts_between

pytestmark = [pytest.mark.slow]

_JOB = Path(__file__).with_name("cluster_job.py")


def _run(scenario: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(_JOB), scenario], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(re.search(r"^RESULT (.*)$", done.stdout, re.M).group(1))


def _counts(rows: list[list]) -> dict[tuple[int, int], int]:
    return {(s, d): c for s, d, c in rows}


@pytest.mark.parametrize(
    "spark", [False, pytest.param(True, marks=pytest.mark.long)], ids=["actors", "spark"]
)
def test_shards_spread_over_nodes_sources_snapshots_and_spark(college, spark):
    r = _run("placement-spark" if spark else "placement")
    assert len(r["shard_nodes"]) >= 2  # Ray's state API: the shard actors' nodes
    assert r["manifest_nodes"] == ["n0", "n1", "n2"]  # round-robin, the driver's node first
    assert r["updates"] == 59835
    assert _counts(r["edges"]) == dict(pair_counts(college))
    assert _counts(r["snapshot"]) == pair_counts_between(college, r["at"])
    bitcoin = edge_oracle(bitcoinotc_path(), "bitcoin-csv")
    assert _counts(r["btc_edges"]) == dict(pair_counts(bitcoin))
    if spark:  # (tests/spark_bridge/test_multinode.py checks the same on 2 nodes, by default)
        assert len(r["executor_nodes"]) == 1  # the Spark executor holds 2 CPUs of a worker
        assert r["executor_nodes"][0] != r["head"]
        assert r["wcc_vertices"] > 0
    assert r["running"] == ["btc", "college"] and r["after_stop"] == []


@pytest.mark.long  # chaos: about a minute each
@pytest.mark.parametrize("storage", ["shared", "local"])
def test_node_loss_while_a_source_ingests(college, storage):
    r = _run(f"loss-{storage}")
    assert r["updates"] == 59835
    assert _counts(r["edges"]) == dict(pair_counts(college))
    for at, rows in r["snapshots"].items():
        assert _counts(rows) == pair_counts_between(college, float(at)), at
    assert r["restarted"][2]  # shard 2 lost its node and was restarted
    if storage == "local":
        assert r["status"][0] == (
            "shard 2 unavailable: its log is on node n2, which is not in the cluster; "
            "it comes back when that node does"
        )
        assert r["status"][1].startswith("source collegemsg.txt: waiting for shard 2")
    else:
        assert r["status"] == []
