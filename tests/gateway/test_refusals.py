"""What the gateway refuses, with which status code and message -- and that a refused
request changes nothing: the graph's stats and log positions (worker clocks, applied
positions per channel) are compared before and after every one."""

from __future__ import annotations

import math
import re
import threading

import grpc
import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.gateway import Gateway, GatewaySettings
from chronoray.gateway.guard import RETRY_AFTER
from chronoray.gateway.wire import to_record
from chronoray.v1 import gateway_pb2 as pb
from chronoray.v1 import gateway_pb2_grpc as pbg
from tests.gateway.gateway_helpers import TOKEN, client, log_positions, served_graph
from vertex import Update

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_AUTH = (("authorization", f"Bearer {TOKEN}"),)


@pytest.fixture(scope="module")
def refusing(ray_session, tmp_path_factory):
    """A graph holding CollegeMsg's first 2,000 lines, behind a gateway that takes
    messages of at most 64 KiB and batches of at most 1,000 records."""
    tmp = tmp_path_factory.mktemp("refusals")
    limits = {"max_message_bytes": 64 * 1024, "max_batch_records": 1000}
    with served_graph("gw-refuse", tmp, **limits) as (graph, gateway):
        updates = list(cr.SnapEdgeSource(collegemsg_path()).read())[:2000]
        graph.ingest(updates, name="seed")
        channel = grpc.insecure_channel(gateway.address)
        yield graph, gateway, pbg.GatewayStub(channel)
        channel.close()


def _refused(call, code: grpc.StatusCode, pattern: str) -> None:
    """``call()`` fails with ``code`` and a message matching ``pattern``."""
    with pytest.raises(grpc.RpcError) as caught:
        call()
    assert caught.value.code() == code, caught.value.details()
    assert re.search(pattern, caught.value.details()), caught.value.details()


def _stream(stub, requests, metadata=_AUTH):
    """Run an ingestion stream to its end; its replies."""
    return list(stub.Ingest(iter(requests), metadata=metadata))


def _open(source="refused"):
    return pb.IngestRequest(open=pb.IngestOpen(source=source))


def _batch(*records):
    return pb.IngestRequest(batch=pb.IngestBatch(records=list(records)))


def _edge(offset, src=1, dst=2, ts=2_000_000_000):  # after the seed: a new source cannot
    # go back before what the graph holds from others (event time, issue 13)
    return to_record(Update.add_edge(src, dst, ts).with_origin("x", offset))


def test_a_missing_or_wrong_token_is_unauthenticated(refusing):
    graph, _, stub = refusing
    before = log_positions(graph)
    for metadata in ((), (("authorization", "Bearer nope"),), (("authorization", TOKEN),)):
        _refused(
            lambda m=metadata: stub.Stats(pb.StatsRequest(), metadata=m),
            grpc.StatusCode.UNAUTHENTICATED,
            "missing or wrong token",
        )
        _refused(
            lambda m=metadata: _stream(stub, [_open(), _batch(_edge(1))], m),
            grpc.StatusCode.UNAUTHENTICATED,
            "missing or wrong token",
        )
        _refused(
            lambda m=metadata: next(stub.Subscribe(pb.SubscribeRequest(), metadata=m)),
            grpc.StatusCode.UNAUTHENTICATED,
            "missing or wrong token",
        )
    assert log_positions(graph) == before


def test_an_oversized_message_is_refused(refusing):
    graph, _, stub = refusing
    before = log_positions(graph)
    big = _batch(*(_edge(i, src=i, dst=i + 1, ts=i) for i in range(1, 901)))
    big.batch.records[0].props["blob"].CopyFrom(pb.Value(bytes=b"x" * 70_000))
    assert big.ByteSize() > 64 * 1024
    _refused(lambda: _stream(stub, [_open(), big]), grpc.StatusCode.RESOURCE_EXHAUSTED, "")
    assert log_positions(graph) == before


def _with(record, **changes):
    """``record`` with ``changes`` (``None``: the field unset)."""
    for name, value in changes.items():
        record.ClearField(name)
        if value is not None:
            getattr(record, name).CopyFrom(value)
    return record


