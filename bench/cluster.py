"""Ingestion rate on a cluster: the source in the driver versus a source actor, and two
shards on one node versus spread over two (simulated) nodes, in one run.

A 2-node ``ray.cluster_utils.Cluster`` on this machine (nodes labelled n0, n1); for each
trial, each of the four combinations ingests the same CollegeMsg lines into a new graph
of 2 shards (modes interleaved, so a slow spell of the shared machine hits them all); the
median rate per mode is kept. Run: ``python -m bench.cluster``; results in
``bench/results/cluster.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import machine, median_run, write_results

__all__ = ["main"]

RESULTS = Path(__file__).parent / "results"
_MODES = [("pack", True), ("pack", False), ("spread", True), ("spread", False)]


def _name(placement: str, in_driver: bool) -> str:
    return f"{placement} / {'driver' if in_driver else 'source actor'}"


def _run(data: Path, placement: str, in_driver: bool, logs: Path, address: str) -> dict[str, Any]:
    import chronoray as cr

    graph = cr.GraphCluster(
        num_shards=2, log_dir=str(logs), placement=placement, ray_address=address
    )
    try:
        nodes = sorted(set(graph.manifest.shard_nodes))
        started = time.perf_counter()  # the driver's view: a source actor's start-up counts
        report = graph.ingest(cr.SnapEdgeSource(data), in_driver=in_driver)
        seconds = time.perf_counter() - started
        edges = graph.stats().edges
    finally:
        graph.shutdown()
    return {
        "updates": report.updates,
        "seconds": seconds,
        "rate": report.updates / seconds,
        "nodes": nodes,
        "edges": edges,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=0, help="CollegeMsg lines (0: all).")
    parser.add_argument("--trials", type=int, default=3, help="Runs per mode; median kept.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    import ray

    from chronoray.datasets import collegemsg_path
    from chronoray.testing import simulated_cluster

    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-cluster-"))
    data = collegemsg_path()
    if args.lines:
        data = workdir / "collegemsg.txt"
        lines = collegemsg_path().read_text().splitlines(keepends=True)[: args.lines]
        data.write_text("".join(lines))
    cluster = simulated_cluster(2, num_cpus=1)
    ray.init(address=cluster.address, namespace="chronoray", log_to_driver=False)
    trials: dict[str, list[dict[str, Any]]] = {}
    try:
        for trial in range(args.trials):
            for placement, in_driver in _MODES:
                logs = workdir / f"t{trial}-{placement}-{int(in_driver)}"
                run = _run(data, placement, in_driver, logs, cluster.address)
                trials.setdefault(_name(placement, in_driver), []).append(run)
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    runs = {name: median_run(results) for name, results in trials.items()}
    rate = {name: run["rate"] for name, run in runs.items()}
    result = {
        "benchmark": "cluster",
        "updates": runs[_name("pack", True)]["updates"],
        "trials": args.trials,
        "machine": machine(),
        "runs": runs,
        "ratios": {
            "source actor / driver (pack)": rate[_name("pack", False)] / rate[_name("pack", True)],
            "source actor / driver (spread)": rate[_name("spread", False)]
            / rate[_name("spread", True)],
            "spread / pack (source actor)": rate[_name("spread", False)]
            / rate[_name("pack", False)],
            "spread / pack (driver)": rate[_name("spread", True)] / rate[_name("pack", True)],
        },
    }
    write_results(args.out, "cluster", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"# Cluster ingestion: {result['updates']:,} CollegeMsg updates, 2 shards",
        "",
        f"Median of {result['trials']} interleaved trials per mode, on a simulated 2-node Ray"
        " cluster on one machine (both nodes share its 2 cores: spreading shows the cost of"
        " placement and cross-node calls, not the gain of a second machine). Seconds are the"
        " driver's, from `ingest()` to the graph being idle (a source actor's start included).",
        "",
        "| placement / source | shard nodes | seconds | updates/s | trials (updates/s) |",
        "|---|---|---:|---:|---|",
    ]
    for name, run in result["runs"].items():
        lines.append(
            f"| {name} | {', '.join(run['nodes'])} | {run['seconds']:.2f} | {run['rate']:,.0f} "
            f"| {', '.join(f'{r:,}' for r in run['trial_rates'])} |"
        )
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in result["ratios"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
