"""Pregel PageRank on Ray, 2 partitions, on the CollegeMsg cut, against networkx: where a
superstep's time goes (issue 25 item 2).

One side of a before/after comparison: run it once per code version (``PYTHONPATH``
chooses which ``snapshot`` package is imported) and let ``--label`` name the side;
``bench/pregel_ray_compare.sh`` alternates both sides and ``--report`` folds their JSON
lines into one table. Each run ingests CollegeMsg into a 2-shard ``GraphCluster`` on a
local Ray (2 CPUs), takes the snapshot at ``--at`` and measures ``--trials`` times, in
turn: networkx ``pagerank(tol=1e-10)`` on the built DiGraph (graph building excluded),
and networkx as a user runs it on the file (the DiGraph of the edges up to ``--at`` built
from the file, then the same pagerank: the issue's "networkx" of its 11x figure),
the array-form Pregel PageRank on Ray with 2 partitions (after one warm-up run that
starts the pooled actors), split into setup (partitions into the actors), supersteps
and the rest (results), and inside the actors into compute (the worker's superstep) and
exchange (the direct connection: sending, waiting for the peer, receiving) per
superstep; where the program carries a fused step, the same program on its generic path
(``fused=None``); the per-vertex form the same way; and the array form in this process
(2 partitions in turn: the program's and engine's own numpy work, no Ray).
Prints one JSON line; ``--profile`` adds the driver's cProfile top lines.

    PYTHONPATH=$PWD python bench/pregel_ray.py --label after --trials 3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import profile_top

AT = 1090000000
TOL = 1e-10


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _run_job(graph: Any, program: Any, executor: str) -> dict[str, Any]:
    job_module = sys.modules["snapshot.models.pregel"]
    started = time.perf_counter()
    job = job_module.PregelJob(graph, program, num_partitions=2, executor=executor)
    built = time.perf_counter()
    result = job.run()
    ran = time.perf_counter()
    inside = getattr(job.group, "timing", lambda: [])()  # the actors' own splits
    job.close()
    ended = time.perf_counter()
    steps = sum(s["seconds"] for s in result.steps if "superstep" in s)
    return {
        "seconds": ended - started,
        "setup": built - started,
        "supersteps_seconds": steps,
        "other": (ran - built - steps) + (ended - ran),
        "supersteps": result.info["supersteps"],
        "ranks": result.to_dict("rank"),
        **{
            f"actor_{k}_ms": 1e3 * sum(t[k] for t in inside) / sum(t["steps"] for t in inside)
            for k in ("compute", "exchange")
            if inside and all(t["steps"] for t in inside)
        },
    }


def _summary(runs: list[dict[str, Any]], reference: dict[Any, float]) -> dict[str, Any]:
    out = {k: _median([r[k] for r in runs]) for k in ("seconds", "setup", "supersteps_seconds")}
    out["other"] = _median([r["other"] for r in runs])
    for key in ("actor_compute_ms", "actor_exchange_ms"):
        if all(key in r for r in runs):
            out[key] = _median([r[key] for r in runs])
    out["trials"] = [round(r["seconds"], 4) for r in runs]
    out["supersteps"] = runs[-1]["supersteps"]
    out["ms_per_superstep"] = 1e3 * out["supersteps_seconds"] / out["supersteps"]
    ranks = runs[-1]["ranks"]
    out["max_error"] = max(abs(ranks[v] - reference[v]) for v in reference)
    return out


def _nx_graph(nx: Any, path: Path) -> Any:
    """The DiGraph of ``path``'s edges up to :data:`AT` (a SNAP ``src dst time`` file)."""
    graph = nx.DiGraph()
    with open(path) as f:
        for line in f:
            src, dst, ts = line.split()
            if float(ts) <= AT:
                graph.add_edge(int(src), int(dst))
    return graph


def measure(label: str, trials: int, profile: bool) -> dict[str, Any]:
    """One side's figures (see the module docstring)."""
    import networkx as nx
    import ray

    import chronoray as cr
    from chronoray.datasets import collegemsg_path
    from snapshot.algorithms.pagerank import pagerank_arrays, pagerank_program

    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=200 * 2**20)
    work = Path(tempfile.mkdtemp(prefix="chronoray-pregel-ray-"))
    load = [os.getloadavg()]
    with cr.GraphCluster(num_shards=2, log_dir=str(work / "g")) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        snap = g.snapshot(at=AT)
        graph = _nx_graph(nx, collegemsg_path())
        reference = nx.pagerank(graph, tol=1e-13, max_iter=1000)
        tables = (snap.vertices(), snap.edges())
        arrays, vertex = pagerank_arrays(0.85, TOL, 200), pagerank_program(0.85, TOL, 200)
        programs = {"arrays": (snap, arrays, "ray"), "vertex": (snap, vertex, "ray")}
        if getattr(arrays, "fused", None) is not None:  # the same program, generic path
            programs["generic"] = (snap, dataclasses.replace(arrays, fused=None), "ray")
        programs["local"] = (tables, arrays, "local")
        _run_job(snap, arrays, "ray")  # starts the pooled actors
        _run_job(snap, vertex, "ray")
        nx_seconds: list[float] = []
        nx_file_seconds: list[float] = []
        runs: dict[str, list[dict[str, Any]]] = {form: [] for form in programs}
        for _ in range(trials):
            started = time.perf_counter()
            nx.pagerank(graph, tol=TOL)
            nx_seconds.append(time.perf_counter() - started)
            started = time.perf_counter()
            nx.pagerank(_nx_graph(nx, collegemsg_path()), tol=TOL)
            nx_file_seconds.append(time.perf_counter() - started)
            for form, job_args in programs.items():
                runs[form].append(_run_job(*job_args))
        load.append(os.getloadavg())
        result: dict[str, Any] = {
            "label": label,
            "vertices": snap.meta.vertices,
            "edges": snap.meta.edges,
            "load": load,
            "networkx_pagerank_seconds": _median(nx_seconds),
            "networkx_trials": [round(s, 4) for s in nx_seconds],
            "networkx_file_seconds": _median(nx_file_seconds),
            **{form: _summary(r, reference) for form, r in runs.items()},
        }
        if profile:
            result["profile"] = profile_top(lambda: _run_job(snap, arrays, "ray"), 14)
    ray.shutdown()
    return result