@pytest.mark.parametrize(
    ("requests", "pattern"),
    [
        ([_batch(_edge(1))], r"^open: the first request of a stream opens a source"),
        ([_open("")], r"^open\.source: a source needs a name"),
        ([_open("bad\nname")], r"^open\.source: at most 200 printable characters"),
        ([_open(), _batch()], r"^batch\.records: an empty batch"),
        ([_open(), _open()], r"^open: a stream feeds one source"),
        (
            [_open(), _batch(*(_edge(i) for i in range(1, 1002)))],
            r"^batch\.records: 1001 records; at most 1000 per batch",
        ),
        (
            [_open(), _batch(_edge(1), _edge(2), _with(_edge(3), dst=None))],
            r"^batch\.records\[2\]\.dst: add_edge needs the edge's target",
        ),
        (
            [_open(), _batch(_edge(1), _with(_edge(2), ts=pb.Time(float=math.nan)))],
            r"^batch\.records\[1\]\.ts: time must be finite",
        ),
        (
            [_open(), _batch(_edge(5), _edge(5))],
            r"^batch\.records\[1\]\.offset: 5 does not follow 5",
        ),
        (
            [_open(), _batch(_with(_edge(1), offset=None))],
            r"^batch\.records\[0\]\.offset: offsets start at 1",
        ),
        (
            [_open(), _batch(_edge(1), _edge(2, ts=1_999_999_999))],
            r"^batch\.records\[1\]\.ts: refused:2: time 1999999999 goes back from 2000000000",
        ),
        (
            [_open(), _batch(_edge(1, ts=1_000_000_000))],
            r"^batch\.records\[0\]\.ts: refused:1: time 1000000000 is before \d+, up to which "
            r"the graph already holds updates from other sources",
        ),
        (
            [_open(), _batch(to_record(Update.add_vertex(9, 1, "Ghost").with_origin("x", 1)))],
            r"^batch\.records\[0\]\.vertex_type: unknown vertex type 'Ghost' \(known: "
            r"TemporalVertex\)",
        ),
    ],
    ids=[
        "no-open",
        "no-name",
        "bad-name",
        "empty",
        "two-opens",
        "too-many",
        "missing-dst",
        "nan-time",
        "offsets",
        "offset-0",
        "back-in-time",
        "before-the-graph",
        "vertex-type",
    ],
)
def test_a_malformed_stream_is_invalid_and_changes_nothing(refusing, requests, pattern):
    graph, _, stub = refusing
    before = log_positions(graph)
    _refused(lambda: _stream(stub, requests), grpc.StatusCode.INVALID_ARGUMENT, pattern)
    assert log_positions(graph) == before
    assert not graph.status().sources  # the stream's source, if opened, was closed


def test_a_bad_batch_after_a_good_one_keeps_the_good_one_only(refusing):
    graph, _, stub = refusing
    replies: list[pb.IngestResponse] = []

    def run():
        for reply in stub.Ingest(
            iter([_open("half-good"), _batch(_edge(1, 70001, 70002)), _batch(_edge(1))]),
            metadata=_AUTH,
        ):
            replies.append(reply)

    _refused(run, grpc.StatusCode.INVALID_ARGUMENT, r"^batch\.records\[0\]\.offset: 1 does not")
    assert [r.WhichOneof("response") for r in replies] == ["opened", "ack"]
    assert graph.vertex(70001)["out_edges"][70002]["count"] == 1


_VERTEX = pb.VertexId(int=10**9)


