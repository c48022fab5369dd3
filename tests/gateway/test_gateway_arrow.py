"""Ingestion through the gateway as Arrow IPC batches (``IngestBatch.arrow_ipc``), over
real gRPC on loopback into a real Ray graph: CollegeMsg via Arrow against the file oracle
(now and at a past time), an old records client and an Arrow client on two sources of one
graph, every rule of a row refused as INVALID_ARGUMENT naming row and column with nothing
applied, and resends through Arrow skipped."""

from __future__ import annotations

import re
import threading

import grpc
import pyarrow as pa
import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.gateway.arrow_wire import table_of_updates, to_arrow_ipc
from chronoray.gateway.wire import to_record
from chronoray.testing import pair_counts, pair_counts_between
from chronoray.v1 import gateway_pb2 as pb
from tests.gateway.gateway_helpers import client, graph_pairs, log_positions, served_graph
from vertex.records import Update

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_LATE = 2_000_000_000  # after CollegeMsg's last time: new sources may not go back before it
_MIXED_T = _LATE + 100  # each test of the module graph after the times of the ones before
_BAD_T = _LATE + 200
_MAX_ROWS = 5000


@pytest.fixture(scope="module")
def arrow_graph(ray_session, tmp_path_factory, college):
    """A graph fed the whole of CollegeMsg through Arrow batches (the client's default for
    a file source), behind a gateway taking at most :data:`_MAX_ROWS` rows per batch."""
    tmp = tmp_path_factory.mktemp("arrow")
    with served_graph("gw-arrow", tmp, max_batch_records=_MAX_ROWS) as (graph, gateway):
        with client(gateway) as c:
            result = c.ingest(cr.SnapEdgeSource(collegemsg_path()), batch_size=4096)
        yield graph, gateway, result


def _snapshot_counts(graph: cr.GraphCluster, at: float) -> dict[tuple[int, int], int]:
    edges = graph.snapshot(at=at).edges().to_pylist()
    return {(e["src"], e["dst"]): e["count"] for e in edges}


