"""``cluster.yaml`` passes Ray's own config validation (what ``ray up`` runs), and its start
commands work with the venv its setup commands create: run here (the venv is this one,
linked where the setup commands put it), on loopback with their ports replaced by free
ones, a head and a worker come up with the venv's Ray, their nodes labelled by host name,
and tasks find ``chronoray`` on PATH. Ray's token authentication stays on.

The commands' leading ``ray stop`` is checked to be the venv's, not run: it stops every Ray
on a machine, and this one is shared."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from chronoray.testing import free_port, stop_started

pytestmark = [pytest.mark.slow]

_YAML = Path(__file__).parents[2] / "cluster.yaml"


def _config() -> dict:
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(yaml.safe_load(_YAML.read_text()))
    validate_config(config)
    return config


def test_cluster_yaml_passes_rays_validation():
    config = _config()
    assert config["setup_commands"][0] == "python3 -m venv ~/chronoray-venv"
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):
        stop, start = config[key]
        assert stop == "~/chronoray-venv/bin/ray stop"
        assert 'export PATH="$HOME/chronoray-venv/bin:$PATH" RAY_AUTH_MODE=token' in start
    assert (
        "--autoscaling-config=~/ray_bootstrap_config.yaml" in config["head_start_ray_commands"][1]
    )
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"


def test_start_commands_run_with_the_venv(tmp_path):
    config = _config()
    home = tmp_path / "home"
    home.mkdir()
    (home / "chronoray-venv").symlink_to(Path(sys.prefix))
    (home / ".ray").symlink_to(Path.home() / ".ray")  # the token, as file_mounts copies it
    assert (home / "chronoray-venv" / "bin" / "ray").exists()  # what `ray stop` would run
    bootstrap = dict(config, provider=dict(config["provider"], head_ip="127.0.0.1", worker_ips=[]))
    (home / "ray_bootstrap_config.yaml").write_text(yaml.safe_dump(bootstrap))
    port, objects = free_port(), free_port()
    temp = Path(os.path.realpath("/tmp")) / f"crh-yaml-{port}"
    local = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1"]
    local.append("--object-store-memory=80000000")

    def command(key: str, extra: list[str]) -> str:
        text = config[key][1].replace("--port=6379", f"--port={port}")
        text = text.replace(":6379", f":{port}").replace("--object-manager-port=8076", "")
        return f"{text} {' '.join(extra)}"

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), PATH="/usr/bin:/bin", RAY_HEAD_IP="127.0.0.1")
    head = command(
        "head_start_ray_commands",
        [
            *local,
            "--include-dashboard=false",
            f"--temp-dir={temp}",
            f"--object-manager-port={objects}",
            f"--node-manager-port={free_port()}",
        ],
    )
    started = []
    try:
        started.append(_spawn(head, env, tmp_path / "head.log"))
        _wait_for_nodes(port, 1, home)
        worker = command(
            "worker_start_ray_commands",
            [*local, f"--object-manager-port={free_port()}", f"--node-manager-port={free_port()}"],
        )
        started.append(_spawn(worker, env, tmp_path / "worker.log"))
        found = _wait_for_nodes(port, 2, home)
        assert found["labels"] == [socket.gethostname()] * 2
        assert found["chronoray"] == str(home / "chronoray-venv" / "bin" / "chronoray")
    finally:
        for process in reversed(started):
            stop_started(process)
        shutil.rmtree(temp, ignore_errors=True)


def _spawn(command: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            ["bash", "-c", command],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_for_nodes(port: int, count: int, home: Path) -> dict:
    """Join the cluster from a fresh interpreter (as a driver there would) until ``count``
    nodes are alive; their labels and where a task finds ``chronoray``."""
    deadline = time.monotonic() + 400
    while True:  # the head's GCS listens once it is up
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            break
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            time.sleep(0.5)
    probe = textwrap.dedent(
        f"""
        import json, shutil, time, ray
        from chronoray.config import Config
        from chronoray.connect import ensure_ray
        ensure_ray(Config.load(ray_address="127.0.0.1:{port}"))
        deadline = time.monotonic() + 400  # a loaded machine starts raylets slowly
        while True:
            nodes = [n for n in ray.nodes() if n["Alive"]]
            if len(nodes) >= {count} or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        where = ray.get(ray.remote(lambda: shutil.which("chronoray")).options(num_cpus=0).remote())
        print(json.dumps({{"labels": sorted(n["Labels"].get("chronoray-node") for n in nodes),
                          "chronoray": where}}))
        """
    )
    env = dict(os.environ, HOME=str(home))
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=500, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    return json.loads(done.stdout.strip().splitlines()[-1])
