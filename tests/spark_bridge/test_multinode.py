"""Spark through RayDP on a multi-node Ray cluster (two raylets on this machine): the
executor runs on another node than the shards, the snapshot crosses nodes through the
object store, and the analysis still equals networkx."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from chronoray.testing import oracle_graph

# long: two raylets and a Spark session (~2.5 min on a loaded machine); the default suite has
# shards on several nodes and Spark in tests/chronoray/test_cluster_nodes.py
pytestmark = [pytest.mark.ray, pytest.mark.long]

AT = 1090000000.0


def test_spark_executor_on_another_node(college, tmp_path):
    job = Path(__file__).with_name("multinode_job.py")
    done = subprocess.run(
        [sys.executable, str(job), str(AT)],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    free = report["free_cpus"]
    assert free[report["worker"]] == 0.0  # the executor holds the worker node's 2 CPUs
    assert free[report["head"]] == 1.0  # shards take no CPU; nothing else runs there
    components: dict[int, set[int]] = {}
    for vertex, label in report["components"].items():
        components.setdefault(label, set()).add(int(vertex))
    expected = nx.weakly_connected_components(oracle_graph(college, AT))
    assert sorted(map(sorted, components.values())) == sorted(map(sorted, expected))
