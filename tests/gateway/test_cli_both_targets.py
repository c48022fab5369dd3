"""``vertex``, ``history``, ``snapshot`` and ``analyze`` through a gateway (``--server``)
print what they print on the graph itself (``--graph``): the same tables, JSON and CSV,
the same one-line errors (issue 24). One named graph, a real gRPC server in front of it
on loopback, the CLI run in this process on both targets."""

from __future__ import annotations

import json
import re

import networkx as nx
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import chronoray as cr
from chronoray.cli import main
from chronoray.datasets import collegemsg_path
from chronoray.errors import GatewayError
from tests.gateway.gateway_helpers import TOKEN, client, served_graph

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_LINES = collegemsg_path().read_text().splitlines(keepends=True)[:3000]
_AT = float(_LINES[2000].split()[2])
_FROM = float(_LINES[500].split()[2])
_NAME = "gw-both"


@pytest.fixture(scope="module")
def served(ray_session, tmp_path_factory):
    """The first 3,000 CollegeMsg lines fed through the gateway; how to reach the graph
    either way (CLI arguments)."""
    tmp = tmp_path_factory.mktemp("both")
    part = tmp / "college-3000.txt"
    part.write_text("".join(_LINES))
    token = tmp / "token"
    token.write_text(TOKEN + "\n")
    with served_graph(_NAME, tmp) as (graph, gateway):
        with client(gateway) as c:
            c.ingest(cr.SnapEdgeSource(part))
        graph.wait_idle()
        reach = {
            "cluster": ["--graph", _NAME],
            "gateway": ["--server", gateway.address, "--token-file", str(token)],
        }
        yield graph, gateway, reach, tmp


def _run(*argv: object):
    return CliRunner().invoke(main, [str(a) for a in argv])


def _both(served, *argv: object, out: bool = False) -> dict[str, str]:
    """What ``argv`` prints on each target (``out``: the cluster target writes into a
    folder of its own); each must succeed."""
    _, _, reach, tmp = served
    said = {}
    for target, where in reach.items():
        folder = ["--out", tmp / f"out-{target}-{argv[0]}"] if out and target == "cluster" else []
        result = _run(*argv, *where, *folder)
        assert result.exit_code == 0, (target, result.output)
        said[target] = result.stdout
    return said


@pytest.mark.parametrize("output", ["table", "--json", "--csv"])
def test_vertex_is_the_same_through_the_gateway(served, output):
    graph = served[0]
    said = _both(served, "vertex", "1", *([] if output == "table" else [output]))
    assert said["gateway"] == said["cluster"]
    if output == "--json":
        found = json.loads(said["gateway"])
        assert found["clock"] == graph.vertex(1)["clock"]
        assert list(found["out_edges"]) == [str(v) for v in sorted(graph.out_edges(1))]
    if output == "table":
        clock = graph.vertex(1)["clock"]
        assert said["gateway"].startswith(f"vertex 1 (TemporalVertex, clock {clock}")


@pytest.mark.parametrize("output", ["table", "--json", "--csv"])
def test_history_is_the_same_through_the_gateway(served, output):
    graph = served[0]
    argv = ["history", "9", "--from", _FROM, "--to", _AT]
    said = _both(served, *argv, *([] if output == "table" else [output]))
    assert said["gateway"] == said["cluster"]
    if output == "--json":
        rows = [json.loads(line) for line in said["gateway"].splitlines()]
        local = graph.history(9, _FROM, _AT)
        assert [(r["clock"], r["state"]) for r in rows] == [(s["clock"], s["state"]) for s in local]
        assert [r["out_edges"] for r in rows] == [len(s["out_edges"]) for s in local]
        assert rows[0]["wc"] == 0 and all(r["wc"] > 0 for r in rows[1:])


def _without_seconds_and_paths(text: str) -> str:
    text = re.sub(r"\d+\.\d\d s\b", "_ s", " ".join(text.split()))
    return re.sub(r"wrote .*", "wrote _", text)


def test_snapshot_counts_are_the_same_through_the_gateway(served):
    graph = served[0]
    said = _both(served, "snapshot", "--at", _AT, out=True)
    cut = graph.snapshot(at=_AT).meta
    words = f"Snapshot(time {_AT}: {cut.vertices:,} vertices, {cut.edges:,} edges)"
    for text in said.values():
        assert " ".join(text.split()).startswith(words), text
    cluster, gateway = (_without_seconds_and_paths(said[k]) for k in ("cluster", "gateway"))
    assert gateway == cluster
    assert "(on the gateway's machine)" in " ".join(said["gateway"].split())
    (server_edges,) = (served[3] / "out").glob("snapshot-*/edges.parquet")  # the gateway's
    assert pq.read_table(server_edges).num_rows == cut.edges


def _college_components(at: float) -> int:
    pairs = nx.Graph()
    for line in _LINES:
        src, dst, ts = line.split()
        if float(ts) <= at:
            pairs.add_edge(int(src), int(dst))
    return nx.number_connected_components(pairs)


@pytest.mark.parametrize("engine", ["auto", "ray"])
def test_analysis_numbers_are_the_same_through_the_gateway(served, engine):
    argv = ["analyze", "wcc", "--at", _AT, "--engine", engine, "--top", "5"]
    said = _both(served, *argv, "--json", out=True)
    cluster, gateway = (json.loads(said[k]) for k in ("cluster", "gateway"))
    for data in (cluster, gateway):
        data.pop("seconds")
        data.pop("wrote")
    assert gateway == cluster
    assert gateway["engine"] == ("local" if engine == "auto" else "ray")
    assert gateway["info"]["components"] == _college_components(_AT)
    tables = _both(served, *argv, out=True)
    cluster_table, gateway_table = (_without_seconds_and_paths(tables[k]) for k in tables)
    assert gateway_table == cluster_table


def test_an_unknown_vertex_is_one_line_on_either_target(served):
    _, _, reach, _ = served
    for where in reach.values():
        for command in ("vertex", "history"):
            result = _run(command, "424242", *where)
            assert result.exit_code == 1, result.output
            (line,) = result.stderr.strip().splitlines()
            assert line.startswith("error: vertex 424242 not found in "), line
            assert line.endswith(where[1]), line  # the graph's name, the gateway's address


def test_the_gateway_refuses_an_unknown_engine(served):
    gateway = served[1]
    with client(gateway) as c, pytest.raises(GatewayError, match=r"params\['engine'\]: one of"):
        c.analyze("wcc", engine="gpu")
