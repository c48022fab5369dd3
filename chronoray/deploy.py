"""Deployment: starting and stopping the Ray actors of one graph.

:func:`deploy` takes what a graph is (its :class:`~chronoray.manifest.Manifest`, config,
vertex classes, log directory, optional name) and starts its actors: the
``GraphController`` on the driver's node, then one ``ShardWorker`` per shard on the node
:mod:`chronoray.placement` chooses (recorded in the manifest, which it writes). A named
graph's actors are detached, in the graph's own namespace. :func:`stop` ends them (the
logs stay).

Refusals, each one line: a name that runs already (:class:`GraphExists`), a log directory
a running graph uses (:class:`LogDirInUse`), local logs on nodes not in the cluster
(:class:`ShardsUnavailable`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ray

from chronoray.config import Config
from chronoray.connect import NAMESPACE, cluster_address
from chronoray.controller import CONTROLLER_NAME, GraphController, graph_namespace, named_graphs
from chronoray.errors import GraphExists, LogDirInUse, ShardsUnavailable
from chronoray.manifest import Manifest
from chronoray.placement import NodeInfo, alive_nodes, plan, shard_options
from ephemeral.host import LiveHost
from shards.remote import actor_class
from shards.worker import ACTOR_ERRORS, ShardWorker, shard_actor_name
from vertex.annotations import mark_module_api
from vertex.model import VertexTypes

__all__ = ["Deployment", "deploy", "shard_log_path", "stop"]


@dataclass
class Deployment:
    """The running actors of one graph, and how they are named."""

    graph_id: str
    namespace: str
    controller_name: str
    controller: Any
    shards: list[Any]


def shard_log_path(log_dir: Path, shard: int) -> str:
    """The directory of shard ``shard``'s RocksDB log (on the node that runs it)."""
    return str(log_dir / f"shard-{shard}")


def deploy(
    config: Config,
    log_dir: Path,
    manifest: Manifest,
    types: VertexTypes,
    name: str | None,
    graph_id: str,
) -> Deployment:
    """Start the graph's controller and shards (Ray initialised already) and wait until
    every shard answers; the manifest gets the shards' nodes and is written."""
    if name is not None and name in named_graphs():
        raise GraphExists(f"a graph named {name!r} is running already (chronoray stop {name})")
    _check_log_dir_free(log_dir)
    namespace = graph_namespace(name) if name is not None else NAMESPACE
    detached = {"lifetime": "detached"} if name is not None else {}
    nodes = alive_nodes()
    home = ray.get_runtime_context().get_node_id()
    manifest.shard_nodes = _shard_nodes(config, log_dir, manifest, nodes, home)
    manifest.write(log_dir)
    controller_name = CONTROLLER_NAME if name is not None else f"chronoray-{graph_id}-graph"
    info = {
        "name": name,
        "graph_id": graph_id,
        "namespace": namespace,
        "log_dir": str(log_dir),
        "manifest": asdict(manifest),
        "config": asdict(config),
    }
    home_key = next(n.key for n in nodes if n.node_id == home)
    controller = (
        actor_class(GraphController)
        .options(
            name=controller_name,
            namespace=namespace,
            num_cpus=0,
            max_concurrency=1000,
            max_restarts=-1,  # it recovers from the shards and LOG_DIR/controller.pickle
            max_task_retries=0,  # a caller retries what the restart interrupted
            **shard_options("local", home_key, nodes),  # the driver's node
            **detached,
        )
        .remote(info)
    )
    deployment = Deployment(graph_id, namespace, controller_name, controller, [])
    deployment.shards = [
        _start_shard(config, log_dir, types, deployment, k, key, nodes, detached)
        for k, key in enumerate(manifest.shard_nodes)
    ]
    ray.get(controller.set_shards.remote(deployment.shards))
    _await_shards(deployment, log_dir)
    return deployment


