"""A stream's batches in flight (``GatewaySettings.ingest_window``): the server takes the
next batches while earlier ones are being logged, yet acknowledges each in order and only
once every record of it is logged, takes no more than the window, keeps exactly-once
across a broken stream, and refuses a bad record of a later batch after acknowledging the
earlier ones.

Where a test must hold batches in flight, it gates :meth:`FeedPump.wait_logged` (what the
handler waits on before an ack) in this process: the shards still log what the gateway
offers them, but no ack is sent until the test opens the gate."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import pytest

from chronoray.gateway.wire import to_record
from chronoray.ingest import FeedPump
from chronoray.v1 import gateway_pb2 as pb
from shards.core import source_channel
from shards.routing import shard_of
from tests.gateway.gateway_helpers import client, graph_pairs, served_graph
from vertex.records import Update

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SOURCE = "pipelined"
_ROWS = 50  # records per batch


def _batches(count: int, first: int = 1) -> list[list[Update]]:
    """``count`` batches of :data:`_ROWS` edges of ``SOURCE`` in time order, offsets from
    ``first``; every edge is new (its own pair), so a record applied twice shows."""
    updates = [
        Update.add_edge(o, o + 100_000, 1_000 + o).with_origin(SOURCE, o)
        for o in range(first, first + count * _ROWS)
    ]
    return [updates[i : i + _ROWS] for i in range(0, len(updates), _ROWS)]


def _request(batch: list[Update]) -> pb.IngestRequest:
    return pb.IngestRequest(batch=pb.IngestBatch(records=[to_record(u) for u in batch]))


def _until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait for ``condition`` (re-checked as the graph answers; no fixed sleep decides)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class _RawStream:
    """One ingestion stream whose replies a thread collects as they come."""

    def __init__(self, c: Any, requests: list[pb.IngestRequest]) -> None:
        opening = pb.IngestRequest(open=pb.IngestOpen(source=SOURCE))
        self.call = c.stub.Ingest(iter([opening, *requests]), metadata=c.metadata)
        self.replies: list[pb.IngestResponse] = []
        self.error: grpc.RpcError | None = None
        self._thread = threading.Thread(target=self._read)
        self._thread.start()

    def _read(self) -> None:
        try:
            for reply in self.call:
                self.replies.append(reply)
        except grpc.RpcError as exc:
            self.error = exc

    def acks(self) -> list[pb.IngestAck]:
        return [r.ack for r in self.replies if r.WhichOneof("response") == "ack"]

    def join(self) -> None:
        self._thread.join(120)
        assert not self._thread.is_alive()


@pytest.fixture
def gate(monkeypatch) -> Iterator[threading.Event]:
    """While not set, :meth:`FeedPump.wait_logged` answers "not yet" (after its timeout)
    even once the shards logged what it waits for: the pump goes on (takes their answers,
    sends what it buffered), but no acknowledgement is sent."""
    opened = threading.Event()
    original = FeedPump.wait_logged

    def gated(self: FeedPump, position: int, timeout: float) -> bool:
        return original(self, position, timeout) and opened.wait(timeout)

    monkeypatch.setattr(FeedPump, "wait_logged", gated)
    yield opened
    opened.set()


@contextmanager
def _opened_at_end(gate: threading.Event) -> Iterator[None]:
    """The gate opened when the block ends, also at a failure (the gateway then stops
    without a handler waiting on it)."""
    try:
        yield
    finally:
        gate.set()


def _applied(graph: Any) -> list[int]:
    channel = source_channel(SOURCE)
    return [s.applied.get(channel, 0) for s in graph.stats().shards]


def _logged(graph: Any, batches: list[list[Update]]) -> bool:
    """Whether the shards logged every record of ``batches``."""
    applied = _applied(graph)
    return all(applied[shard_of(u.vertex, 2)] >= u.offset for b in batches for u in b)


def test_acks_come_in_order_and_only_once_each_batch_is_logged(ray_session, tmp_path):
    batches = _batches(40)
    with served_graph("gw-pipe-order", tmp_path, ingest_window=4) as (graph, gateway):
        unlogged: list[int] = []

        def check(ack: pb.IngestAck) -> None:  # runs as each ack arrives
            if not _logged(graph, batches[: ack.batch]):
                unlogged.append(ack.batch)

        acks: list[pb.IngestAck] = []
        with client(gateway) as c:
            updates = [u for b in batches for u in b]
            result = c.ingest(
                updates,
                name=SOURCE,
                batch_size=_ROWS,
                window=None,
                on_ack=lambda ack: (check(ack), acks.append(ack)),
            )
            stats = c.stats()["gateway"]
        assert result.acked_through == 40 * _ROWS
        assert [a.batch for a in acks] == list(range(1, 41))
        assert [a.through_offset for a in acks] == [b[-1].offset for b in batches]
        assert unlogged == []
        assert stats["held_records"] == 0 and stats["held_records_max"] <= 4 * _ROWS
        graph.wait_idle()
        assert graph_pairs(graph) == {(u.vertex, u.dst): 1 for b in batches for u in b}


def test_the_server_takes_at_most_ingest_window_batches_ahead(ray_session, tmp_path, gate):
    batches = _batches(8)
    with (
        served_graph("gw-pipe-window", tmp_path, ingest_window=3) as (graph, gateway),
        _opened_at_end(gate),
    ):
        with client(gateway) as c:
            stream = _RawStream(c, [_request(b) for b in batches])  # all sent at once
            # the first three are taken and offered without waiting: the shards log them
            _until(lambda: _logged(graph, batches[:3]), "the first three batches logged")
            _until(lambda: c.stats()["gateway"]["held_records"] == 3 * _ROWS, "three taken")
            # ... but the fourth is not taken while none of them is acknowledged
            assert not _logged(graph, batches[3:4])
            assert stream.acks() == []
            assert c.stats()["gateway"]["held_records"] == 3 * _ROWS
            gate.set()
            stream.join()
            assert stream.error is None
            assert [a.batch for a in stream.acks()] == list(range(1, 9))
            stats = c.stats()["gateway"]
        assert stats["held_records"] == 0 and stats["held_records_max"] == 3 * _ROWS
        assert _logged(graph, batches)


def test_a_resend_after_a_broken_stream_applies_each_record_once(ray_session, tmp_path, gate):
    batches = _batches(6)
    with (
        served_graph("gw-pipe-resend", tmp_path, ingest_window=4) as (graph, gateway),
        _opened_at_end(gate),
    ):
        with client(gateway) as c:
            # batches 1-2 acknowledged; 3-6 taken (the shards log them) but not acked
            stream = _RawStream(c, [_request(b) for b in batches[:2]])
            gate.set()
            stream.join()
            assert [a.batch for a in stream.acks()] == [1, 2]
            gate.clear()
            stream = _RawStream(c, [_request(b) for b in batches[2:]])
            _until(lambda: _logged(graph, batches[2:]), "batches 3-6 logged")
            stream.call.cancel()  # the connection breaks before any of them is acked
            stream.join()
            assert stream.acks() == []
            gate.set()
            _until(lambda: not graph.status().sources, "the broken stream's source closed")

            # the client reconnects and resends all it was not acked, and more
            more = _batches(2, first=batches[-1][-1].offset + 1)
            stream = _RawStream(c, [_request(b) for b in batches[2:] + more])
            stream.join()
        assert stream.error is None, stream.error
        # after batch 6: the broken stream's gateway kept what it fed and found logged
        assert stream.replies[0].opened.resume_after == batches[-1][-1].offset
        acks = stream.acks()
        assert [(a.records, a.skipped) for a in acks] == [(_ROWS, _ROWS)] * 4 + [(_ROWS, 0)] * 2
        graph.wait_idle()
        everything = batches + more
        assert graph_pairs(graph) == {(u.vertex, u.dst): 1 for b in everything for u in b}
        assert graph.stats().edges == len(everything) * _ROWS


def test_a_bad_record_in_a_later_batch_in_flight_is_refused_after_the_earlier_acks(
    ray_session, tmp_path, gate
):
    batches = _batches(4)
    bad = _request(batches[2])
    bad.batch.records[7].ClearField("dst")
    requests = [_request(batches[0]), _request(batches[1]), bad, _request(batches[3])]
    with (
        served_graph("gw-pipe-bad", tmp_path, ingest_window=4) as (graph, gateway),
        _opened_at_end(gate),
    ):
        with client(gateway) as c:
            stream = _RawStream(c, requests)
            # batches 1 and 2 are taken and logged, unacknowledged, when 3 is refused
            _until(lambda: _logged(graph, batches[:2]), "batches 1-2 logged")
            assert stream.acks() == []
            gate.set()
            stream.join()
        assert [a.batch for a in stream.acks()] == [1, 2]  # the earlier acks stay
        assert stream.error is not None
        assert stream.error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert stream.error.details().startswith(
            "batch.records[7].dst: add_edge needs the edge's target"
        ), stream.error.details()
        graph.wait_idle()
        # nothing of the refused batch nor of the one after it is applied
        assert max(_applied(graph)) == batches[1][-1].offset
        assert graph_pairs(graph) == {(u.vertex, u.dst): 1 for b in batches[:2] for u in b}
