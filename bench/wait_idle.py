"""What waiting costs the driver: its CPU time during ``GraphCluster.wait_idle``.

A source actor ingests CollegeMsg x ``copies`` into 2 shards (``ingest(..., wait=False)``)
and the driver calls ``wait_idle()`` at once, so it waits for the whole ingest. Before
issue 20 a wait spun without sleeping and every round summed every vertex's out-edges on
every shard; now each shard answers a long poll once it is quiet. Both trees run the same
script in fresh processes (this checkout, and ``--before``); the driver's CPU seconds and
the wall time of the wait are reported, with the machine's load::

    python -m bench.wait_idle --before b47a433

Writes ``wait_idle.json`` and ``wait_idle.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def probe(copies: int, workdir: Path) -> dict[str, Any]:
    """One run in this process: ingest, then ``wait_idle`` timed (CPU and wall)."""
    import ray

    import chronoray as cr
    from bench.workloads import write_snap
    from chronoray.datasets import collegemsg_path

    lines = collegemsg_path().read_text().splitlines()
    rows = [tuple(int(x) for x in line.split()) for line in lines]
    span = rows[-1][2] - rows[0][2] + 1
    stream = [(s, d, t + k * span) for k in range(copies) for s, d, t in rows]
    path = workdir / "college.txt"
    write_snap(path, stream)
    ray.init(
        address="local",
        num_cpus=2,
        object_store_memory=200 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        with cr.GraphCluster(num_shards=2, log_dir=str(workdir / "g")) as g:
            job = g.ingest(cr.SnapEdgeSource(path), wait=False)
            cpu, wall = time.process_time(), time.perf_counter()
            g.wait_idle()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            job.wait()
            edges = g.stats().edges
    finally:
        ray.shutdown()
    return {"updates": len(stream), "edges": edges, "driver_cpu_seconds": cpu, "wait_seconds": wall}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--before", default="b47a433", help="Git revision ('none': skip).")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe is not None:
        result = probe(args.copies, args.probe)
        print(json.dumps(result))
        return result
    from bench.baseline import tree
    from bench.report import machine, write_results
    from bench.restarts import run_script

    runs = {}
    for name, revision in (("now", None), ("before", args.before)):
        root = tree(revision)
        if root is not None:
            runs[name] = run_script(root, Path(__file__), ["--copies", str(args.copies)])
    result = {
        "benchmark": "wait_idle",
        "copies": args.copies,
        "before": None if args.before == "none" else args.before,
        "machine": machine(),
        "load": os.getloadavg(),
        "runs": runs,
    }
    if "before" in runs:
        result["driver_cpu_before_over_now"] = (
            runs["before"]["driver_cpu_seconds"] / runs["now"]["driver_cpu_seconds"]
        )
    write_results(args.out, "wait_idle", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        "# Driver CPU during `wait_idle` (a whole ingest of CollegeMsg x"
        f"{result['copies']}, 2 shards)",
        "",
        f"{result['machine']['cpus']} CPUs, load {result['load'][0]:.1f} when written; "
        f"'before' = commit {result['before']}, same run, fresh processes.",
        "",
        "| tree | updates | wait (s) | driver CPU (s) |",
        "|---|---:|---:|---:|",
    ]
    for name, run in result["runs"].items():
        lines.append(
            f"| {name} | {run['updates']:,} | {run['wait_seconds']:.1f} "
            f"| {run['driver_cpu_seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
