"""Found by the chaos campaign's node round: a snapshot reader asked for the shards' nodes,
a node was removed, and the snapshot's tasks, bound to that node, failed with Ray's
``TaskUnschedulableError`` ("the node specified via NodeAffinitySchedulingStrategy doesn't
exist any more"). With the logs on shared storage the shard restarts on another node: the
snapshot must ask for the nodes again and be exact. The race is made certain here: the
graph's first answer for the shards' nodes is the one it gave before the node went away;
the cluster, the removal, the restart and the snapshot are real. Each run is a driver
process of its own (a ``ray.cluster_utils`` cluster)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from chronoray.datasets import collegemsg_path
from chronoray.testing import edge_oracle, pair_counts_between

pytestmark = [pytest.mark.slow]

_SCRIPT = r"""
import json, sys
import ray
import chronoray as cr
from chronoray.testing import simulated_cluster

logs, edges, at = sys.argv[1], sys.argv[2], float(sys.argv[3])
cluster = simulated_cluster(2)
ray.init(address=cluster.address, log_to_driver=False)
try:
    g = cr.GraphCluster.create("node-race", num_shards=2, log_dir=logs, storage="shared",
                               batch_size=200, ray_address=cluster.address)
    g.ingest(cr.SnapEdgeSource(edges))
    runtime = g._runtime
    before = runtime.shard_node_ids()
    doomed = next(n for n in cluster.worker_nodes if n.node_id in before)
    cluster.remove_node(doomed, allow_graceful=False)
    asked = runtime.shard_node_ids  # waits for the shard that lost its node to restart
    stale = [before]
    runtime.shard_node_ids = lambda: stale.pop() if stale else asked()
    table = g.snapshot(at=at).edges().to_pydict()
    pairs = [list(r) for r in zip(table["src"], table["dst"], table["count"], strict=True)]
    out = {"stale_used": not stale, "moved": before != asked(), "pairs": pairs}
    g.shutdown()
finally:
    ray.shutdown()
    cluster.shutdown()
print("RESULT " + json.dumps(out))
"""


@pytest.mark.ray
def test_a_snapshot_whose_node_was_just_lost_asks_for_the_nodes_again(tmp_path):
    edges = tmp_path / "edges.txt"
    edges.write_text("".join(collegemsg_path().read_text().splitlines(True)[:3000]))
    oracle = edge_oracle(edges, "snap")
    at = sorted(ts for events in oracle.values() for ts, _ in events)[2000]
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "g"), str(edges), repr(at)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    result = json.loads(re.search(r"^RESULT (.*)$", done.stdout, re.M).group(1))
    assert result["stale_used"] and result["moved"], result
    assert {(s, d): c for s, d, c in result["pairs"]} == pair_counts_between(oracle, at)