def test_collegemsg_through_arrow_equals_the_file(arrow_graph, college):
    graph, gateway, result = arrow_graph
    lines = len(collegemsg_path().read_text().splitlines())
    assert (result.sent, result.acked_through, result.skipped) == (lines, lines, 0)
    assert result.batches == -(-lines // 4096)
    graph.wait_idle()
    assert graph_pairs(graph) == pair_counts(college)
    times = sorted(ts for events in college.values() for ts, _ in events)
    at = times[len(times) // 3]
    assert _snapshot_counts(graph, at) == pair_counts_between(college, at)
    with client(gateway) as c:
        stats = c.stats()
        assert (stats["vertices"], stats["edges"]) == (1899, 20296)
        assert stats["gateway"]["records"] == stats["gateway"]["arrow_records"] == lines


def test_records_and_arrow_clients_feed_one_graph(ray_session, tmp_path, college):
    lines = collegemsg_path().read_text().splitlines(keepends=True)
    middle = len(lines) // 2
    first, second = tmp_path / "college-first.txt", tmp_path / "college-second.txt"
    first.write_text("".join(lines[:middle]))
    second.write_text("".join(lines[middle:]))
    with served_graph("gw-mixed", tmp_path) as (graph, gateway):
        results = {}

        def feed(path, arrow: bool) -> None:
            with client(gateway) as c:
                results[arrow] = c.ingest(cr.SnapEdgeSource(path), batch_size=2000, arrow=arrow)

        threads = [
            threading.Thread(target=feed, args=(first, False)),
            threading.Thread(target=feed, args=(second, True)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results[False].acked_through == middle
        assert results[True].acked_through == len(lines) - middle
        graph.wait_idle()
        assert graph_pairs(graph) == pair_counts(college)
        times = sorted(ts for events in college.values() for ts, _ in events)
        at = times[2 * len(times) // 3]
        assert _snapshot_counts(graph, at) == pair_counts_between(college, at)
        with client(gateway) as c:
            counted = c.stats()["gateway"]
        assert (counted["records"], counted["arrow_records"]) == (len(lines), len(lines) - middle)


def _stream(c, source: str, *batches: pb.IngestBatch) -> list[pb.IngestResponse]:
    requests = [pb.IngestRequest(open=pb.IngestOpen(source=source))]
    requests += [pb.IngestRequest(batch=b) for b in batches]
    return list(c.stub.Ingest(iter(requests), metadata=c.metadata))


def _arrow(updates: list[Update]) -> pb.IngestBatch:
    return pb.IngestBatch(arrow_ipc=to_arrow_ipc([table_of_updates(updates)]))


def _edges(source: str, first: int, count: int, base: int = 10_000) -> list[Update]:
    return [
        Update.add_edge(base + i, base + i + 1, _LATE + i).with_origin(source, first + i)
        for i in range(count)
    ]


def test_a_resend_through_arrow_skips_what_was_logged(arrow_graph):
    graph, gateway, _ = arrow_graph
    updates = _edges("again", 1, 20)
    with client(gateway) as c:
        (opened, ack) = _stream(c, "again", _arrow(updates[:10]))
        assert opened.opened.resume_after == 0
        assert (ack.ack.records, ack.ack.skipped, ack.ack.through_offset) == (10, 0, 10)
        opened, first, second = _stream(c, "again", _arrow(updates[:15]), _arrow(updates[15:]))
        assert opened.opened.resume_after == 10
        assert (first.ack.records, first.ack.skipped, first.ack.through_offset) == (15, 10, 15)
        assert (second.ack.records, second.ack.skipped) == (5, 0)
        result = c.ingest(updates, name="again", arrow=True)  # nothing left to send
        assert (result.resumed_after, result.sent) == (20, 0)
    graph.wait_idle()
    pairs = graph_pairs(graph)
    assert [pairs[(u.vertex, u.dst)] for u in updates] == [1] * 20


def test_every_kind_through_arrow_as_through_records(arrow_graph):
    """The same mixed updates (vertex types, properties, updates and removals of edges,
    vertex removals) as records on one source and as Arrow on another, on distinct ids:
    the same vertices result."""
    graph, gateway, _ = arrow_graph

    def mixed(source: str, base: int, t: int) -> list[Update]:
        a, b, c = base, base + 1, base + 2
        updates = [
            Update.add_vertex(a, t, "TemporalVertex", name="a"),
            Update.add_edge(a, b, t + 1, weight=2),
            Update.add_edge(b, c, t + 2, weight=3),
            Update.update_edge(a, b, t + 3, weight=5),
            Update.remove_edge(b, c, t + 4),
            Update.add_vertex(c, t + 5),
            Update.remove_vertex(c, t + 6),
        ]
        return [u.with_origin(source, i + 1) for i, u in enumerate(updates)]

    with client(gateway) as c:
        c.ingest(mixed("mix-records", 20_000, _MIXED_T), name="mix-records", arrow=False)
        c.ingest(mixed("mix-arrow", 30_000, _MIXED_T + 10), name="mix-arrow", arrow=True)
    graph.wait_idle()

    def shifted(props: dict[str, object], t: int) -> dict[str, object]:
        return {k: v - t if k.endswith("_ts") else v for k, v in props.items()}  # type: ignore[operator]

    def seen(base: int, t: int) -> list[object]:
        out = []
        for v in (base, base + 1):
            found = graph.vertex(v)
            out.append(
                (
                    found["type"],
                    found["time"] - t,
                    {k: val for k, val in found["state"].items() if "name" in k},
                    {d - base: shifted(p, t) for d, p in found["out_edges"].items()},
                    {s - base: shifted(p, t) for s, p in found["in_edges"].items()},
                )
            )
        return out

    assert seen(30_000, _MIXED_T + 10) == seen(20_000, _MIXED_T)
    with pytest.raises(Exception, match="not found|VertexNotFound|30002"):
        graph.vertex(30_002)


def _table(rows: int = 5, **columns: pa.Array) -> pa.RecordBatch:
    """``rows`` add_edge rows of source ``bad`` after everything the graph holds, with
    ``columns`` replaced (or added; ``None``: dropped)."""
    data: dict[str, pa.Array] = {
        "offset": pa.array(range(1, rows + 1), pa.uint64()),
        "kind": pa.array(["ADD_EDGE"] * rows),
        "vertex": pa.array(range(40_000, 40_000 + rows), pa.int64()),
        "dst": pa.array(range(50_000, 50_000 + rows), pa.int64()),
        "time": pa.array(range(_BAD_T, _BAD_T + rows), pa.int64()),
    }
    data.update(columns)
    return pa.RecordBatch.from_pydict({k: v for k, v in data.items() if v is not None})


def _with(column: str, row: int, value: object, kind: pa.DataType | None = None) -> pa.Array:
    values = _table().column(column).to_pylist()
    values[row] = value
    return pa.array(values, kind or _table().schema.field(column).type)


_BAD: list[tuple[object, str]] = [
    (_table(offset=_with("offset", 3, 0)), r"\[row 3\]\.offset: offsets start at 1"),
    (_table(offset=_with("offset", 3, 3)), r"\[row 3\]\.offset: 3 does not follow 3"),
    (_table(offset=_with("offset", 2, 2**63)), r"\[row 2\]\.offset: 9223372036854775808 is beyond"),
    (_table(kind=_with("kind", 3, "bogus")), r"\[row 3\]\.kind: not an update kind: 'bogus'"),
    (_table(vertex=_with("vertex", 1, None)), r"\[row 1\]\.vertex: no vertex set"),
    (_table(dst=_with("dst", 3, None)), r"\[row 3\]\.dst: add_edge needs the edge's target"),
    (
        _table(kind=_with("kind", 4, "add_vertex")),
        r"\[row 4\]\.dst: add_vertex takes no dst",
    ),
    (
        _table(time=pa.array([_BAD_T, _BAD_T, float("nan"), _BAD_T, _BAD_T], pa.float64())),
        r"\[row 2\]\.time: time must be finite, got nan",
    ),
    (_table(time=_with("time", 3, None)), r"\[row 3\]\.time: no time set"),
    (
        _table(kind=_with("kind", 1, "remove_edge"), props=pa.array([{"w": 1}] * 5)),
        r"\[row 1\]\.props: remove_edge takes no properties",
    ),
    (
        _table(vertex_type=_with("kind", 2, "Nope").cast(pa.string())),
        r"\[row 0\]\.vertex_type: add_edge takes no vertex_type",
    ),
    (
        _table(
            kind=_with("kind", 2, "add_vertex"),
            dst=_with("dst", 2, None),
            vertex_type=pa.array([None, None, "Nope", None, None], pa.string()),
        ),
        r"\[row 2\]\.vertex_type: unknown vertex type 'Nope' \(known: TemporalVertex",
    ),
    (  # the first bad row counts, whatever its column
        _table(kind=_with("kind", 3, "bogus"), time=_with("time", 1, None)),
        r"\[row 1\]\.time: no time set",
    ),
    (_table(time=_with("time", 3, _BAD_T + 1)), r"\[row 3\]\.time: .*goes back from"),
    (_table(time=_with("time", 0, 5)), r"\[row 0\]\.time: .*before .*up to which the graph"),
    (_table(dst=None), r"batch\.arrow_ipc\.dst: a required column is missing"),
    (
        _table(vertex=pa.array(["a"] * 5)),
        r"batch\.arrow_ipc\.vertex: type string; must be an integer type",
    ),
    (_table(extra=pa.array([1] * 5)), r"batch\.arrow_ipc\.extra: not a column"),
    (_table(_MAX_ROWS + 1), rf"batch\.arrow_ipc: more than {_MAX_ROWS} rows"),
    (b"not arrow at all", r"batch\.arrow_ipc: not a readable Arrow IPC stream"),
    (
        pb.IngestBatch(
            arrow_ipc=to_arrow_ipc([_table()]),
            records=[to_record(_edges("bad", 1, 1)[0])],
        ),
        r"^batch: a batch has records or arrow_ipc, not both",
    ),
]


def test_bad_arrow_batches_are_refused_whole_naming_row_and_column(arrow_graph):
    graph, gateway, _ = arrow_graph
    graph.wait_idle()
    before = log_positions(graph)
    with client(gateway) as c:
        for payload, pattern in _BAD:
            if isinstance(payload, pa.RecordBatch):
                payload = pb.IngestBatch(arrow_ipc=to_arrow_ipc([payload]))
            elif isinstance(payload, bytes):
                payload = pb.IngestBatch(arrow_ipc=payload)
            with pytest.raises(grpc.RpcError) as caught:
                _stream(c, "bad", payload)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, pattern
            details = caught.value.details()
            assert re.search(pattern, details), (pattern, details)
            if not pattern.startswith(r"batch\.") and "^" not in pattern:
                assert details.startswith("batch.arrow_ipc[row "), details
        assert log_positions(graph) == before
        # a good batch after them is taken: the refusals left the source as it was
        (_, ack) = _stream(c, "bad", pb.IngestBatch(arrow_ipc=to_arrow_ipc([_table()])))
        assert (ack.ack.records, ack.ack.skipped, ack.ack.through_offset) == (5, 0, 5)
