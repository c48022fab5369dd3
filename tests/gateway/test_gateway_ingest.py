"""Ingestion through the gateway over loopback, checked against the CollegeMsg oracle:
two clients at once, a client process killed mid-stream and restarted, a producer faster
than the graph (flow control, bounded server memory), a gateway stopped mid-stream."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.errors import GatewayError
from chronoray.gateway import Gateway, GatewaySettings
from chronoray.testing import pair_counts
from shards.core import source_channel
from shards.routing import shard_of
from tests.gateway.gateway_helpers import TOKEN, client, graph_pairs, served_graph

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_CLI = str(Path(sys.executable).parent / "chronoray")


@pytest.fixture(scope="module")
def halves(tmp_path_factory) -> tuple[cr.SnapEdgeSource, cr.SnapEdgeSource]:
    """CollegeMsg's first and second half as two files (two sources)."""
    lines = collegemsg_path().read_text().splitlines(keepends=True)
    folder = tmp_path_factory.mktemp("halves")
    middle = len(lines) // 2
    paths = folder / "college-first.txt", folder / "college-second.txt"
    paths[0].write_text("".join(lines[:middle]))
    paths[1].write_text("".join(lines[middle:]))
    return cr.SnapEdgeSource(paths[0]), cr.SnapEdgeSource(paths[1])


def test_two_clients_ingest_the_two_halves_at_once(ray_session, tmp_path, college, halves):
    lines = collegemsg_path().read_text().splitlines()
    with served_graph("gw-halves", tmp_path) as (graph, gateway):
        results: dict[str, object] = {}

        def feed(source: cr.SnapEdgeSource) -> None:
            with client(gateway) as c:
                results[source.name] = c.ingest(source, batch_size=1000)

        threads = [threading.Thread(target=feed, args=(half,)) for half in halves]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        first, second = (results[h.name] for h in halves)
        assert first.acked_through == len(lines) // 2  # type: ignore[attr-defined]
        assert second.acked_through == len(lines) - len(lines) // 2  # type: ignore[attr-defined]
        graph.wait_idle()
        assert graph_pairs(graph) == pair_counts(college)
        with client(gateway) as c:
            assert (c.stats()["vertices"], c.stats()["edges"]) == (1899, 20296)
            snap = c.snapshot()  # now: the Parquet files the server wrote hold the same
        edges = pq.read_table(snap.edges_path).to_pylist()
        assert {(e["src"], e["dst"]): e["count"] for e in edges} == pair_counts(college)
        assert snap.meta["kind"] == "now" and snap.meta["edges"] == len(edges) == 20296
        assert pq.read_table(snap.vertices_path).num_rows == snap.meta["vertices"] == 1899


def _applied(graph: cr.GraphCluster, source: str) -> list[int]:
    channel = source_channel(source)
    return [s.applied.get(channel, 0) for s in graph.stats().shards]


def test_a_client_killed_mid_stream_resumes_after_its_last_ack(ray_session, tmp_path, college):
    # 20 batches/s of 200 records: about 15 s for CollegeMsg, so the kill lands mid-stream
    with served_graph("gw-kill", tmp_path, rate_limit=20.0, rate_burst=1) as (graph, gateway):
        command = [_CLI, "ingest", "--server", gateway.address, str(collegemsg_path())]
        command += ["--records-per-batch", "200"]
        env = dict(os.environ, CHRONORAY_GATEWAY_TOKEN=TOKEN)
        first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while min(_applied(graph, "collegemsg.txt")) < 10_000:
            assert first.poll() is None, first.stdout.read() if first.stdout else ""
            assert time.monotonic() < deadline, "the client never got going"
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
        killed_at = min(_applied(graph, "collegemsg.txt"))
        assert 10_000 <= killed_at < 59_835
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert second.returncode == 0, second.stdout + second.stderr
        said = " ".join(second.stdout.split())
        resumed = int(re.search(r"resumed after offset ([\d,]+)", said)[1].replace(",", ""))
        assert killed_at <= resumed < 59_835  # nothing before it sent again
        graph.wait_idle()
        assert graph_pairs(graph) == pair_counts(college)  # nothing lost, nothing doubled
        assert graph.stats().vertices == 1899
        assert not graph.status().sources  # the killed stream's source was closed


def test_a_fast_producer_is_slowed_by_flow_control_and_server_memory_stays_bounded(
    ray_session, tmp_path
):
    updates = list(cr.SnapEdgeSource(collegemsg_path()).read())[:20_000]
    produced = 0
    lags: list[int] = []

    def producer():
        nonlocal produced
        for update in updates:
            produced += 1
            yield update

    # the graph takes 25 batches of 250 records a second; the producer makes them at once
    settings = {
        "rate_limit": 25.0,
        "rate_burst": 1,
        "stream_window_bytes": 16 * 1024,
        "ingest_window": 3,
    }
    with served_graph("gw-flow", tmp_path, **settings) as (graph, gateway):
        with client(gateway) as c:
            result = c.ingest(
                producer(),
                name="fast",
                batch_size=250,
                window=None,  # the client holds nothing back: only gRPC's flow control
                on_ack=lambda ack: lags.append(produced - ack.through_offset),
            )
            gateway_stats = c.stats()["gateway"]
    assert result.acked_through == 20_000 and result.batches == 80
    # the producer never got more than a few batches ahead of what the graph logged: gRPC
    # stopped pulling from it once the stream's window was full
    assert max(lags) <= 4_000, lags
    # at most ingest_window batches taken and not acknowledged in the server
    assert 250 <= gateway_stats["held_records_max"] <= 3 * 250
    assert gateway_stats["held_records"] == 0


def test_stopping_the_gateway_mid_stream_acks_only_what_is_logged(ray_session, tmp_path, college):
    updates = list(cr.SnapEdgeSource(collegemsg_path()).read())
    acks = []
    failure: list[BaseException] = []
    with served_graph("gw-stop", tmp_path) as (graph, _):
        settings = GatewaySettings(port=0, token=TOKEN, rate_limit=20.0, rate_burst=1)
        first = Gateway(graph, settings).start()

        def feed() -> None:
            source = cr.SnapEdgeSource(collegemsg_path())
            try:
                with client(first) as c:
                    c.ingest(source, batch_size=200, on_ack=acks.append)
            except GatewayError as exc:
                failure.append(exc)

        thread = threading.Thread(target=feed)
        thread.start()
        deadline = time.monotonic() + 120
        while len(acks) < 5:
            assert time.monotonic() < deadline and thread.is_alive()
            time.sleep(0.02)
        first.stop(grace=5.0)
        thread.join(60)
        assert failure and failure[0].code == "UNAVAILABLE", failure
        through = acks[-1].through_offset
        applied = _applied(graph, "collegemsg.txt")
        for update in updates[:through]:  # every acknowledged record is logged
            assert applied[shard_of(update.vertex, 2)] >= update.offset
        assert not graph.status().sources  # the stream's source was closed
        second = Gateway(graph, GatewaySettings(port=0, token=TOKEN)).start()
        try:
            with client(second) as c:
                result = c.ingest(cr.SnapEdgeSource(collegemsg_path()), batch_size=2000)
        finally:
            second.stop()
        # the server resumes after what every shard logged (at most the last ack); what
        # a shard logged after that is skipped by the graph, not applied twice
        assert result.resumed_after <= through <= result.resumed_after + result.skipped
        graph.wait_idle()
        assert graph_pairs(graph) == pair_counts(college)
