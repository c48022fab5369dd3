"""Ingestion through the gRPC gateway versus in-process, 1 and 4 concurrent feeders, in
one run: updates/s and the latency of a batch's acknowledgement (p50, p99).

Every mode feeds the same CollegeMsg lines, in batches of ``--batch`` records each
acknowledged once logged, into a new named graph of 2 shards on a local Ray instance:

* ``in-process``: sources fed by this driver through ``GraphCluster.feeding`` (the
  gateway's own path to the graph: ``FeedPump.run`` per batch), one thread per source;
* ``gRPC``: the gateway as a Ray actor of the graph (``chronoray serve --detach``) on
  loopback, each source fed by a client in a process of its own (``GatewayClient``,
  its default window of 2 unacknowledged batches; clients start together once all are
  connected).

Both read their lines into updates before the clock starts.

With 4 feeders the lines are split into 4 contiguous quarters, one source each. A
latency is the time from handing a batch over (to ``FeedPump.run``, or to gRPC) to its
acknowledgement; a rate is records over the time from the first hand-over to the last
acknowledgement. Modes are interleaved per trial and the median trial kept. Run:
``python -m bench.gateway``; results in ``bench/results/gateway.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.report import machine, median_run, write_results

__all__ = ["main"]

RESULTS = Path(__file__).parent / "results"
_TOKEN = "bench-gateway-token"


def _split(data: Path, parts: int, folder: Path) -> list[Path]:
    """``data`` as ``parts`` files of contiguous lines (one source each)."""
    lines = data.read_text().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    paths = []
    for i in range(parts):
        path = folder / f"part{i + 1}-of-{parts}.txt"
        path.write_text("".join(lines[i * size : (i + 1) * size]))
        paths.append(path)
    return paths


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(
    records: int, start: float, end: float, latencies: list[float], cpu: dict[str, float]
) -> dict[str, Any]:
    return {
        "records": records,
        "seconds": end - start,
        "rate": records / (end - start),
        "ack_p50_ms": 1000 * _percentile(latencies, 0.50),
        "ack_p99_ms": 1000 * _percentile(latencies, 0.99),
        "batches": len(latencies),
        "cpu_us_per_record": {k: 1e6 * v / records for k, v in cpu.items()},
    }


def _cpu_seconds(pid: int) -> float:
    import psutil  # Ray's own dependency

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


# -- in-process ---------------------------------------------------------------------------


def _feed_here(graph: Any, path: Path, updates: list[Any], batch: int, out: dict[str, Any]) -> None:
    latencies = []
    with graph.feeding(path.name) as pump:
        out["start"] = time.time()
        for i in range(0, len(updates), batch):
            handed = time.perf_counter()
            pump.run(updates[i : i + batch], lambda n: None)
            latencies.append(time.perf_counter() - handed)
        out["end"] = time.time()
    out.update(records=len(updates), latencies=latencies)


def _in_process(graph: Any, parts: list[Path], batch: int) -> dict[str, Any]:
    import chronoray as cr

    outs: list[dict[str, Any]] = [{} for _ in parts]
    threads = [
        threading.Thread(
            target=_feed_here,
            args=(graph, path, list(cr.SnapEdgeSource(path).read()), batch, out),
        )
        for path, out in zip(parts, outs, strict=True)
    ]
    cpu = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return _combined(outs, {"driver": time.process_time() - cpu})


def _combined(outs: list[dict[str, Any]], cpu: dict[str, float]) -> dict[str, Any]:
    return _summary(
        sum(o["records"] for o in outs),
        min(o["start"] for o in outs),
        max(o["end"] for o in outs),
        [x for o in outs for x in o["latencies"]],
        cpu,
    )


# -- through the gateway ------------------------------------------------------------------


def _client(address: str, token_file: str, path: str, batch: int, go: str) -> None:
    """One client process: connect, say ready, wait for the go file, feed, print JSON."""
    import chronoray as cr
    from chronoray.client import GatewayClient

    updates = list(cr.SnapEdgeSource(path).read())  # parsed before the clock, as in-process
    with GatewayClient(address, token_file=token_file) as client:
        client.stats()  # connected and authenticated before the clock starts
        Path(f"{path}.ready").touch()
        while not Path(go).exists():
            time.sleep(0.01)
        start, cpu = time.time(), time.process_time()
        result = client.ingest(updates, name=Path(path).name, batch_size=batch)
        end, cpu = time.time(), time.process_time() - cpu
    print(
        json.dumps(
            {
                "records": result.sent,
                "start": start,
                "end": end,
                "cpu": cpu,
                "latencies": result.ack_latencies,
            }
        )
    )


def _through_gateway(
    address: str, token_file: Path, parts: list[Path], batch: int, workdir: Path, pid: int
) -> dict[str, Any]:
    go = workdir / f"go-{time.monotonic_ns()}"
    clients = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.gateway", "--client", address, str(token_file)]
            + [str(path), str(batch), str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for path in parts
    ]
    while not all(Path(f"{path}.ready").exists() for path in parts):
        if any(c.poll() is not None for c in clients):
            raise RuntimeError("a client process ended before it was ready")
        time.sleep(0.05)
    gateway_cpu = _cpu_seconds(pid)
    go.touch()
    outs = []
    for client in clients:
        out, _ = client.communicate(timeout=1200)
        if client.returncode != 0:
            raise RuntimeError(f"a client process failed ({client.returncode})")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    gateway_cpu = _cpu_seconds(pid) - gateway_cpu
    for path in parts:
        Path(f"{path}.ready").unlink()
    return _combined(outs, {"clients": sum(o["cpu"] for o in outs), "gateway": gateway_cpu})


def _trial(
    mode: str, parts: list[Path], batch: int, workdir: Path, token_file: Path
) -> dict[str, Any]:
    import ray

    import chronoray as cr
    from chronoray.controller import graph_namespace
    from chronoray.gateway import GatewaySettings, start_gateway_actor, stop_gateway_actor
    from chronoray.gateway.server import GATEWAY_ACTOR
    from chronoray.testing import free_port

    name = f"bench-{mode.replace(' ', '')}-{len(parts)}-{time.monotonic_ns()}"
    graph = cr.GraphCluster.create(name, num_shards=2, log_dir=str(workdir / name))
    try:
        if mode == "in-process":
            return _in_process(graph, parts, batch)
        port = free_port()
        settings = GatewaySettings(port=port, token_file=str(token_file))
        start_gateway_actor(name, settings)
        try:
            actor = ray.get_actor(GATEWAY_ACTOR, namespace=graph_namespace(name))
            pid = ray.get(actor.pid.remote())
            return _through_gateway(f"127.0.0.1:{port}", token_file, parts, batch, workdir, pid)
        finally:
            stop_gateway_actor(name)
    finally:
        graph.shutdown()


def _label(mode: str, feeders: int) -> str:
    return f"{mode}, {feeders} feeder{'s' if feeders > 1 else ''}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=0, help="CollegeMsg lines (0: all).")
    parser.add_argument("--batch", type=int, default=1000, help="Records per batch.")
    parser.add_argument("--trials", type=int, default=3, help="Runs per mode; median kept.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    parser.add_argument("--client", nargs=5, help=argparse.SUPPRESS)  # a client process
    args = parser.parse_args(argv)
    if args.client:
        address, token_file, path, batch, go = args.client
        _client(address, token_file, path, int(batch), go)
        return {}
    import ray

    from chronoray.datasets import collegemsg_path

    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-gateway-"))
    data = collegemsg_path()
    if args.lines:
        data = workdir / "collegemsg.txt"
        data.write_text("".join(collegemsg_path().read_text().splitlines(True)[: args.lines]))
    token_file = workdir / "token"
    token_file.write_text(_TOKEN + "\n")
    feeds = {1: _split(data, 1, workdir), 4: _split(data, 4, workdir)}
    ray.init(
        address="local",
        num_cpus=2,
        object_store_memory=256 * 1024 * 1024,
        include_dashboard=False,
        namespace="chronoray",
        log_to_driver=False,
    )
    trials: dict[tuple[str, int], list[dict[str, Any]]] = {}
    try:
        for _ in range(args.trials):
            for feeders, parts in feeds.items():
                for mode in ("in-process", "gRPC"):
                    run = _trial(mode, parts, args.batch, workdir, token_file)
                    trials.setdefault((mode, feeders), []).append(run)
    finally:
        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    runs = {_label(mode, n): median_run(r) for (mode, n), r in trials.items()}
    result = {
        "benchmark": "gateway",
        "records": runs[_label("in-process", 1)]["records"],
        "batch": args.batch,
        "trials": args.trials,
        "machine": machine(),
        "runs": runs,
        "ratios": {
            _label("gRPC / in-process", n): runs[_label("gRPC", n)]["rate"]
            / runs[_label("in-process", n)]["rate"]
            for n in feeds
        },
    }
    write_results(args.out, "gateway", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"# Gateway ingestion: {result['records']:,} CollegeMsg updates, 2 shards, "
        f"batches of {result['batch']:,}",
        "",
        f"Median of {result['trials']} interleaved trials per mode (machine: "
        f"{result['machine']['cpus']} CPUs, shared by the shards, the gateway, the clients and"
        " the driver). A batch is acknowledged once its records are logged; its latency is from"
        " handing it over to its acknowledgement. CPU time per update of the processes that"
        " feed (the shards' own, the same in every mode, is not counted): the driver"
        " in-process; the client processes and the gateway through gRPC.",
        "",
        "| mode | updates/s | ack p50 (ms) | ack p99 (ms) | seconds | CPU us/update "
        "(feeding side) | trials (updates/s) |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for name, run in result["runs"].items():
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in run["cpu_us_per_record"].items())
        lines.append(
            f"| {name} | {run['rate']:,.0f} | {run['ack_p50_ms']:.1f} | {run['ack_p99_ms']:.1f} "
            f"| {run['seconds']:.2f} | {cpu} | {', '.join(f'{r:,}' for r in run['trial_rates'])} |"
        )
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in result["ratios"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
