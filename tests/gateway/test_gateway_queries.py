"""Queries, snapshots, subscriptions (with resume) and analyses through the gateway: each
answer equals what the graph handle gives in-process, or the CollegeMsg oracle; plus the
health and reflection services."""

from __future__ import annotations

import grpc
import networkx as nx
import pyarrow.parquet as pq
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.errors import GatewayError
from chronoray.testing import oracle_graph, pair_counts_between
from shards.watermark import show_date
from tests.gateway.gateway_helpers import TOKEN, client, served_graph

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_LINES = collegemsg_path().read_text().splitlines()
_AT = float(_LINES[30000].split()[2])


@pytest.fixture(scope="module")
def queried(ray_session, tmp_path_factory):
    """CollegeMsg ingested through the gateway by one client (a time-ordered source)."""
    with served_graph("gw-query", tmp_path_factory.mktemp("queries")) as (graph, gateway):
        with client(gateway) as c:
            c.ingest(cr.SnapEdgeSource(collegemsg_path()), batch_size=2000)
            graph.wait_idle()
            yield graph, gateway, c


def test_vertices_and_edges_now_and_in_the_past_equal_the_graph_handle(queried):
    graph, _, c = queried
    for vertex in (1, 42, 300):
        assert c.vertex(vertex) == graph.vertex(vertex)
        assert c.out_edges(vertex) == graph.out_edges(vertex)
        assert c.in_edges(vertex) == graph.in_edges(vertex)
        past = graph.vertex_state(vertex, at=_AT)
        assert c.vertex(vertex, at=_AT) == {k: past[k] for k in c.vertex(vertex, at=_AT)}
        assert c.out_edges(vertex, at=_AT) == past["out_edges"]
    assert c.vertex(1899)["clock"] > 0
    with pytest.raises(GatewayError, match="^NOT_FOUND: vertex 1899 not found"):
        c.vertex(1899, at=_AT)  # it came later
    cut = graph.snapshot(at=_AT).meta.cut
    assert c.vertex(1, clock=cut)["state"] == graph.vertex_state(1, clock=cut)["state"]
    assert all(type(v) is int for v in c.vertex(1)["state"].values())  # ints stay ints


def test_history_between_two_times(queried):
    graph, _, c = queried
    t0, t1 = float(_LINES[1000].split()[2]), _AT
    remote = c.history(9, t0, t1)
    local = graph.history(9, t0, t1)
    assert [(s["clock"], s["time"], s["state"]) for s in remote] == [
        (s["clock"], s["time"], s["state"]) for s in local
    ]
    assert [s["out_edges"] for s in remote] == [len(s["out_edges"]) for s in local]
    assert remote[0]["wc"] == 0 and all(s["wc"] > 0 for s in remote[1:])


def test_snapshots_at_a_time_a_clock_and_over_a_window(queried, college):
    graph, _, c = queried
    at_t = c.snapshot(at=_AT)
    edges = pq.read_table(at_t.edges_path).to_pylist()
    assert {(e["src"], e["dst"]): e["count"] for e in edges} == pair_counts_between(college, _AT)
    assert at_t.meta["at"] == _AT and at_t.meta["edges"] == len(edges)
    by_clock = c.snapshot(clock=at_t.meta["cut"])
    assert by_clock.meta["kind"] == "clock" and by_clock.meta["cut"] == at_t.meta["cut"]
    t0 = float(_LINES[20000].split()[2])
    window = c.snapshot(window=(t0, _AT))
    windowed = pq.read_table(window.edges_path).to_pylist()
    expected = pair_counts_between(college, _AT, t0)
    assert {(e["src"], e["dst"]): e["window_count"] for e in windowed} == expected
    assert window.meta["window"] == (t0, _AT)


def test_subscriptions_filter_by_type_id_and_predicate(queried):
    _, _, c = queried
    with c.subscribe(ids=[1, 2], since=float("-inf")) as sub:
        items = _take(sub, 20)
    assert {n.vertex for n in items} <= {1, 2} and len(items) == 20
    with c.subscribe(types="TemporalVertex", predicate="created", since=float("-inf")) as sub:
        created = _take(sub, 50)
    assert all(n.old_state is None and n.state is not None for n in created)
    with c.subscribe(types="NoSuchType", since=float("-inf")) as sub:
        assert sub.position is not None  # started, and nothing will come


def _take(sub, n):
    items = []
    for item in sub:
        items.append(item)
        if len(items) == n:
            break
    return items


def test_a_broken_subscription_resumes_from_its_position(queried):
    graph, _, c = queried
    vertices = [1, 2, 3, 4, 5]
    whole = c.subscribe(ids=vertices, since=float("-inf"))
    broken = c.subscribe(ids=vertices, since=float("-inf"))
    first = _take(broken, 40)  # inside the replay of the log
    position = broken.position
    broken.close()
    c.ingest([cr.Update.add_edge(v, 7000 + v, 2e9) for v in vertices], name="extra")
    graph.wait_idle()
    total = sum(graph.vertex(v)["clock"] for v in vertices)  # one notification per execution
    with c.subscribe(ids=vertices, resume=position) as resumed:
        rest = _take(resumed, total - len(first))
    everything = _take(whole, total)
    whole.close()
    assert _per_shard(first + rest) == _per_shard(everything)  # nothing missed or repeated
    assert max(n.time for n in rest) == 2e9  # the live part came too


def _per_shard(items):
    """Per shard, the notifications in delivery order (shards interleave)."""
    out = {}
    for n in items:
        out.setdefault(n.shard, []).append((n.vertex, n.wc, n.clock, n.state))
    return out


def test_health_and_reflection(queried):
    _, gateway, c = queried
    assert c.health() == "SERVING" and c.health("chronoray.v1.Gateway") == "SERVING"
    with client(gateway, token="wrong") as stranger:
        assert stranger.health() == "SERVING"  # the health check needs no token
        with pytest.raises(GatewayError, match="UNAUTHENTICATED"):
            stranger.stats()
    channel = grpc.insecure_channel(gateway.address)
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    reply = next(stub.ServerReflectionInfo(iter([request]), metadata=_auth()))
    names = {s.name for s in reply.list_services_response.service}
    assert {"chronoray.v1.Gateway", "grpc.health.v1.Health"} <= names
    channel.close()


def _auth():
    return (("authorization", f"Bearer {TOKEN}"),)


def test_a_spark_analysis_on_a_past_cut(queried, college, spark):
    _, _, c = queried
    summary = c.analyze("degrees", at=_AT, top=5)
    oracle = oracle_graph(college, _AT)
    frame = pq.read_table(next(p for p in summary.paths if p.endswith("degrees.parquet")))
    degrees = {r["vertex"]: (r["in_degree"], r["out_degree"]) for r in frame.to_pylist()}
    assert degrees == {v: (oracle.in_degree(v), oracle.out_degree(v)) for v in oracle}
    assert summary.columns == ["vertex", "in_degree", "out_degree"] and len(summary.top) == 5
    top = max(oracle, key=lambda v: (oracle.in_degree(v), -v))
    assert summary.top[0] == (top, oracle.in_degree(top), oracle.out_degree(top))
    assert summary.description == f"degrees at {show_date(_AT)}"
    assert any(p.endswith("degrees.png") for p in summary.paths)
    assert isinstance(oracle, nx.DiGraph)
