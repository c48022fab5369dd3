"""The protocol every system script follows (standard library and pyarrow only: it runs in
every system's environment).

Input (written by :mod:`bench.compare`): ``vertices.parquet`` (``id``, ``t``: each
vertex's creation, explicit or as an edge's first endpoint) and ``edges.parquet`` (``src``,
``dst``, ``t``, ``op``: 1 adds an edge occurrence, 0 removes the edge), rows in stream
order; ``t`` is the dense rank of the event time, so every system cuts at the same
integer. The graph at ``at`` holds the vertices with ``t <= at`` and the pairs whose last
event up to ``at`` is an addition.

A script calls :func:`run` with its phases; each phase's wall time is measured, and the
answer is written as ``<out>/<system>-vertices.parquet`` (``id``, ``rank``,
``component`` = the smallest id of the vertex's weakly connected component) and
``<out>/<system>-edges.parquet`` (``src``, ``dst``). The last stdout line is the JSON of
the timings, versions and peak memory.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = [
    "Params",
    "alive_pairs",
    "canonical_components",
    "peak_rss",
    "read_input",
    "run",
]


class Params:
    """What the runner asks: the input files, the cut, the tolerance, where to answer."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.vertices = Path(raw["vertices"])
        self.edges = Path(raw["edges"])
        self.at = int(raw["at"])
        self.tol = float(raw["tol"])
        self.out = Path(raw["out"])
        self.removals = bool(raw["removals"])


def canonical_components(ids: list[Any], labels: list[Any]) -> list[Any]:
    """Each vertex's component named by the smallest id in it (labels of any engine)."""
    smallest: dict[Any, Any] = {}
    for v, label in zip(ids, labels, strict=True):
        if label not in smallest or v < smallest[label]:
            smallest[label] = v
    return [smallest[label] for label in labels]


def write_answer(
    params: Params,
    system: str,
    ranks: dict[Any, float],
    components: dict[Any, Any],
    edges: tuple[list[Any], list[Any]],
) -> None:
    """Write a system's answer (see the module docstring)."""
    ids = sorted(ranks)
    if set(components) != set(ids):
        raise RuntimeError(f"{system}: PageRank and components saw different vertices")
    labels = canonical_components(ids, [components[v] for v in ids])
    params.out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({"id": ids, "rank": [ranks[v] for v in ids], "component": labels}),
        params.out / f"{system}-vertices.parquet",
    )
    pq.write_table(
        pa.table({"src": edges[0], "dst": edges[1]}), params.out / f"{system}-edges.parquet"
    )


def read_input(params: Params) -> tuple[pa.Table, pa.Table]:
    """The two input tables."""
    return pq.read_table(params.vertices), pq.read_table(params.edges)


def alive_pairs(edges: pa.Table, at: int) -> tuple[list[Any], list[Any]]:
    """The pairs whose last event with ``t <= at`` adds them (rows are in stream order)."""
    cut = edges.filter(pc.less_equal(edges["t"], at))
    state: dict[tuple[Any, Any], int] = {}
    for s, d, op in zip(
        cut["src"].to_pylist(), cut["dst"].to_pylist(), cut["op"].to_pylist(), strict=True
    ):
        state[(s, d)] = op
    alive = [pair for pair, op in state.items() if op == 1]
    return [s for s, _ in alive], [d for _, d in alive]


def peak_rss() -> int:
    """This process's peak resident memory (VmHWM: unlike ``ru_maxrss``, it starts anew at
    exec, so it is not the runner's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def run(system: str, phases: list[tuple[str, Callable[[dict[str, Any]], None]]]) -> None:
    """Run ``phases`` (name, function of a shared dict) in order, timing each; then write
    the answer the phases left in the dict -- ``ranks`` and ``components`` (vertex ->
    value) and ``edges`` (``(srcs, dsts)``); ``more_answers`` (name -> ``(ranks,
    components)``, same edges) for a system that answers twice -- and print the JSON
    result line. The dict
    starts with ``params`` and ``versions`` (a phase adds its system's)."""
    params = Params(json.loads(sys.argv[1]))
    shared: dict[str, Any] = {"params": params, "versions": {}}
    seconds: dict[str, float] = {}
    for name, phase in phases:
        started = time.perf_counter()
        phase(shared)
        seconds[name] = time.perf_counter() - started
    write_answer(params, system, shared["ranks"], shared["components"], shared["edges"])
    for name, (ranks, components) in shared.get("more_answers", {}).items():
        write_answer(params, name, ranks, components, shared["edges"])
    print(
        json.dumps(
            {
                "system": system,
                "seconds": seconds,
                "versions": shared["versions"],
                "peak_rss_bytes": peak_rss(),
                "notes": shared.get("notes", {}),
            }
        )
    )
    sys.stdout.flush()
