"""What waiting costs the driver: its CPU time during ``GraphCluster.wait_idle``.

The ring workload (:func:`bench.workloads.ring_seed`: ``vertices`` tokens hopping from
vertex to vertex across 2 shards, ``messages`` hops in all) is seeded through a source
actor; once the seeds are applied the driver calls ``wait_idle()``, which lasts until the
last hop. Before issue 20 a wait spun without sleeping and every round summed every
vertex's out-edges on every shard; now each shard answers a long poll once it is quiet.
Both trees run the same script in fresh processes (this checkout, and ``--before``); the
driver's CPU seconds and the wall time of the wait are reported, with the machine's load::

    python -m bench.wait_idle --before b47a433 --messages 300000

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


def probe(vertices: int, messages: int, workdir: Path) -> dict[str, Any]:
    """One run in this process: seed the ring, then ``wait_idle`` timed (CPU and wall)."""
    import ray

    import chronoray as cr
    from bench.workloads import RingVertex, ring_seed

    ray.init(
        address="local",
        num_cpus=2,
        object_store_memory=200 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        log_dir = str(workdir / "g")
        with cr.GraphCluster(num_shards=2, log_dir=log_dir, vertex_types=[RingVertex]) as g:
            g.ingest(ring_seed(vertices, messages), wait=False).wait()
            cpu, wall = time.process_time(), time.perf_counter()
            g.wait_idle()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            executions = sum(_clock(s) for s in g.stats().shards)
    finally:
        ray.shutdown()
    return {
        "messages": messages,
        "executions": executions,
        "driver_cpu_seconds": cpu,
        "wait_seconds": wall,
    }


def _clock(stats: Any) -> int:
    """A shard's worker clock, from a tree whose shard stats are a dict or a ShardStats."""
    return int(stats["worker_clock"] if isinstance(stats, dict) else stats.worker_clock)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--before", default="b47a433", help="Git revision ('none': skip).")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe is not None:
        result = probe(args.vertices, args.messages, args.probe)
        print(json.dumps(result))
        return result
    from bench.baseline import tree
    from bench.report import machine, write_results
    from bench.restarts import run_script

    runs = {}
    for name, revision in (("now", None), ("before", args.before)):
        root = tree(revision)
        if root is not None:
            sizes = ["--vertices", str(args.vertices), "--messages", str(args.messages)]
            runs[name] = run_script(root, Path(__file__), sizes)
    result = {
        "benchmark": "wait_idle",
        "vertices": args.vertices,
        "messages": args.messages,
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
        f"# Driver CPU during `wait_idle`: a ring of {result['vertices']:,} tokens, "
        f"{result['messages']:,} hops over 2 shards",
        "",
        f"{result['machine']['cpus']} CPUs, load {result['load'][0]:.1f} when written; "
        f"'before' = commit {result['before']}, same run, fresh processes.",
        "",
        "| tree | executions | wait (s) | driver CPU (s) |",
        "|---|---:|---:|---:|",
    ]
    for name, run in result["runs"].items():
        lines.append(
            f"| {name} | {run['executions']:,} | {run['wait_seconds']:.1f} "
            f"| {run['driver_cpu_seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
