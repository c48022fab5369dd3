"""Spark from processes that join a cluster started by ``ray.cluster_utils.Cluster``
(issue 24: RayDP's master actor was reported cancelled before it started there). The
cause: the joining driver turned Ray's token authentication on (a token was saved in
``~/.ray/auth_token``) while the cluster_utils cluster ran without it, so the cluster could
not call the driver back and cancelled every actor it owned (the graph's controller too).
Started under the same rule, the CLI, as separate processes joining with ``--address``,
ingests and runs WCC on Spark; the components equal networkx's. A long runner (a cluster
of its own: ~4 min on a quiet machine, 13 min at load 100)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from chronoray.datasets import collegemsg_path

pytestmark = [pytest.mark.long]

_AT = "1083000000"


def test_spark_from_a_process_that_joined_a_cluster_utils_cluster(tmp_path):
    job = Path(__file__).with_name("joined_cluster_job.py")
    done = subprocess.run(
        [sys.executable, str(job), _AT], capture_output=True, text=True, timeout=1200, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "failed" not in report, report
    assert report["engine"] == "spark", report
    expected = nx.Graph()
    for line in collegemsg_path().read_text().splitlines()[:3000]:
        src, dst, ts = line.split()
        if float(ts) <= float(_AT):
            expected.add_edge(int(src), int(dst))
    assert report["info"]["components"] == nx.number_connected_components(expected)
    sizes = sorted(len(c) for c in nx.connected_components(expected))
    assert sorted(row["vertices"] for row in report["rows"]) == sizes  # every component
