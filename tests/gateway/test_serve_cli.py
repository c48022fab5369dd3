"""``chronoray serve`` as a process and as a Ray actor of the graph, and the CLI through
it (``ingest``/``stats``/``subscribe --server``), as a user runs them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray

import chronoray as cr
from chronoray.client import GatewayClient
from chronoray.datasets import collegemsg_path
from chronoray.errors import GatewayError
from chronoray.gateway.server import GATEWAY_ACTOR
from chronoray.testing import free_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_CLI = str(Path(sys.executable).parent / "chronoray")


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_CLI, *args], capture_output=True, text=True, timeout=timeout)


def _said(result: subprocess.CompletedProcess[str]) -> str:
    """What a command printed, as one line (the console wraps long lines)."""
    return " ".join(result.stdout.split())


def _wait_serving(address: str, token_file: Path, process=None) -> None:
    deadline = time.monotonic() + 180
    with GatewayClient(address, token_file=token_file, timeout=5) as probe:
        while True:
            try:
                if probe.health("chronoray.v1.Gateway") == "SERVING":
                    return
            except GatewayError:
                pass
            assert process is None or process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, f"no gateway at {address}"
            time.sleep(0.2)


@pytest.fixture
def cli_graph(ray_session, tmp_path):
    graph = cr.GraphCluster.create("gw-cli", num_shards=2, log_dir=str(tmp_path / "logs"))
    token = tmp_path / "token"
    token.write_text("cli-token\n")
    part = tmp_path / "college-3000.txt"
    part.write_text("".join(collegemsg_path().read_text().splitlines(keepends=True)[:3000]))
    yield graph, ray.get_runtime_context().gcs_address, token, part
    graph.shutdown()


def test_serve_as_a_process_and_the_cli_through_it(cli_graph, tmp_path):
    graph, ray_address, token, part = cli_graph
    port = free_port()
    server = subprocess.Popen(
        [_CLI, "--address", ray_address, "serve", "--graph", "gw-cli", "--port", str(port)]
        + ["--token-file", str(token), "--output-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    address = f"127.0.0.1:{port}"
    try:
        _wait_serving(address, token, server)
        reach = ["--server", address, "--token-file", str(token)]
        ingested = _run("ingest", str(part), *reach)
        assert ingested.returncode == 0, ingested.stdout + ingested.stderr
        assert "ingested 3,000 new records of college-3000.txt" in _said(ingested)
        assert "resumed after offset 0 (0 records sent again" in _said(ingested)
        again = _run("ingest", str(part), *reach)  # the same file again: nothing new
        assert "ingested 0 new records of college-3000.txt" in _said(again), again.stdout
        stats = _run("stats", *reach, "--json")
        assert stats.returncode == 0, stats.stderr
        answer = json.loads(stats.stdout)
        assert (answer["vertices"], answer["edges"]) == (
            graph.stats().vertices,
            graph.stats().edges,
        )
        # 3, nothing resent: a stream edge reaches both its endpoints' shards, so every
        # shard applied through the file's last line (issue 13)
        assert answer["graph"] == "gw-cli" and answer["gateway"]["batches"] == 3
        subscribed = _run(
            "subscribe", *reach, "--vertex", "1", "--since=-inf", "--limit", "3", "--json"
        )
        assert subscribed.returncode == 0, subscribed.stderr
        rows = [json.loads(line) for line in subscribed.stdout.splitlines()]
        assert [r["clock"] for r in rows] == [1, 2, 3] and {r["vertex"] for r in rows} == {1}
        refused = _run("stats", "--server", address)  # no token
        assert refused.returncode == 1
        assert refused.stderr.startswith("error: UNAUTHENTICATED: missing or wrong token")
        both = _run("stats", "--server", address, "--graph", "gw-cli")
        assert "--graph cannot be used with --server" in both.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=120)
    assert server.returncode == 0, out
    said = " ".join(out.split())
    assert f"serving graph gw-cli on {address} (plaintext, token authentication)" in said
    assert "stopped: 3,000 records in 3 batches acknowledged" in said, said


def test_serve_as_an_actor_of_the_graph_lives_as_long_as_the_graph(cli_graph):
    graph, ray_address, token, part = cli_graph
    port = free_port()
    started = _run(
        "--address", ray_address, "serve", "--graph", "gw-cli", "--port", str(port),
        "--token-file", str(token), "--detach",
    )  # fmt: skip
    assert started.returncode == 0, started.stdout + started.stderr
    assert f"serving graph gw-cli on 127.0.0.1:{port}" in _said(started)
    address = f"127.0.0.1:{port}"
    with GatewayClient(address, token_file=token) as c:
        assert c.ingest(cr.SnapEdgeSource(part)).acked_through == 3000
        assert c.stats()["edges"] == graph.stats().edges
    twice = _run("--address", ray_address, "serve", "--graph", "gw-cli", "--detach")
    assert twice.returncode == 1 and "a gateway actor is serving graph gw-cli" in twice.stderr
    stopped = _run("--address", ray_address, "serve", "--graph", "gw-cli", "--stop")
    assert "stopped the gateway of gw-cli" in _said(stopped), stopped.stderr
    again = _run(
        "--address", ray_address, "serve", "--graph", "gw-cli", "--port", str(port),
        "--token-file", str(token), "--detach",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    namespace = f"chronoray-graph-{graph.name}"
    graph.shutdown()  # the gateway actor notices and ends
    deadline = time.monotonic() + 60
    while True:
        try:
            ray.get_actor(GATEWAY_ACTOR, namespace=namespace)
        except ValueError:
            break
        assert time.monotonic() < deadline, "the gateway actor outlived its graph"
        time.sleep(0.2)


_README_CLIENT = """
import chronoray as cr
from chronoray.client import GatewayClient

