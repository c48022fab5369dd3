"""Chaos campaign: processes killed at seeded random moments while two sources feed a
graph, then the graph now and at past times compared with the file oracle.

Each round is one :func:`chronoray.chaos.run_chaos` on a fresh Ray instance: CollegeMsg
x ``--copies`` and Bitcoin OTC ingested by two source actors into 4 shards, with a live
degree histogram, an in-driver gRPC gateway polled by a client and a snapshot reader,
while shard processes (the hosts of the live computation's parts), source actors, the
gateway and the graph's controller are killed. Rounds repeat (seed + round) until
``--kills`` kills are done; then ``--node-kills`` nodes of a 3-node ``ray.cluster_utils``
cluster (logs on shared storage) are removed and added back in a last round, every other
kill a node's (shard, source and controller kills between). Writes ``chaos.json`` and ``chaos.md``
(machine load beside them); exits 1 if any guarantee broke::

    python -m bench.chaos                      # the campaign (>= 100 kills)
    python -m bench.chaos --kills 4 --copies 1 --node-kills 0 --out /tmp/chaos  # smoke
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import ray

from bench.report import machine, write_results
from chronoray.chaos import ChaosPlan, ChaosReport, run_chaos

RESULTS = Path(__file__).parent / "results"
_RAY = {"num_cpus": 2, "object_store_memory": 200 * 1024 * 1024, "include_dashboard": False}


def _round(plan: ChaosPlan, workdir: Path) -> ChaosReport:
    try:
        return run_chaos(plan, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _local_round(plan: ChaosPlan, workdir: Path) -> ChaosReport:
    ray.init(address="local", log_to_driver=False, **_RAY)
    try:
        return _round(plan, workdir)
    finally:
        ray.shutdown()


def _node_round(plan: ChaosPlan, workdir: Path) -> ChaosReport:
    from chronoray.testing import simulated_cluster

    cluster = simulated_cluster(3, num_cpus=1, head_cpus=2)
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        plan.cluster = cluster
        return _round(plan, workdir)
    finally:
        ray.shutdown()
        cluster.shutdown()


def _summary(report: ChaosReport) -> dict[str, Any]:
    counts = report.counts()
    return {
        "kills": counts["per_target"],
        "seconds": report.seconds,
        "updates": report.updates,
        "resent_batches": counts["resent_batches"],
        "resumed_skipped": counts["resumed_skipped"],
        "recover_median_s": counts["recover_median_s"],
        "recover_max_s": counts["recover_max_s"],
        "recover_by_target": counts["recover_by_target"],
        "final_exact": report.final is not None and report.final.exact,
        "cuts_exact": f"{sum(c.exact for c in report.cuts)}/{len(report.cuts)}",
        "readers_exact": f"{sum(c.exact for c in report.readers)}/{len(report.readers)}",
        "gateway_told": report.gateway_told,
        "live_histogram": report.live_histogram,
        "failures": report.failures(),
    }


def _by_target(rounds: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for r in rounds:
        for target, n in r["kills"].items():
            total[target] = total.get(target, 0) + n
    return total


def _markdown(result: dict[str, Any]) -> str:
    rows = [
        "# Chaos campaign",
        "",
        f"{result['total_kills']} kills in {len(result['rounds'])} rounds, seed "
        f"{result['seed']}; {result['machine']['cpus']} CPUs, load before: "
        f"{result['load_before']}, after: {result['load_after']}.",
        "",
        "| round | kills | updates | s | resent batches | recover median / max s | now exact "
        "| past cuts exact | readers exact | gateway told | live histogram |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(result["rounds"]):
        kills = ", ".join(f"{n} {t}" for t, n in sorted(r["kills"].items()))
        told = ", ".join(f"{n} {k}" for k, n in sorted(r["gateway_told"].items()))
        rows.append(
            f"| {i} | {kills} | {r['updates']:,} | {r['seconds']:.0f} | {r['resent_batches']} "
            f"| {r['recover_median_s']} / {r['recover_max_s']} | {r['final_exact']} "
            f"| {r['cuts_exact']} | {r['readers_exact']} | {told} | {r['live_histogram']} |"
        )
    rows += [
        "",
        "## Kills by target",
        "",
        "Seconds from the kill until the target answered again (every shard answers; a "
        "restarted source or controller answers with a new pid; a new gateway serves), "
        "median and max of each round's median and max.",
        "",
        "| target | kills | recover median s (rounds) | recover max s |",
        "|---|---|---|---|",
    ]
    for target, n in sorted(_by_target(result["rounds"]).items()):
        medians = [
            r["recover_by_target"][target]["median_s"]
            for r in result["rounds"]
            if target in r.get("recover_by_target", {})
        ]
        worst = max(
            (
                r["recover_by_target"][target]["max_s"]
                for r in result["rounds"]
                if target in r.get("recover_by_target", {})
            ),
            default=None,
        )
        rows.append(f"| {target} | {n} | {', '.join(f'{m:g}' for m in medians)} | {worst} |")
    failures = [f"- round {i}: {f}" for i, r in enumerate(result["rounds"]) for f in r["failures"]]
    rows += ["", "## Broken guarantees", "", *(failures or ["none"]), ""]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100, help="Kills of local rounds.")
    parser.add_argument("--per-round", type=int, default=40, help="Kills per round at most.")
    parser.add_argument("--copies", type=int, default=10, help="CollegeMsg copies.")
    parser.add_argument("--node-kills", type=int, default=4, help="Node kills (0: none).")
    parser.add_argument("--node-copies", type=int, default=10, help="Copies in the node round.")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rounds: list[dict[str, Any]] = []
    total = 0
    workroot = Path(tempfile.mkdtemp(prefix="chronoray-chaos-"))

    def result() -> dict[str, Any]:
        """The results so far (written after every round: a long campaign cut short
        keeps its finished rounds)."""
        done = {
            "machine": machine(),
            "seed": args.seed,
            "total_kills": total,
            "load_before": [round(x, 1) for x in load_before],
            "load_after": [round(x, 1) for x in os.getloadavg()],
            "rounds": rounds,
            "failures": sum(len(r["failures"]) for r in rounds),
        }
        write_results(args.out, "chaos", done, _markdown(done), show=False)
        return done

    try:
        while total < args.kills:
            plan = ChaosPlan(
                seed=args.seed + len(rounds),
                kills=min(args.per_round, args.kills - total),
                copies=args.copies,
            )
            report = _local_round(plan, workroot / f"round-{len(rounds)}")
            rounds.append(_summary(report))
            total += len(report.kills)
            result()
            if not report.kills:
                break  # the sources ended before a kill: more rounds would not help
        if args.node_kills:
            plan = ChaosPlan(
                seed=args.seed + len(rounds),
                kills=args.node_kills * 2,
                targets=("node", "shard", "node", "source", "node", "controller"),
                cycle=True,  # a node every other kill: the sources may end before the last
                copies=args.node_copies,
                gap=(2.0, 4.0),
            )
            report = _node_round(plan, workroot / "nodes")
            rounds.append(_summary(report))
            total += len(report.kills)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    done = result()
    print(_markdown(done))
    return done


if __name__ == "__main__":
    raise SystemExit(1 if main()["failures"] else 0)
