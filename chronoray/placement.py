"""Where shards run: which alive node gets which shard, and how a restarted shard finds
the node that holds its log again.

A node is known by a *key* that survives its restart: the value of its
``chronoray-node`` label (``ray start --labels chronoray-node=NAME``, or
``ray.cluster_utils.Cluster.add_node(labels=...)``) when it has one, else its address
(``ip:ADDRESS``). Ray's node ids change when a node restarts, so they are never recorded.

* ``placement="spread"`` (default) deals shards round-robin over the alive nodes, the
  driver's node first; ``"pack"`` keeps them all on the driver's node. Nodes that share a
  key (several unlabelled raylets on one host) count as one place.
* ``storage="local"``: a shard is pinned to its node key -- by label selector, or by the
  ``node:ADDRESS`` resource Ray gives every node -- so Ray restarts it only where its log
  is; while no such node is alive it waits (and the graph's status says so).
* ``storage="shared"``: the log directory is on storage every node mounts; a shard
  prefers its node but Ray may restart it on any node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from chronoray.manifest import Placement, Storage
from vertex.annotations import mark_module_api

__all__ = ["NODE_LABEL", "NodeInfo", "alive_nodes", "plan", "shard_options"]

NODE_LABEL = "chronoray-node"
"""The node label whose value names a node for chronoray."""


@dataclass(frozen=True)
class NodeInfo:
    """An alive Ray node: its id now, its stable key and its address."""

    node_id: str
    key: str
    address: str
    labels: dict[str, str] = field(default_factory=dict, compare=False)


def _key(node: dict[str, Any]) -> str:
    label = (node.get("Labels") or {}).get(NODE_LABEL)
    return str(label) if label else f"ip:{node['NodeManagerAddress']}"


def alive_nodes() -> list[NodeInfo]:
    """The cluster's alive nodes."""
    return [
        NodeInfo(n["NodeID"], _key(n), n["NodeManagerAddress"], dict(n.get("Labels") or {}))
        for n in ray.nodes()
        if n.get("Alive")
    ]


def plan(nodes: list[NodeInfo], num_shards: int, placement: Placement, home: str) -> list[str]:
    """The node key of each shard: round-robin over the distinct keys of ``nodes``
    starting with the node ``home`` (a node id; usually the driver's), or all on it."""
    if placement not in ("spread", "pack"):
        raise ValueError(f"placement must be 'spread' or 'pack', got {placement!r}")
    keys: list[str] = []
    for node in sorted(nodes, key=lambda n: (n.node_id != home, n.key)):
        if node.key not in keys:
            keys.append(node.key)
    if not keys:
        raise RuntimeError("the Ray cluster has no alive node")
    if placement == "pack":
        return [keys[0]] * num_shards
    return [keys[k % len(keys)] for k in range(num_shards)]


def shard_options(storage: Storage, key: str, nodes: list[NodeInfo]) -> dict[str, Any]:
    """Ray actor options placing a shard on the node ``key`` (see the module docstring).

    A labelled node is selected by its label (measured: Ray's soft node affinity does not
    reliably choose the node asked for, a label selector does); with shared storage a
    fallback to any other node lets Ray restart the shard elsewhere."""
    if storage not in ("local", "shared"):
        raise ValueError(f"storage must be 'local' or 'shared', got {storage!r}")
    if not key.startswith("ip:"):
        options: dict[str, Any] = {"label_selector": {NODE_LABEL: key}}
        if storage == "shared":
            options["fallback_strategy"] = [{"label_selector": {NODE_LABEL: f"!in({key})"}}]
        return options
    options = {}
    here = next((n for n in nodes if n.key == key), None)
    if here is not None:
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(here.node_id, soft=True)
    if storage == "local":
        options["resources"] = {f"node:{key[3:]}": 0.001}
    return options


mark_module_api(globals())