with GatewayClient("ADDRESS") as client:
    client.ingest(cr.SnapEdgeSource("DATA"))
    client.ingest([cr.Update.add_edge(1, 2, 1098777142, weight=3)], name="corrections")
    print(client.stats()["edges"], client.vertex(1, at=1090000000)["state"])
    print(client.out_edges(1), client.history(9, 1085000000, 1090000000)[:2])
    snap = client.snapshot(at=1090000000)
    print(snap.meta["edges"], snap.edges_path)
    with client.subscribe(types="TemporalVertex", predicate="created", since=0) as stream:
        for item in stream:
            print(item.vertex, item.state)
            break
    print(client.analyze("degrees", at=1090000000, top=3).top)
"""


@pytest.mark.long
def test_serve_as_a_ray_job_with_the_readme_client(tmp_path):
    """docs/gateway.md's way: a real Ray head, the graph started and served by `ray job submit`
    jobs, its Python client against it, `ray job stop` ending the server."""
    from chronoray.testing import RayHead

    port = free_port()
    token = tmp_path / "token"
    token.write_text("job-token\n")
    with RayHead(num_cpus=2) as head:
        logs = str(tmp_path / "college-logs")
        started = head.submit("chronoray", "start", "college", "--shards", "2", "--log-dir", logs)
        assert started.returncode == 0, started.stdout + started.stderr
        job = head.run(
            "ray", "job", "submit", "--address", head.dashboard, "--no-wait", "--",
            "chronoray", "serve", "--graph", "college", "--port", str(port),
            "--token-file", str(token), "--output-dir", str(tmp_path / "out"),
        )  # fmt: skip
        assert job.returncode == 0, job.stdout + job.stderr
        job_id = re.search(r"raysubmit_\w+", job.stdout)[0]
        address = f"127.0.0.1:{port}"
        _wait_serving(address, token)
        script = _README_CLIENT.replace("ADDRESS", address).replace("DATA", str(collegemsg_path()))
        ran = subprocess.run(
            [sys.executable, "-c", script],
            env=dict(head.env, CHRONORAY_GATEWAY_TOKEN_FILE=str(token)),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        lines = ran.stdout.splitlines()
        assert lines[0].startswith("20296 ")  # the correction's pair existed already
        assert lines[2].startswith("18385 ") and lines[2].endswith("edges.parquet")
        stopped = head.run("ray", "job", "stop", "--address", head.dashboard, job_id)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        logs_out = head.run("ray", "job", "logs", "--address", head.dashboard, job_id).stdout
        assert f"serving graph college on {address}" in " ".join(logs_out.split())
        assert head.submit("chronoray", "stop", "college").returncode == 0
