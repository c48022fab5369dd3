"""A graph that is not running, read from its logs in this process (``StoppedLogs``, no
Ray): the same snapshots as the running graph at the same cuts (real data, time, window,
clock and "now" cuts, past vertex states); a time cut that a message still in flight
would change is refused with the reason, and answered once the message is delivered;
``graph_running`` tells a log directory a process writes to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.errors import SnapshotNotReady
from chronoray.stopped import StoppedLogs, graph_running
from chronoray.travel import TimeTravel
from shards.core import Batch, ShardCore
from shards.logstore import MemoryLogStore
from shards.routing import shard_of
from snapshot.snapshot import Snapshot
from vertex.model import Context, TemporalVertex, VertexTypes
from vertex.records import Update

CUTS: list[dict[str, Any]] = [
    {"at": 1_082_000_000},
    {"at": 1_085_000_000.5},
    {"at": 1_098_000_000},
    {"window": (1_083_000_000, 1_086_000_000)},
]


def _tables(snap: Snapshot) -> tuple[Any, Any]:
    vertices, edges = snap.to_pandas()
    vertices = vertices.sort_values("id").reset_index(drop=True)
    edges = edges.sort_values(["src", "dst"]).reset_index(drop=True)
    return vertices.to_dict("list"), edges.to_dict("list")


@pytest.fixture(scope="module")
def stopped_college(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], Any]:
    """CollegeMsg in a 2-shard local graph: its snapshots while open, then closed."""
    log_dir = tmp_path_factory.mktemp("stopped") / "graph"
    graph = cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(log_dir))
    try:
        graph.ingest(cr.SnapEdgeSource(collegemsg_path()))
        running = subprocess.run(
            [
                sys.executable,
                "-c",
                f"from chronoray.stopped import graph_running as r; print(r({str(log_dir)!r}))",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert running.stdout.strip() == "True"  # this process writes to it
        live = [_tables(graph.snapshot(**cut)) for cut in CUTS]
        now = graph.snapshot()
        clock = now.meta.clock
        state = graph.vertex_state(1, at=1_085_000_000)
        live += [_tables(now), _tables(graph.snapshot(clock=[c // 2 for c in clock]))]
    finally:
        graph.close()
    return log_dir, live, (clock, state)


def test_a_stopped_graph_answers_from_its_logs_as_it_did_running(
    stopped_college: tuple[Path, list[Any], Any],
) -> None:
    log_dir, live, (clock, state) = stopped_college
    assert not graph_running(log_dir)
    with StoppedLogs(log_dir) as logs:
        travel = TimeTravel(logs)
        found = [_tables(travel.snapshot(**cut)) for cut in CUTS]
        assert logs.clocks() == tuple(clock)
        found += [
            _tables(travel.snapshot()),
            _tables(travel.snapshot(clock=[c // 2 for c in clock])),
        ]
        assert travel.vertex_state(1, at=1_085_000_000) == state
    assert found == live
    assert len(found[2][0]["id"]) > 1_000  # the cuts are not empty


class Relay(TemporalVertex):
    """Passes a message on to vertex ``to`` once."""

    def on_message(self, ctx: Context, payload: Any) -> None:
        if "to" in payload:
            ctx.send(payload["to"], {"hops": 1})
        ctx.state["got"] = ctx.state.get("got", 0) + 1


def test_a_message_in_flight_keeps_a_time_cut_of_a_stopped_graph_from_being_exact() -> None:
    a = next(v for v in range(100) if shard_of(v, 2) == 0)
    b = next(v for v in range(100) if shard_of(v, 2) == 1)
    types = VertexTypes([Relay])
    stores = [MemoryLogStore(f"stopped-flight-{k}") for k in range(2)]
    cores = [ShardCore(k, 2, stores[k], types) for k in range(2)]
    try:
        update = Update.message(a, 10, to=b).with_origin("s", 1)
        cores[0].handle(Batch.of_updates([update]))
        cores[1].handle(Batch.of_updates([Update.add_vertex(b, 3).with_origin("t", 1)]))
        logs = StoppedLogs(stores=stores)
        assert logs.undelivered_time() == 10
        TimeTravel(logs).snapshot(at=9.5)  # before the message: exact
        TimeTravel(logs).snapshot(clock=list(logs.clocks()))  # clock cuts: consistent
        with pytest.raises(SnapshotNotReady, match="message of time 10 not yet delivered"):
            TimeTravel(logs).snapshot(at=10)
        sent = cores[0].take_batch(1)
        assert sent is not None
        cores[1].handle(sent)  # delivered (not yet acknowledged to the sender)
        logs = StoppedLogs(stores=stores)
        snap = TimeTravel(logs).snapshot(at=10)
        vertices, _ = _tables(snap)
        assert vertices["got"][vertices["id"].index(b)] == 1
    finally:
        for store in stores:
            store.close()
            MemoryLogStore.destroy(store.name)
