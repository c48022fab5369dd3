"""The graph's controller tells the shards each frontier and gate under the number of when
it decided it, not of when it sent it: its calls interleave where they wait for a shard,
and a gate decided before a newer one but sent after it must not replace it in the shards
(it would hold a finished source's last updates forever: every source waits for them)."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
import ray

from chronoray.controller import GraphController
from chronoray.testing import RecordingShard
from shards.coordinator import Promise

pytestmark = pytest.mark.ray


def _wait_until(check: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_a_gate_sent_late_never_replaces_a_newer_one(ray_session, tmp_path):
    shards = [ray.remote(RecordingShard).options(num_cpus=0).remote(k) for k in range(2)]
    info = {
        "name": None,
        "graph_id": "order",
        "namespace": "chronoray",
        "log_dir": str(tmp_path),
        "manifest": {"num_shards": 2},
        "config": {},
    }
    controller = ray.remote(GraphController).options(num_cpus=0, max_concurrency=100)
    ctrl = controller.remote(info)
    try:
        ray.get(ctrl.set_shards.remote(shards))
        assert ray.get(ctrl.open_source.remote("a")) and ray.get(ctrl.open_source.remote("b"))
        ray.get(ctrl.source_progress.remote("b", 100.0, Promise(100.0, (3, 3)), 100.0))
        ray.get([s.hold_frontiers.remote() for s in shards])
        # a's progress raises the graph's frontier (sent first, answered late), then the gate
        slow = ctrl.source_progress.remote("a", 50.0, Promise(math.inf, (5, 5)), 60.0)
        _wait_until(
            lambda: all(told[2] == 1 for told in ray.get([s.told.remote() for s in shards])),
            "the frontier to reach every shard",
        )
        # meanwhile b ends too: its gate goes out at once
        ray.get(ctrl.source_progress.remote("b", 100.0, Promise(math.inf, (7, 7)), 120.0))
        ray.get([s.release.remote() for s in shards])
        ray.get(slow)
        want = {"src:a": Promise(math.inf, (5, 5)), "src:b": Promise(math.inf, (7, 7))}
        for frontier, gate, _ in ray.get([s.told.remote() for s in shards]):
            assert frontier == 50.0
            assert gate == want
    finally:
        for actor in [ctrl, *shards]:
            ray.kill(actor)
