"""Fuzzing the gRPC gateway with random messages: ingestion streams of random records
(offsets, kinds, ids, times, property values, vertex types), batch sizes and request
orders, several streams resuming one source; and random bytes sent as the request of
every query method. Every refusal is a gRPC status with a message (INVALID_ARGUMENT
naming the field, FAILED_PRECONDITION...), never a crash of the server; a refused batch
applies nothing (the source's applied position is what was acknowledged), and a past
snapshot never changes."""

from __future__ import annotations

import grpc
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronoray.gateway.arrow_wire import to_arrow_ipc
from chronoray.v1 import gateway_pb2 as pb
from tests.fuzz.conftest import examples
from tests.gateway.gateway_helpers import TOKEN, served_graph

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_AUTH = (("authorization", f"Bearer {TOKEN}"),)
_SEED_T = 1_000_000_000
_BASE_T = 2_000_000_000  # after the seed: a new source cannot go back before it

vertex_ids = st.one_of(
    st.builds(lambda i: pb.VertexId(int=i), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda s: pb.VertexId(str=s), st.text(max_size=6)),
    st.just(pb.VertexId()),
    st.none(),
)
times = st.one_of(
    st.builds(lambda i: pb.Time(int=i), st.integers(_BASE_T - 5, _BASE_T + 50)),
    st.builds(lambda f: pb.Time(float=f), st.floats()),
    st.none(),
)
values = st.recursive(
    st.one_of(
        st.builds(lambda b: pb.Value(bool=b), st.booleans()),
        st.builds(lambda i: pb.Value(int=i), st.integers(-(2**63), 2**63 - 1)),
        st.builds(lambda f: pb.Value(float=f), st.floats()),
        st.builds(lambda s: pb.Value(str=s), st.text(max_size=5)),
        st.builds(lambda s: pb.Value(repr=s), st.text(max_size=5)),
        st.just(pb.Value(null=True)),
        st.just(pb.Value()),
    ),
    lambda inner: st.builds(lambda xs: pb.Value(list=pb.ValueList(items=xs)), st.lists(inner)),
    max_leaves=4,
)
records = st.builds(
    lambda offset, kind, vertex, dst, ts, props, vtype: pb.UpdateRecord(
        offset=offset, kind=kind, vertex=vertex, dst=dst, ts=ts, props=props, vertex_type=vtype
    ),
    st.integers(0, 40),
    st.integers(0, 8),
    vertex_ids,
    vertex_ids,
    times,
    st.dictionaries(st.text(max_size=4), values, max_size=2),
    st.sampled_from(["", "", "TemporalVertex", "Nope"]),
)
requests = st.one_of(
    st.builds(lambda s: pb.IngestRequest(open=pb.IngestOpen(source=s)), st.sampled_from(["f", ""])),
    st.builds(
        lambda rs: pb.IngestRequest(batch=pb.IngestBatch(records=rs)),
        st.lists(records, max_size=4),
    ),
)


@pytest.fixture(scope="module")
def served(ray_session, tmp_path_factory):
    """A named graph with a seed edge, its gateway, a stub, and the seed's snapshot."""
    from chronoray.client import GatewayClient
    from vertex import Update

    tmp = tmp_path_factory.mktemp("fuzz-gateway")
    with served_graph("gw-fuzz", tmp) as (graph, gateway):
        graph.ingest([Update.add_edge(1, 2, _SEED_T)], name="seed")
        channel = grpc.insecure_channel(gateway.address)
        with GatewayClient(gateway.address, token=TOKEN) as client:
            yield graph, channel, client, client.snapshot(at=_SEED_T).meta
        channel.close()


def _applied(graph, source: str) -> int:
    return max(s.applied.get(f"src:{source}", 0) for s in graph.stats().shards)


@settings(max_examples=examples(25))
@given(stream=st.lists(requests, max_size=5))
def test_random_ingestion_streams(served, stream):
    from chronoray.v1 import gateway_pb2_grpc as pbg

    graph, channel, _, _ = served
    stub = pbg.GatewayStub(channel)
    acked = _applied(graph, "f")
    try:
        for reply in stub.Ingest(iter(stream), metadata=_AUTH):
            if reply.HasField("ack"):
                acked = max(acked, reply.ack.through_offset)
    except grpc.RpcError as exc:
        assert exc.code() in (
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.FAILED_PRECONDITION,
            grpc.StatusCode.OUT_OF_RANGE,
        ), (exc.code(), exc.details())
        assert exc.details()
    assert _applied(graph, "f") == acked  # nothing of a refused batch was applied


