"""Side by side in one run: the same stream in chronoray and in the other systems, the
answers checked against one oracle before any time is reported.

:func:`compare` writes the stream's Parquet input (:mod:`bench.systems.common`), runs
each system's script with its own interpreter (:mod:`bench.envs`; chronoray's is this
process's), and checks every answer against the oracle computed here from the input:
the same vertex set and edge set at T, PageRank within :data:`RANK_TOLERANCE` of
``networkx.pagerank`` per vertex, the same weakly connected components. A mismatch
raises :class:`Disagreement` naming the system and what differs; only agreeing answers
have their times reported.
"""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import pyarrow as pa
import pyarrow.parquet as pq

from bench.envs import SYSTEMS, python_of
from bench.generators import Stream, workload
from bench.systems.common import alive_pairs, canonical_components
from chronoray.tides import GraphTidesSource
from vertex.records import UpdateKind

__all__ = ["COMPARABLE", "Disagreement", "RANK_TOLERANCE", "compare", "export_inputs"]

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "systems"
COMPARABLE = tuple(SYSTEMS)
RANK_TOLERANCE = 1e-6
TOL = 1e-12  # networkx's tol (its test: L1 change < N * tol); the scripts use the same
CHRONORAY_TOL = 1e-10  # chronoray's tol: largest change per vertex (within ~6e-10)


class Disagreement(RuntimeError):
    """A system's answer differs from the oracle (the run fails; no time is reported)."""


def export_inputs(stream: Stream, out: Path) -> dict[str, Any]:
    """The stream as ``vertices.parquet`` and ``edges.parquet`` (see
    :mod:`bench.systems.common`), and the distinct event times (index = the rank ``t``)."""
    if workload(stream.workload).kind != "graph":
        raise ValueError(f"{stream.workload} is an actor workload: no graph to compare")
    times: list[float] = []
    seen: dict[Any, int] = {}
    edges: dict[str, list[Any]] = {"src": [], "dst": [], "t": [], "op": []}
    removals = False
    for update in GraphTidesSource(stream.path).read():
        if not times or update.ts != times[-1]:
            times.append(update.ts)
        t = len(times) - 1
        kind = update.kind
        if kind is UpdateKind.REMOVE_VERTEX:
            raise ValueError(f"{stream.path}:{update.offset}: comparisons take no vertex removals")
        ends = [update.vertex] if update.dst is None else [update.vertex, update.dst]
        for v in ends if kind is not UpdateKind.REMOVE_EDGE else ():
            seen.setdefault(v, t)
        if kind in (UpdateKind.ADD_EDGE, UpdateKind.REMOVE_EDGE):
            removals |= kind is UpdateKind.REMOVE_EDGE
            for column, value in zip(
                edges, (update.vertex, update.dst, t, int(kind is UpdateKind.ADD_EDGE)), strict=True
            ):
                edges[column].append(value)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({"id": list(seen), "t": list(seen.values())}, schema=_VERTICES),
        out / "vertices.parquet",
    )
    pq.write_table(pa.table(edges, schema=_EDGES), out / "edges.parquet")
    return {"times": times, "removals": removals}


_VERTICES = pa.schema([("id", pa.int64()), ("t", pa.int64())])
_EDGES = pa.schema([("src", pa.int64()), ("dst", pa.int64()), ("t", pa.int64()), ("op", pa.int8())])


def _oracle(out: Path, at: int) -> dict[str, Any]:
    """The vertex set, edge set, PageRank and components at rank ``at``, from the input."""
    vertices = pq.read_table(out / "vertices.parquet")
    ids = {
        v
        for v, t in zip(vertices["id"].to_pylist(), vertices["t"].to_pylist(), strict=True)
        if t <= at
    }
    srcs, dsts = alive_pairs(pq.read_table(out / "edges.parquet"), at)
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_edges_from(zip(srcs, dsts, strict=True))
    parts = list(nx.weakly_connected_components(graph))
    order = sorted(graph)
    labels = {v: k for k, part in enumerate(parts) for v in part}
    return {
        "vertices": set(graph),
        "edges": set(zip(srcs, dsts, strict=True)),
        "ranks": nx.pagerank(graph, tol=TOL, max_iter=10_000),
        "components": dict(
            zip(order, canonical_components(order, [labels[v] for v in order]), strict=True)
        ),
    }