@pytest.mark.parametrize(
    ("method", "request_", "code", "pattern"),
    [
        (
            "GetVertex",
            pb.VertexRequest(vertex=_VERTEX),
            "NOT_FOUND",
            r"^vertex 1000000000 not found",
        ),
        (
            "GetVertex",
            pb.VertexRequest(vertex=_VERTEX, cut=pb.Cut(at=1.1e9)),
            "NOT_FOUND",
            r"^vertex 1000000000 not found",
        ),
        (
            "GetEdges",
            pb.EdgesRequest(vertex=_VERTEX, direction=pb.OUT),
            "NOT_FOUND",
            r"^vertex 1000000000 not found",
        ),
        (
            "History",
            pb.HistoryRequest(vertex=_VERTEX),
            "NOT_FOUND",
            r"^vertex 1000000000 not found",
        ),
        ("GetVertex", pb.VertexRequest(), "INVALID_ARGUMENT", r"^vertex: no vertex id set"),
        (
            "GetVertex",
            pb.VertexRequest(vertex=pb.VertexId(int=1), cut=pb.Cut(at=math.nan)),
            "INVALID_ARGUMENT",
            r"^cut\.at: must be a finite time",
        ),
        (
            "GetVertex",
            pb.VertexRequest(vertex=pb.VertexId(int=1), cut=pb.Cut(clock=pb.ClockCut(clocks=[1]))),
            "INVALID_ARGUMENT",
            r"^cut\.clock\.clocks: 1 clocks for a graph of 2 shards",
        ),
        (
            "GetEdges",
            pb.EdgesRequest(vertex=pb.VertexId(int=1)),
            "INVALID_ARGUMENT",
            r"^direction: OUT or IN",
        ),
        (
            "History",
            pb.HistoryRequest(vertex=pb.VertexId(int=1), t0=5, t1=4),
            "INVALID_ARGUMENT",
            r"^t0: 5.0 is after t1 4.0",
        ),
        (
            "Snapshot",
            pb.SnapshotRequest(cut=pb.SnapshotCut(window=pb.Window(t0=5, t1=4))),
            "INVALID_ARGUMENT",
            r"^cut\.window: t0 5.0 is after t1 4.0",
        ),
        (
            "Analyze",
            pb.AnalyzeRequest(name="eigenvector"),
            "INVALID_ARGUMENT",
            r"^name: unknown analysis 'eigenvector'; choose from pagerank, wcc",
        ),
        (
            "Analyze",
            pb.AnalyzeRequest(name="pagerank", params={"damping": pb.Value(float=0.8)}),
            "INVALID_ARGUMENT",
            r"^params\['damping'\]: not a parameter of it \(it takes: alpha, engine, max_iter, "
            r"tol, weight\)",
        ),
        (
            "Analyze",
            pb.AnalyzeRequest(name="pagerank", params={"alpha": pb.Value(str="high")}),
            "INVALID_ARGUMENT",
            r"^params\['alpha'\]: must be a float, got 'high'",
        ),
        (
            "Analyze",
            pb.AnalyzeRequest(name="activity"),
            "INVALID_ARGUMENT",
            r"^times: activity needs times or a window cut",
        ),
        (
            "Analyze",
            pb.AnalyzeRequest(name="wcc", times=[1, 2]),
            "INVALID_ARGUMENT",
            r"^times: wcc takes one cut, not times",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_bad_query_is_refused_and_changes_nothing(refusing, method, request_, code, pattern):
    graph, _, stub = refusing
    before = log_positions(graph)
    _refused(
        lambda: getattr(stub, method)(request_, metadata=_AUTH),
        getattr(grpc.StatusCode, code),
        pattern,
    )
    assert log_positions(graph) == before


@pytest.mark.parametrize(
    ("request_", "pattern"),
    [
        (pb.SubscribeRequest(predicate="sunny"), r"^predicate: unknown predicate 'sunny' \("),
        (pb.SubscribeRequest(since=math.nan), r"^since: a time or -inf"),
        (pb.SubscribeRequest(ids=[pb.VertexId()]), r"^ids\[0\]: no vertex id set"),
        (
            pb.SubscribeRequest(resume=pb.Position(start=[0, 0], after=[0, 10**9])),
            r"^resume\.after\[1\]: ahead of shard 1's log",
        ),
        (
            pb.SubscribeRequest(resume=pb.Position(start=[0], after=[0])),
            r"^resume: a position of 1 shards; the graph has 2",
        ),
    ],
    ids=["predicate", "since", "ids", "ahead", "shards"],
)
def test_a_bad_subscription_is_refused(refusing, request_, pattern):
    _, _, stub = refusing
    _refused(
        lambda: next(stub.Subscribe(request_, metadata=_AUTH)),
        grpc.StatusCode.INVALID_ARGUMENT,
        pattern,
    )


def test_a_source_already_feeding_is_aborted(refusing):
    graph, gateway, stub = refusing
    opened = threading.Event()
    release = threading.Event()

    def holding():
        yield _open("busy")
        opened.wait()
        release.wait(60)

    first = stub.Ingest(holding(), metadata=_AUTH)
    assert next(first).WhichOneof("response") == "opened"
    opened.set()
    try:
        _refused(
            lambda: _stream(stub, [_open("busy"), _batch(_edge(1))]),
            grpc.StatusCode.ABORTED,
            r"^source 'busy' is already feeding this graph",
        )
    finally:
        release.set()
        list(first)


def test_a_client_over_its_rate_is_told_when_to_retry(refusing):
    graph, _, _ = refusing
    settings = GatewaySettings(port=0, token=TOKEN, rate_limit=1.0, rate_burst=2)
    with Gateway(graph, settings) as limited:
        channel = grpc.insecure_channel(limited.address)
        stub = pbg.GatewayStub(channel)
        stub.Stats(pb.StatsRequest(), metadata=_AUTH)
        stub.Stats(pb.StatsRequest(), metadata=_AUTH)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Stats(pb.StatsRequest(), metadata=_AUTH)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "rate limit of 1 requests/s exceeded; retry in" in caught.value.details()
        wait = dict(caught.value.trailing_metadata())[RETRY_AFTER]
        assert 0 < float(wait) <= 1.0
        channel.close()
        with client(limited) as patient:  # the client waits as told and gets its answer
            assert patient.stats()["vertices"] == graph.stats().vertices