def stop(deployment: Deployment) -> None:
    """Stop the graph's sources, close every shard's log and stop its actors."""
    try:
        ray.get(deployment.controller.stop_sources.remote())
    except ACTOR_ERRORS:
        pass
    try:
        ray.get([s.close.remote() for s in deployment.shards], timeout=30)
    except (*ACTOR_ERRORS, ray.exceptions.GetTimeoutError):
        pass  # a shard process that is gone has released its log already
    finally:
        for actor in [*deployment.shards, deployment.controller]:
            try:
                ray.kill(actor, no_restart=True)
            except ValueError:
                pass
        _wait_name_released(deployment)


def _wait_name_released(deployment: Deployment, timeout: float = 30.0) -> None:
    """``ray.kill`` returns before the actor is gone: wait until the controller's name is
    free, so the graph is no longer listed as running (and the name can be reused)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get_actor(deployment.controller_name, namespace=deployment.namespace)
        except ValueError:
            return
        time.sleep(0.05)


def _check_log_dir_free(log_dir: Path) -> None:
    for other in named_graphs():
        try:
            controller = ray.get_actor(CONTROLLER_NAME, namespace=graph_namespace(other))
            info = ray.get(controller.info.remote())
        except (ValueError, *ACTOR_ERRORS):
            continue
        if info["log_dir"] == str(log_dir):
            raise LogDirInUse(f"log directory {log_dir} is in use by graph {other!r}")


def _shard_nodes(
    config: Config, log_dir: Path, manifest: Manifest, nodes: list[NodeInfo], home: str
) -> list[str]:
    """Recorded nodes for local logs (a shard goes back to its log), else a new plan.
    A private local Ray instance has one node, where the logs are: plan anew."""
    recorded = manifest.shard_nodes
    if not recorded or config.storage == "shared" or cluster_address(config) is None:
        return plan(nodes, config.num_shards, config.placement, home)  # type: ignore[arg-type]
    alive = {n.key for n in nodes}
    missing = sorted({k for k in recorded if k not in alive})
    if missing:
        raise ShardsUnavailable(
            f"the logs of {log_dir} are on node(s) {', '.join(missing)}, not in the "
            f"cluster (alive: {', '.join(sorted(alive))})"
        )
    return list(recorded)


def _start_shard(
    c: Config,
    log_dir: Path,
    types: VertexTypes,
    deployment: Deployment,
    k: int,
    key: str,
    nodes: list[NodeInfo],
    detached: dict[str, Any],
) -> Any:
    return (
        actor_class(ShardWorker)
        .options(
            name=shard_actor_name(deployment.graph_id, k),
            namespace=deployment.namespace,
            max_restarts=-1,
            max_task_retries=0,
            max_concurrency=1000,
            num_cpus=c.shard_num_cpus,
            **shard_options(c.storage, key, nodes),  # type: ignore[arg-type]
            **detached,
        )
        .remote(
            deployment.graph_id,
            k,
            c.num_shards,
            shard_log_path(log_dir, k),
            types,
            shard_checkpoint_interval=c.shard_checkpoint_interval,
            sync=c.sync,
            max_pending=c.max_pending,
            host_factory=LiveHost,
            namespace=deployment.namespace,
            frontier_keeper=(deployment.controller_name, deployment.namespace),
            log_store=c.log_store,
        )
    )


def _await_shards(deployment: Deployment, log_dir: Path) -> None:
    """Wait until every shard answers; a shard that cannot open its log (another graph
    holds it) stops the start with :class:`LogDirInUse`, nothing left running."""
    try:
        ray.get([s.ping.remote() for s in deployment.shards])
    except ray.exceptions.RayActorError as exc:
        stop(deployment)
        if "lock" in str(exc).lower():
            raise LogDirInUse(
                f"log directory {log_dir} is in use by another graph "
                "(a shard's RocksDB lock is held)"
            ) from None
        raise


mark_module_api(globals())