def _check(name: str, out: Path, oracle: dict[str, Any]) -> dict[str, Any]:
    """Raise :class:`Disagreement` unless ``name``'s answer is the oracle's."""
    vertices = pq.read_table(out / f"{name}-vertices.parquet").to_pydict()
    edges = pq.read_table(out / f"{name}-edges.parquet").to_pydict()
    got_edges = list(zip(edges["src"], edges["dst"], strict=True))
    problems = []
    if set(vertices["id"]) != oracle["vertices"]:
        extra, missing = (
            set(vertices["id"]) - oracle["vertices"],
            oracle["vertices"] - set(vertices["id"]),
        )
        problems.append(
            f"vertices: {len(extra)} extra {sorted(extra)[:5]}, "
            f"{len(missing)} missing {sorted(missing)[:5]}"
        )
    if len(got_edges) != len(set(got_edges)) or set(got_edges) != oracle["edges"]:
        extra, missing = set(got_edges) - oracle["edges"], oracle["edges"] - set(got_edges)
        problems.append(
            f"edges: {len(got_edges)} rows, {len(extra)} extra {sorted(extra)[:5]}, "
            f"{len(missing)} missing {sorted(missing)[:5]}"
        )
    error = max(
        (
            abs(r - oracle["ranks"].get(v, float("inf")))
            for v, r in zip(vertices["id"], vertices["rank"], strict=True)
        ),
        default=0.0,
    )
    if not error <= RANK_TOLERANCE:
        problems.append(f"PageRank differs by {error:.3g} (> {RANK_TOLERANCE:g}) from networkx")
    components = dict(zip(vertices["id"], vertices["component"], strict=True))
    wrong = [v for v, c in components.items() if oracle["components"].get(v) != c]
    if wrong:
        problems.append(f"components differ at {len(wrong)} vertices, e.g. {sorted(wrong)[:5]}")
    if problems:
        raise Disagreement(f"{name} disagrees with the oracle at T: " + "; ".join(problems))
    return {"vertices": len(vertices["id"]), "edges": len(got_edges), "max_rank_error": error}


def _run(system: str, python: Path, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    script = SCRIPTS / f"{system}_run.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(python), str(script), json.dumps(params)],
        capture_output=True,
        text=True,
        env=env,
        cwd=params["out"],
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{system} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def compare(
    stream: Stream,
    systems: list[str],
    out: Path,
    *,
    at_fraction: float = 0.75,
    shards: int = 2,
    timeout: float = 3600,
    progress: Any = None,
) -> dict[str, Any]:
    """Run chronoray and ``systems`` on ``stream`` cut at the time of ``at_fraction`` of
    its events; check every answer (:class:`Disagreement`) and return the timings.
    A system whose environment is missing raises ``RuntimeError`` saying how to make it
    (the runner makes it first). ``progress(label)`` is told each step."""
    unknown = [s for s in systems if s not in COMPARABLE]
    if unknown:
        raise ValueError(f"unknown systems {unknown}; known: {', '.join(COMPARABLE)}")
    step = progress or (lambda label: None)
    step("export Parquet input")
    inputs = export_inputs(stream, out)
    at_time = stream.time_at(at_fraction)
    at = bisect.bisect_right(inputs["times"], at_time) - 1
    params = {
        "vertices": str(out / "vertices.parquet"),
        "edges": str(out / "edges.parquet"),
        "at": at,
        "at_time": at_time,
        "tol": TOL,
        "out": str(out),
        "removals": inputs["removals"],
        "tides": str(stream.path),
        "shards": shards,
        "spark": "spark" in systems,
    }
    step("oracle (networkx in this process)")
    oracle = _oracle(out, at)
    runs: dict[str, Any] = {}
    for system in ["chronoray", *systems]:
        python = Path(sys.executable) if system == "chronoray" else python_of(system)
        if python is None:
            raise RuntimeError(f"no environment for {system}: python -m bench.envs {system}")
        step(f"run {system}")
        chronoray_params = {**params, "tol": CHRONORAY_TOL} if system == "chronoray" else params
        runs[system] = _run(system, python, chronoray_params, timeout)
    step("check the answers")
    answers = [*runs, *(["chronoray-spark"] if params["spark"] else [])]
    checks = {name: _check(name, out, oracle) for name in answers}
    return {
        "at_fraction": at_fraction,
        "at_time": at_time,
        "at_rank": at,
        "removals": inputs["removals"],
        "oracle": {"vertices": len(oracle["vertices"]), "edges": len(oracle["edges"])},
        "checks": checks,
        "runs": runs,
    }
