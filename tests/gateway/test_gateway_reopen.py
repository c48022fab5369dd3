"""A reopened gateway source is held to its own past (issue 24, item 2): it is told to
resume after the last offset it fed (not the smallest per-shard position), records at or
before it are skipped as resends whichever shard they go to, a later one going back in
time is refused, and a past snapshot never changes."""

from __future__ import annotations

import grpc
import pytest

from chronoray.gateway.wire import to_record
from chronoray.v1 import gateway_pb2 as pb
from shards.core import source_channel
from shards.routing import shard_of
from tests.gateway.gateway_helpers import client, graph_pairs, log_positions, served_graph
from vertex.records import Update

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SOURCE = "feed"


def _edge(src: int, dst: int, ts: float, offset: int) -> Update:
    return Update.add_edge(src, dst, ts).with_origin(SOURCE, offset)


def _stream(c, records: list[Update]) -> list[pb.IngestResponse]:
    """One raw stream: open ``SOURCE``, send ``records`` as one batch (no client-side
    skipping), return the replies."""
    requests = [
        pb.IngestRequest(open=pb.IngestOpen(source=SOURCE)),
        pb.IngestRequest(batch=pb.IngestBatch(records=[to_record(u) for u in records])),
    ]
    return list(c.stub.Ingest(iter(requests), metadata=c.metadata))


def _snapshot_pairs(graph, at: float) -> set[tuple[int, int]]:
    edges = graph.snapshot(at=at).edges()
    return set(zip(edges.column("src").to_pylist(), edges.column("dst").to_pylist(), strict=True))


def test_a_reopened_source_cannot_go_back_before_what_it_fed(ray_session, tmp_path):
    with served_graph("gw-reopen", tmp_path) as (graph, gateway):
        # vertices on shard 0 and shard 1; the last record goes to shard 0 only, so
        # shard 1's position for the source stays below the last offset acknowledged
        on = {k: [v for v in range(1, 200) if shard_of(v, 2) == k] for k in (0, 1)}
        first = [_edge(on[1][i], on[1][i + 1], 10 + i, i + 1) for i in range(5)]
        first += [_edge(on[0][i], on[0][i + 1], 20 + i, 6 + i) for i in range(5)]
        with client(gateway) as c:
            result = c.ingest(first, name=SOURCE, batch_size=10)
        assert result.acked_through == 10
        graph.wait_idle()
        channel = source_channel(SOURCE)
        applied = [s.applied.get(channel, 0) for s in graph.stats().shards]
        assert min(applied) < 10 == max(applied)
        past_at = 22.0
        past = _snapshot_pairs(graph, past_at)
        live, positions = graph_pairs(graph), log_positions(graph)

        # reopened: resume after 10; older records (new content, going to the shard that
        # logged less, older times) are resends: skipped, never applied
        older = [_edge(on[1][10 + i], on[1][11 + i], 5 + i, 6 + i) for i in range(5)]
        with client(gateway) as c:
            replies = _stream(c, older)
        assert replies[0].opened.resume_after == 10
        (ack,) = (r.ack for r in replies[1:])
        assert (ack.through_offset, ack.records, ack.skipped) == (10, 5, 5)
        graph.wait_idle()
        assert graph_pairs(graph) == live and log_positions(graph) == positions
        assert _snapshot_pairs(graph, past_at) == past

        # a new offset may not go back before the latest time the source fed
        with client(gateway) as c, pytest.raises(grpc.RpcError) as refused:
            _stream(c, [_edge(on[1][20], on[1][21], 23.0, 11)])
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "batch.records[0].ts" in refused.value.details()
        assert "before 24" in refused.value.details()
        assert graph_pairs(graph) == live and log_positions(graph) == positions

        # what comes after its past is applied, and the past snapshot stays as it was
        with client(gateway) as c:
            replies = _stream(c, [_edge(on[1][20], on[1][21], 30.0, 11)])
        assert replies[0].opened.resume_after == 10 and replies[1].ack.skipped == 0
        graph.wait_idle()
        assert graph_pairs(graph) == {**live, (on[1][20], on[1][21]): 1}
        assert _snapshot_pairs(graph, past_at) == past


def test_a_batch_whose_gateway_died_midway_is_completed_by_the_resend(ray_session, tmp_path):
    from chronoray.testing import kill_controller

    with served_graph("gw-died", tmp_path) as (graph, gateway):
        on = {k: [v for v in range(1, 200) if shard_of(v, 2) == k] for k in (0, 1)}
        first = [_edge(on[0][i], on[0][i + 1], 10 + i, i + 1) for i in range(5)]
        with client(gateway) as c:
            assert c.ingest(first, name=SOURCE, batch_size=10).acked_through == 5
        # the next batch: offsets 6-10 go to shard 1, 11-15 to shard 0. Its gateway got
        # shard 0's part logged, then died: shard 1 never logged its part, nobody was acked
        batch = [_edge(on[1][i], on[1][i + 1], 20 + i, 6 + i) for i in range(5)]
        batch += [_edge(on[0][10 + i], on[0][11 + i], 30 + i, 11 + i) for i in range(5)]
        with graph.feeding(SOURCE) as pump:
            pump.run(batch[5:], lambda read: None)
        graph.wait_idle()
        channel = source_channel(SOURCE)
        assert [s.applied.get(channel, 0) for s in graph.stats().shards] == [15, 0]
        kill_controller(graph)  # what was acknowledged outlives the controller too

        with client(gateway) as c:
            replies = _stream(c, batch)  # the client resends all it was not acked
        assert replies[0].opened.resume_after == 5
        (ack,) = (r.ack for r in replies[1:])
        assert (ack.through_offset, ack.records, ack.skipped) == (15, 10, 5)
        graph.wait_idle()
        assert graph_pairs(graph) == {(u.vertex, u.dst): 1 for u in first + batch}
        with client(gateway) as c:
            assert _stream(c, batch[:1])[0].opened.resume_after == 15
