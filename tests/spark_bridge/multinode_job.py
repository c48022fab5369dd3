"""Run by test_multinode.py in its own process: a two-node Ray cluster on this machine
(``ray.cluster_utils.Cluster``), the graph's shards and logs on the head node, the Spark
executor on the worker node (the only one with the 2 CPUs it asks for); WCC of the cut at
``argv[1]``, printed as JSON."""

from __future__ import annotations

import json
import sys
import tempfile

import ray
from ray._private.state import state
from ray.cluster_utils import Cluster

import chronoray as cr
from chronoray.datasets import collegemsg_path
from spark_bridge import spark_session, stop_spark, to_pandas


def main(at: float) -> None:
    store = 128 * 1024 * 1024
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": store, "include_dashboard": False},
    )
    worker = cluster.add_node(num_cpus=2, object_store_memory=store)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="chronoray", log_to_driver=False)
    try:
        with (
            tempfile.TemporaryDirectory() as logs,
            cr.GraphCluster(num_shards=2, log_dir=logs, ray_address=cluster.address) as g,
        ):
            g.ingest(cr.SnapEdgeSource(collegemsg_path()))
            spark_session(executor_cores=2)
            free = {n: r.get("CPU", 0.0) for n, r in state.available_resources_per_node().items()}
            result = g.analyze("wcc", at=at, engine="spark")  # (auto: the local kernel)
            table = to_pandas(result.frame)
            report = {
                "head": ray.get_runtime_context().get_node_id(),
                "worker": worker.node_id,
                "free_cpus": free,
                "components": dict(
                    zip(table["vertex"].tolist(), table["component"].tolist(), strict=True)
                ),
            }
        stop_spark()
    finally:
        ray.shutdown()
        cluster.shutdown()
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(float(sys.argv[1]))
