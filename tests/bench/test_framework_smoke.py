"""The evaluation framework at tiny sizes: every workload generated and replayed, the
replayer's schedule, every comparison (the other systems' only where their environment
was made: ``python -m bench.envs``), the runner and its results page."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import chronoray as cr
from bench.compare import Disagreement, _check, _oracle, compare
from bench.envs import SYSTEMS, python_of
from bench.generators import POST_IDS, WORKLOADS, actor_shape
from bench.replay import Pacer, replay_once
from bench.run import run_workload


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    """Every workload written at its tiny size."""
    where = tmp_path_factory.mktemp("streams")
    return {name: w.write(where / f"{name}.tides", w.tiny_size) for name, w in WORKLOADS.items()}


def _graph_oracle(stream):
    """Vertices and alive pairs at the end, read from the file independently."""
    vertices, alive = set(), {}
    for line in stream.path.read_text().splitlines():
        command, entity, _ = line.split(",", 2)
        if command == "CREATE_VERTEX":
            vertices.add(int(entity))
        elif command in ("CREATE_EDGE", "REMOVE_EDGE"):
            src, dst = (int(x) for x in entity.split("-"))
            vertices |= {src, dst}
            alive[(src, dst)] = command == "CREATE_EDGE"
    return vertices, {pair for pair, on in alive.items() if on}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_workload_replays_in_process(streams, name):
    stream = streams[name]
    spec = WORKLOADS[name]
    entries = list(cr.GraphTidesSource(stream.path).entries())
    markers = [e for e in entries if isinstance(e, cr.Marker)]
    assert [m.id for m in markers] == [m[0] for m in stream.markers]
    assert markers[-1].payload["events"] == stream.events
    result = replay_once(stream, "local")
    assert result["updates"] == stream.events
    assert result["latency_p50_ms"] > 0
    if spec.kind == "actors":
        actors, tokens, hops = actor_shape(spec.tiny_size)
        assert result["executions"] == actors + actors * tokens * hops  # creations, hops
        return
    vertices, edges = _graph_oracle(stream)
    assert (result["vertices"], result["edges"]) == (len(vertices), len(edges))


def test_social_stream_is_shaped_like_snb(streams):
    updates = list(cr.GraphTidesSource(streams["social"].path).read())
    kinds = {u.kind for u in updates}
    assert kinds == {
        cr.UpdateKind.ADD_VERTEX,
        cr.UpdateKind.ADD_EDGE,
        cr.UpdateKind.MESSAGE,
        cr.UpdateKind.REMOVE_EDGE,
    }
    posts = {u.vertex for u in updates if u.kind is cr.UpdateKind.ADD_VERTEX}
    assert any(v >= POST_IDS for v in posts) and any(v < POST_IDS for v in posts)
    assert all(u.vertex != u.dst for u in updates)
    assert [u.ts for u in updates] == sorted(u.ts for u in updates)


def test_pacer_holds_the_rate_and_obeys_controls():
    updates = [cr.Update.add_edge(1, 2, t).with_origin("s", t + 1) for t in range(100)]
    entries = [*updates[:50], cr.Control("pause", 0.2), cr.Control("speed", 2.0), *updates[50:]]
    pacer = Pacer(iter(entries), rate=1000.0)
    started = time.perf_counter()
    offered = [u for stretch in pacer.stretches() for u in stretch]
    elapsed = time.perf_counter() - started
    assert offered == updates and pacer.count == 100
    assert elapsed >= 0.05 + 0.2 + 0.025  # 50 at 1000/s, the pause, 50 at 2000/s: never sooner


@pytest.mark.ray
@pytest.mark.long  # a benchmark smoke test: the long set (bench/results/long_tests.md)
@pytest.mark.parametrize("runtime", ["ray", "gateway"])
def test_replay_on_ray_and_through_the_gateway(ray_session, streams, runtime):
    stream = streams["social"]
    result = replay_once(stream, runtime)
    vertices, edges = _graph_oracle(stream)
    assert (result["updates"], result["vertices"], result["edges"]) == (
        stream.events,
        len(vertices),
        len(edges),
    )
    assert result["log_bytes_per_event"] > 0 and result["snapshot_mid_seconds"] > 0
    assert result["cpu_seconds"]["shards"] > 0 and result["latency_p99_ms"] > 0
    assert ("gateway" in result["cpu_seconds"]) == (runtime == "gateway")


AVAILABLE = [system for system in SYSTEMS if python_of(system) is not None]
QUICK = [system for system in AVAILABLE if system != "spark"]  # Spark: minutes, a long runner


@pytest.fixture(scope="module")
def side_by_side(streams, tmp_path_factory):
    """chronoray and every quick system whose environment was made, on tiny CollegeMsg."""
    where = tmp_path_factory.mktemp("compare")
    return where, compare(streams["college"], QUICK, where)


@pytest.mark.long  # a benchmark smoke test: the long set (bench/results/long_tests.md)
def test_chronoray_agrees_with_the_oracle(side_by_side):
    where, result = side_by_side
    check = result["checks"]["chronoray"]
    assert (check["vertices"], check["edges"]) == (
        result["oracle"]["vertices"],
        result["oracle"]["edges"],
    )
    assert check["max_rank_error"] <= 1e-6
    # a wrong answer fails the run: one edge dropped from chronoray's
    edges = pq.read_table(where / "chronoray-edges.parquet")
    pq.write_table(edges.slice(1), where / "chronoray-edges.parquet")
    with pytest.raises(Disagreement, match="chronoray disagrees with the oracle at T: edges"):
        _check("chronoray", where, _oracle(where, result["at_rank"]))
    pq.write_table(edges, where / "chronoray-edges.parquet")


def _skip_without(system):
    if system not in AVAILABLE:
        pytest.skip(f"no {system} environment (the runner makes it: python -m bench.envs {system})")


@pytest.mark.long  # a benchmark smoke test: the long set (bench/results/long_tests.md)
@pytest.mark.parametrize("system", [s for s in SYSTEMS if s != "spark"])
def test_each_system_agrees_side_by_side(side_by_side, system):
    _skip_without(system)
    _, result = side_by_side
    assert result["checks"][system]["max_rank_error"] <= 1e-6
    assert result["runs"][system]["seconds"]["pagerank"] > 0


@pytest.mark.long
def test_spark_agrees_side_by_side(streams, tmp_path):
    """Plain Spark on Parquet and chronoray's Spark analyses (RayDP): ~100 Spark jobs each."""
    _skip_without("spark")
    result = compare(streams["college"], ["spark"], tmp_path)
    for name in ("spark", "chronoray-spark"):
        assert result["checks"][name]["max_rank_error"] <= 1e-6


