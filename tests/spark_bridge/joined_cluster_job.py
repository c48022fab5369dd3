"""Run by test_joined_cluster.py in its own process: a two-node Ray cluster started by
``ray.cluster_utils.Cluster`` (this process never joins it), then the CLI as separate
processes that join it with ``--address``: ``ingest`` a part of CollegeMsg into a log
directory, then ``analyze wcc --engine spark`` (RayDP's master and executor started by a
process that joined the cluster; issue 24). The cluster is started under Ray's token rule,
as ``ray start`` is (see docs/cluster.md). Prints the analysis' JSON, or the failing
command's output, as the last line."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ray._private.authentication.authentication_token_setup import (
    maybe_enable_token_auth_if_token_available,
)
from ray.cluster_utils import Cluster

from chronoray.datasets import collegemsg_path

_CLI = str(Path(sys.executable).parent / "chronoray")


def _cli(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [_CLI, "--address", address, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def main(at: str) -> None:
    # the rule chronoray (and `ray start`, `ray.init()`) applies: token auth if a token is
    # saved (~/.ray/auth_token); a cluster_utils Cluster does not apply it by itself, and
    # a CLI joining with a token then has its actors cancelled ("owner failed")
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    store = 128 * 1024 * 1024
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": store, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=2, object_store_memory=store)
    cluster.wait_for_nodes()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            part = Path(tmp) / "college-3000.txt"
            lines = collegemsg_path().read_text().splitlines(keepends=True)[:3000]
            part.write_text("".join(lines))
            logs, out = str(Path(tmp) / "logs"), str(Path(tmp) / "out")
            steps = [
                ("ingest", str(part), "--log-dir", logs),
                ("analyze", "wcc", "--at", at, "--engine", "spark", "--top", "10000")
                + ("--log-dir", logs, "--out", out, "--json"),
            ]
            for step in steps:
                done = _cli(cluster.address, *step)
                if done.returncode != 0:
                    json.dump({"failed": step[0], "stderr": done.stderr[-3000:]}, sys.stdout)
                    return
            sys.stdout.write(done.stdout.replace("\n", " ") + "\n")
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