def _sides(paths: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """The JSON lines of ``paths`` by their side's label, in order."""
    sides: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            if line.startswith("{"):
                got = json.loads(line)
                sides.setdefault(got["label"], []).append(got)
    return sides


def report(paths: list[Path]) -> str:
    """The markdown table of every side's JSON lines in ``paths`` (medians over runs)."""
    sides = _sides(paths)
    rows = [
        "| side | runs x trials | networkx | arrays on Ray | x networkx "
        "| networkx from the file | x networkx from the file | setup | supersteps "
        "| ms per superstep | in actor: compute / exchange ms | other | arrays, generic path "
        "| per-vertex on Ray | arrays in process | load (1 min) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, got in sides.items():

        def med(*keys: str, of: list[dict[str, Any]] = got) -> float:
            values = []
            for g in of:
                value: Any = g
                for k in keys:
                    value = value.get(k, float("nan")) if isinstance(value, dict) else value
                values.append(value)
            return _median(values)

        nxs, nxf = med("networkx_pagerank_seconds"), med("networkx_file_seconds")
        loads = [f"{g['load'][0][0]:.0f}-{g['load'][-1][0]:.0f}" for g in got]
        rows.append(
            f"| {label} | {len(got)} x {len(got[0]['arrays']['trials'])} | {nxs:.3f} "
            f"| {med('arrays', 'seconds'):.3f} | {med('arrays', 'seconds') / nxs:.1f}x "
            f"| {nxf:.3f} | {med('arrays', 'seconds') / nxf:.2f}x "
            f"| {med('arrays', 'setup'):.3f} | {med('arrays', 'supersteps_seconds'):.3f} "
            f"| {med('arrays', 'ms_per_superstep'):.2f} "
            f"| {med('arrays', 'actor_compute_ms'):.2f} / {med('arrays', 'actor_exchange_ms'):.2f} "
            f"| {med('arrays', 'other'):.3f} | {med('generic', 'seconds'):.3f} "
            f"| {med('vertex', 'seconds'):.3f} | {med('local', 'seconds'):.3f} "
            f"| {', '.join(loads)} |"
        )
    return "\n".join(rows)


def fold(paths: list[Path], note: str) -> dict[str, Any]:
    """The JSON ``bench.analyses`` reads for its target row: the last side's median run
    (by the array form's seconds) at the top, with the medians over its runs of the
    array form's and networkx's seconds; the first side's median run as ``before``;
    every line under ``runs``."""
    sides = _sides(paths)

    def median_run(got: list[dict[str, Any]]) -> dict[str, Any]:
        return sorted(got, key=lambda g: g["arrays"]["seconds"])[len(got) // 2]

    labels = list(sides)
    after = sides[labels[-1]]
    top = dict(median_run(after))  # a copy: the run itself stays as it was under "runs"
    for key in ("networkx_pagerank_seconds", "networkx_file_seconds"):
        top[key] = _median([g[key] for g in after if key in g])
    top["arrays"] = {**top["arrays"], "seconds": _median([g["arrays"]["seconds"] for g in after])}
    return {
        "benchmark": "pregel_ray",
        **top,
        "label": f"{top['label']}, {note}".rstrip(", "),
        "date": time.strftime(  # when the last run was written, not when it was folded
            "%Y-%m-%d %H:%M UTC", time.gmtime(max(p.stat().st_mtime for p in paths))
        ),
        "before": median_run(sides[labels[0]]) if len(labels) > 1 else None,
        "runs": [g for got in sides.values() for g in got],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--report", nargs="*", type=Path, help="fold these JSON-line files")
    parser.add_argument("--json", type=Path, help="with --report: also write the fold here")
    parser.add_argument("--note", default="", help="with --json: where and how it was run")
    args = parser.parse_args()
    if args.report is not None:
        print(report(args.report))
        if args.json is not None:
            args.json.write_text(json.dumps(fold(args.report, args.note), indent=1) + "\n")
        return
    print(json.dumps(measure(args.label, args.trials, args.profile)), flush=True)


if __name__ == "__main__":
    main()