_ARROW_TYPES = {
    "offset": [pa.uint64(), pa.int64(), pa.string()],
    "kind": [pa.string(), pa.dictionary(pa.int8(), pa.string()), pa.int64()],
    "vertex": [pa.int64(), pa.uint64(), pa.string()],
    "dst": [pa.int64(), pa.null(), pa.float64()],
    "time": [pa.int64(), pa.float64(), pa.uint64(), pa.string()],
    "props": [pa.struct([("w", pa.int64())]), pa.struct([("", pa.string())])],
    "vertex_type": [pa.string(), pa.null()],
    "extra": [pa.int64()],
}
_ARROW_VALUES = {
    "int64": st.one_of(st.integers(-2, 60), st.integers(_BASE_T, _BASE_T + 50)),
    "uint64": st.one_of(st.integers(0, 60), st.integers(2**63 - 2, 2**64 - 1)),
    "string": st.sampled_from(
        ["add_edge"] * 6 + ["ADD_VERTEX", "remove_edge", "message", "Nope", "TemporalVertex", ""]
    ),
    "double": st.floats(),
    "null": st.none(),
}


@st.composite
def arrow_tables(draw):
    """A record batch of 1-6 rows: required columns sometimes missing, extra or optional
    ones sometimes there, each of a right or a wrong type, values valid or not, nulls."""
    rows = draw(st.integers(1, 6))
    columns = {}
    for name, kinds in _ARROW_TYPES.items():
        required = name in ("offset", "kind", "vertex", "dst", "time")
        odds = {"extra": 20, "props": 2, "vertex_type": 2}.get(name, 20)
        if draw(st.integers(1, odds)) == 1 if required else draw(st.integers(1, odds)) != 1:
            continue
        kind = kinds[0] if draw(st.integers(0, 4)) else draw(st.sampled_from(kinds))
        if pa.types.is_struct(kind):
            value = 1 if pa.types.is_integer(kind[0].type) else "x"
            slot = st.one_of(st.none(), st.just({kind[0].name: value}))
            columns[name] = pa.array(draw(st.lists(slot, min_size=rows, max_size=rows)), kind)
            continue
        base = kind.value_type if pa.types.is_dictionary(kind) else kind
        cell = _ARROW_VALUES[str(base)]
        if draw(st.integers(0, 3)) == 0:
            cell = st.one_of(cell, st.none())
        cells = draw(st.lists(cell, min_size=rows, max_size=rows))
        if name == "offset" and base != pa.string() and draw(st.booleans()):
            cells = list(range(draw(st.integers(1, 30)), 100))[:rows]  # often valid
        array = pa.array(cells, base)
        columns[name] = array.dictionary_encode() if pa.types.is_dictionary(kind) else array
    if not columns:
        columns["offset"] = pa.array([1] * rows, pa.int64())
    return pa.RecordBatch.from_pydict(columns)


def _mangled(data: bytes, at: int, cut: bool, byte: int) -> bytes:
    at %= len(data)
    return data[:at] if cut else data[:at] + bytes([byte]) + data[at + 1 :]


arrow_payloads = st.one_of(
    st.binary(max_size=200),
    arrow_tables().map(lambda t: to_arrow_ipc([t])),
    st.builds(
        _mangled,
        arrow_tables().map(lambda t: to_arrow_ipc([t])),
        st.integers(0, 10_000),
        st.booleans(),
        st.integers(0, 255),
    ),
)


@settings(max_examples=examples(40))
@given(payloads=st.lists(arrow_payloads, min_size=1, max_size=3))
def test_random_arrow_batches(served, payloads):
    """Garbage bytes, IPC streams cut or with a byte changed, tables of wrong schemas and
    values: acknowledged, or refused with INVALID_ARGUMENT and a message -- never a crash,
    and nothing of a refused batch applied."""
    from chronoray.v1 import gateway_pb2_grpc as pbg

    graph, channel, client, _ = served
    stub = pbg.GatewayStub(channel)
    acked = _applied(graph, "fa")
    stream = [pb.IngestRequest(open=pb.IngestOpen(source="fa"))]
    stream += [pb.IngestRequest(batch=pb.IngestBatch(arrow_ipc=p)) for p in payloads if p]
    try:
        for reply in stub.Ingest(iter(stream), metadata=_AUTH):
            if reply.HasField("ack"):
                acked = max(acked, reply.ack.through_offset)
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, (exc.code(), exc.details())
        assert exc.details().startswith("batch"), exc.details()
    assert _applied(graph, "fa") == acked
    assert client.health() == "SERVING"


METHODS = ["Stats", "GetVertex", "GetEdges", "History"]


@settings(max_examples=examples(25))
@given(method=st.sampled_from(METHODS), raw=st.binary(max_size=40))
def test_random_bytes_as_query_requests(served, method, raw):
    _, channel, client, _ = served
    call = channel.unary_unary(
        f"/chronoray.v1.Gateway/{method}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    try:
        call(raw, metadata=_AUTH, timeout=60)
    except grpc.RpcError as exc:
        assert exc.code() != grpc.StatusCode.UNKNOWN, exc.details()  # an unhandled error
        assert exc.details()
    assert client.health() == "SERVING"


def test_the_past_snapshot_never_changed(served):
    _, _, client, before = served
    after = client.snapshot(at=_SEED_T).meta
    assert (after["vertices"], after["edges"]) == (before["vertices"], before["edges"])