@pytest.mark.long  # a benchmark smoke test: the long set (bench/results/long_tests.md)
def test_edge_removals_agree(streams, tmp_path):
    result = compare(streams["social"], [], tmp_path)
    assert result["removals"] and result["checks"]["chronoray"]["max_rank_error"] <= 1e-6


def test_runner_writes_results_and_the_page(tmp_path):
    result = run_workload(
        "college", [1000], systems=[], runtime="local", trials=2, out=tmp_path, progress=False
    )
    saved = json.loads((tmp_path / "framework" / "college.json").read_text())
    assert saved["sizes"][0]["replay"]["updates_per_second"]["median"] > 0
    assert saved == json.loads(json.dumps(result))
    assert set(saved["context"]) >= {"date", "machine", "load", "versions"}
    from bench.page import write_page

    page = write_page(tmp_path).read_text()
    assert "## college" in page and "| 1,000 |" in page


@pytest.mark.long  # a benchmark smoke test: the long set (bench/results/long_tests.md)
def test_bench_all_reruns_every_section_as_recorded(tmp_path):
    """``python -m bench all`` runs each recorded workload again with its recorded
    configuration, then makes the page."""
    from bench.run import main

    run_workload("ring", [300], systems=[], runtime="local", trials=2, out=tmp_path,
                 progress=False)  # fmt: skip
    before = json.loads((tmp_path / "framework" / "ring.json").read_text())
    assert main(["all", "--out", str(tmp_path), "--no-curves"]) == 0
    after = json.loads((tmp_path / "framework" / "ring.json").read_text())
    assert after["config"] == before["config"]
    assert after["sizes"][0]["replay"] != before["sizes"][0]["replay"]  # measured again
    assert [s["stream"] for s in after["sizes"]] == [s["stream"] for s in before["sizes"]]
    assert "## ring" in (tmp_path / "README.md").read_text()


def test_bench_all_runs_the_curves_as_recorded():
    from bench.run import _curve_args

    recorded = {
        "stream": {"points": [{"events": 100}, {"events": 300}]},
        "shards": {"points": [{"events": 200, "shards": s} for s in (1, 2, 4)]},
    }
    assert _curve_args(recorded) == [
        "--parts", "stream,shards", "--sizes", "100,300", "--shard-size", "200"
    ]  # fmt: skip


def test_chronoray_bench_command_runs_the_checkout_runner(tmp_path):
    chronoray = str(Path(sys.executable).parent / "chronoray")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([chronoray, "bench", "list"], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert all(name in out.stdout for name in WORKLOADS)
    elsewhere = subprocess.run([chronoray, "bench", "list"], cwd=tmp_path, capture_output=True,
                               text=True)  # fmt: skip
    assert elsewhere.returncode == 1 and "source checkout" in elsewhere.stderr
