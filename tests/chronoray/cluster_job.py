"""Run by test_cluster_nodes.py in its own process (a driver of its own cluster): scenarios
on a simulated 3-node Ray cluster (``chronoray.testing.simulated_cluster``, nodes labelled
n0 (head), n1, n2). Prints one ``RESULT {...}`` JSON line.

* ``placement``: named graphs spread over the nodes (checked through Ray's state API),
  CollegeMsg and bitcoin-otc fed by source actors, a past snapshot; ``placement-spark``
  adds a Spark analysis whose executor runs on a worker node.
* ``loss-shared`` / ``loss-local``: node n2 (holding shard 2) is removed while a source
  actor ingests CollegeMsg; shared storage: the shard restarts elsewhere; local storage:
  the graph reports the missing shard until a node labelled n2 comes back.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from typing import Any

import ray

import chronoray as cr
from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.testing import free_port, simulated_cluster


def _pairs(snapshot: Any) -> list[list[Any]]:
    table = snapshot.edges().to_pydict()
    return [list(row) for row in zip(table["src"], table["dst"], table["count"], strict=True)]


def _times() -> list[float]:
    lines = collegemsg_path().read_text().splitlines()
    return [float(lines[i].split()[2]) for i in (10_000, 30_000, 50_000, len(lines) - 1)]


def placement(logs: str, spark: bool) -> dict[str, Any]:
    from ray._private.state import state
    from ray.util.state import list_actors

    # a Spark executor asks for 2 CPUs: the head has 1, so the executor runs on a worker
    # (3 CPUs: one stays free for the snapshot tasks that read that worker's shard log)
    cluster = simulated_cluster(
        3, include_dashboard=True, dashboard_port=free_port(), num_cpus=3, head_cpus=1
    )
    ray.init(address=cluster.address, namespace="chronoray", log_to_driver=False)
    try:
        g = cr.GraphCluster.create(
            "college",
            num_shards=3,
            log_dir=f"{logs}/college",
            ray_address=cluster.address,
            spark_executor_cores=2,
        )
        shard_nodes = sorted(
            {a.node_id for a in list_actors(filters=[("class_name", "=", "ShardWorker")])}
        )
        report = g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        at = _times()[1]
        snap = g.snapshot(at=at)
        btc = cr.GraphCluster.create(
            "btc", num_shards=2, log_dir=f"{logs}/btc", ray_address=cluster.address
        )
        btc.ingest(cr.BitcoinCsvSource(bitcoinotc_path()))
        btc_edges = [[s, d, p["count"]] for s, d, p in btc.edges()]
        result: dict[str, Any] = {}
        if spark:
            g.spark()
            free = {n: r.get("CPU", 0.0) for n, r in state.available_resources_per_node().items()}
            total = {n["NodeID"]: n["Resources"]["CPU"] for n in ray.nodes() if n["Alive"]}
            result["executor_nodes"] = [n for n, cpus in free.items() if cpus <= total[n] - 2]
            result["wcc_vertices"] = g.analyze("wcc", at=at, engine="spark").info["vertices"]
        result |= {
            "shard_nodes": shard_nodes,
            "manifest_nodes": g.manifest.shard_nodes,
            "updates": report.updates,
            "edges": [[s, d, p["count"]] for s, d, p in g.edges()],
            "at": at,
            "snapshot": _pairs(snap),
            "btc_edges": btc_edges,
            "head": ray.get_runtime_context().get_node_id(),
            "running": cr.GraphCluster.running(),
        }
        if spark:
            from spark_bridge import stop_spark

            stop_spark()
        btc.shutdown()
        g.shutdown()
        result["after_stop"] = cr.GraphCluster.running()
        return result
    finally:
        ray.shutdown()
        cluster.shutdown()


def node_loss(logs: str, storage: str) -> dict[str, Any]:
    cluster = simulated_cluster(3)
    ray.init(address=cluster.address, namespace="chronoray", log_to_driver=False)
    try:
        g = cr.GraphCluster.create(
            "loss",
            num_shards=3,
            log_dir=f"{logs}/loss",
            storage=storage,
            batch_size=500,
            ray_address=cluster.address,
        )
        doomed = next(
            n
            for n in cluster.worker_nodes
            if n.node_id != ray.get_runtime_context().get_node_id() and _label(n) == "n2"
        )
        job = g.ingest(cr.SnapEdgeSource(collegemsg_path()), wait=False)
        while job.progress().get("acked", 0) < 15_000:
            assert not job.done(), "ingestion ended before the node could be removed"
            time.sleep(0.05)
        cluster.remove_node(doomed)
        seen: list[str] = []
        if storage == "local":
            while True:  # the graph says what is missing, instead of hanging without words
                status = g.status()
                waiting = [s.get("waiting") for s in status.sources.values()]
                if status.missing and any(waiting):
                    seen = status.describe()
                    break
                assert not job.done(), "ingestion completed without the node holding shard 2"
                time.sleep(0.2)
            cluster.add_node(
                num_cpus=1, object_store_memory=96 * 1024 * 1024, labels={"chronoray-node": "n2"}
            )
        report = job.wait(timeout=600)
        g.wait_idle()
        result = {
            "status": seen,
            "updates": report.updates,
            "edges": [[s, d, p["count"]] for s, d, p in g.edges()],
            "snapshots": {str(t): _pairs(g.snapshot(at=t)) for t in _times()},
            "restarted": [s.restarted for s in g.stats().shards],
        }
        g.shutdown()
        return result
    finally:
        ray.shutdown()
        cluster.shutdown()


def _label(node: Any) -> str:
    return node._ray_params.labels.get("chronoray-node", "")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as logs:
        scenario = sys.argv[1]
        if scenario.startswith("placement"):
            out = placement(logs, spark=scenario == "placement-spark")
        else:
            out = node_loss(logs, scenario.removeprefix("loss-"))
    print("RESULT " + json.dumps(out))
