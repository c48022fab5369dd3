"""Gateway ingestion as records versus as Arrow IPC batches, one client, in one run:
updates/s, CPU time per update of the client and of the gateway, and a cProfile of the
gateway's side of an Arrow stream.

Each trial feeds the same CollegeMsg lines (once, and ``--repeats`` times over with the
times shifted: a stream long enough that the shards' start-up does not weigh in) into a new
named graph of 2 shards on a local
Ray instance, through a gateway in this process (``Gateway(graph, settings)``, loopback,
so its CPU time is this process's) from a client in a process of its own:

* ``records``: the updates (parsed before the clock) as ``UpdateRecord`` messages;
* ``arrow``: the file source's column batches (parsed before the clock) as Arrow IPC
  (``IngestBatch.arrow_ipc``), at the same batch size, and at a larger one;

the client sends up to ``--window`` batches ahead of their acknowledgements.

CPU times are what the machine's load cannot inflate as much as the wall clock: compare
their ratios when the machine is shared. Modes are interleaved per trial; the median
trial is kept. One more Arrow run of the longest stream, not timed, profiles the
gateway's ingestion threads: the stream's reader (decodes, checks, feeds) and its handler
(waits for the logs, acknowledges); the shards are other processes. Run:
``python -m bench.gateway_arrow``; results in ``bench/results/gateway_arrow.json`` and
``.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.report import machine, median_run, write_results

__all__ = ["main"]

RESULTS = Path(__file__).parent / "results"
_TOKEN = "bench-gateway-arrow-token"


class _Loaded:
    """A file source read before the clock: its column batches, handed out again."""

    def __init__(self, path: str) -> None:
        import chronoray as cr

        source = cr.SnapEdgeSource(path)
        self.name = source.name
        self.items = list(source.batches())

    def batches(self) -> Iterator[Any]:
        return iter(self.items)

    def read(self) -> Iterator[Any]:  # pragma: no cover - the client reads batches()
        raise NotImplementedError


def _client(address: str, path: str, mode: str, batch: int, window: int, go: str) -> None:
    """One client process: load, connect, say ready, wait for the go file, feed, print
    JSON (records, wall and CPU seconds)."""
    import chronoray as cr
    from chronoray.client import GatewayClient

    if mode == "records":
        source: Any = list(cr.SnapEdgeSource(path).read())
    else:
        source = _Loaded(path)
    with GatewayClient(address, token=_TOKEN) as client:
        client.stats()
        Path(f"{go}.ready").touch()
        while not Path(go).exists():
            time.sleep(0.01)
        start, cpu = time.perf_counter(), time.process_time()
        result = client.ingest(
            source,
            name=Path(path).name,
            batch_size=batch,
            window=window,
            arrow=mode != "records",
        )
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"records": result.sent, "seconds": seconds, "cpu": cpu}))


def _trial(
    data: Path,
    mode: str,
    batch: int,
    window: int,
    workdir: Path,
    profiles: list[cProfile.Profile] | None = None,
) -> dict[str, Any]:
    import chronoray as cr
    from chronoray.gateway import Gateway, GatewaySettings
    from chronoray.gateway.service import GatewayService

    name = f"bench-arrow-{mode}-{time.monotonic_ns()}"
    graph = cr.GraphCluster.create(name, num_shards=2, log_dir=str(workdir / name))
    originals = {n: getattr(GatewayService, n) for n in _PROFILED if hasattr(GatewayService, n)}
    if profiles is not None:
        for name, original in originals.items():
            setattr(GatewayService, name, _profiled(original, profiles))
    try:
        settings = GatewaySettings(port=0, token=_TOKEN, output_dir=str(workdir / "out"))
        gateway = Gateway(graph, settings).start()
        try:
            go = workdir / f"go-{time.monotonic_ns()}"
            client = subprocess.Popen(
                [sys.executable, "-m", "bench.gateway_arrow", "--client", gateway.address]
                + [str(data), mode, str(batch), str(window), str(go)],
                stdout=subprocess.PIPE,
                text=True,
            )
            while not Path(f"{go}.ready").exists():
                if client.poll() is not None:
                    raise RuntimeError("the client process ended before it was ready")
                time.sleep(0.05)
            cpu = time.process_time()
            go.touch()
            out, _ = client.communicate(timeout=1200)
            gateway_cpu = time.process_time() - cpu
            if client.returncode != 0:
                raise RuntimeError(f"the client process failed ({client.returncode})")
            run = json.loads(out.strip().splitlines()[-1])
            graph.wait_idle()
            edges = graph.stats().edges
        finally:
            gateway.stop(grace=0)
    finally:
        for name, original in originals.items():
            setattr(GatewayService, name, original)
        graph.shutdown()
    n = run["records"]
    return {
        "records": n,
        "seconds": run["seconds"],
        "rate": n / run["seconds"],
        "client_cpu_us": 1e6 * run["cpu"] / n,
        "gateway_cpu_us": 1e6 * gateway_cpu / n,
        "edges": edges,
    }


_PROFILED = ("Ingest", "_take_batches")
"""The gateway's ingestion threads: the handler (acks; before the pipeline also the
decoding, checks and feeding) and the stream's reader (decoding, checks, the feed)."""


def _profiled(method: Any, profiles: list[cProfile.Profile]) -> Any:
    """``method`` (a function or a generator function) run under a profile of its own,
    in the thread that runs it, added to ``profiles``."""

    def started() -> cProfile.Profile:
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        return profile

    if inspect.isgeneratorfunction(method):

        def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
            profile = started()
            try:
                yield from method(*args, **kwargs)
            finally:
                profile.disable()

        return generator

    def function(*args: Any, **kwargs: Any) -> Any:
        profile = started()
        try:
            return method(*args, **kwargs)
        finally:
            profile.disable()

    return function


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=0, help="CollegeMsg lines (0: all).")
    parser.add_argument("--batch", type=int, default=1000, help="Records per batch.")
    parser.add_argument("--big-batch", type=int, default=8192, help="A larger Arrow batch.")
    parser.add_argument("--trials", type=int, default=3, help="Runs per mode; median kept.")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    parser.add_argument(
        "--window", type=int, default=8, help="Batches the client sends ahead of their ack."
    )
    parser.add_argument(
        "--repeats",
        default="1,5,20",
        help="Stream lengths, in CollegeMsgs (k: the file k times over, times shifted).",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="The JSON of a run of other code (e.g. main's) on this bench, to compare with.",
    )
    parser.add_argument("--client", nargs=6, help=argparse.SUPPRESS)  # a client process
    args = parser.parse_args(argv)
    if args.client:
        address, path, mode, batch, window, go = args.client
        _client(address, path, mode, int(batch), int(window), go)
        return {}
    import ray

    from chronoray.datasets import collegemsg_path

    before = json.loads(args.before.read_text()) if args.before else None
    loads = [os.getloadavg()[0]]
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-gateway-arrow-"))
    lines = collegemsg_path().read_text().splitlines(True)
    lines = lines[: args.lines] if args.lines else lines
    repeats = [int(k) for k in args.repeats.split(",")]
    files = {k: _repeated(lines, k, workdir / f"collegemsg-x{k}.txt") for k in repeats}
    modes = [("records", args.batch), ("arrow", args.batch), ("arrow", args.big_batch)]
    ray.init(
        address="local",
        num_cpus=2,
        object_store_memory=256 * 1024 * 1024,
        include_dashboard=False,
        namespace="chronoray",
        log_to_driver=False,
    )
    trials: dict[str, list[dict[str, Any]]] = {}
    profiles: list[cProfile.Profile] = []
    try:
        for _ in range(args.trials):
            for k, data in files.items():
                for mode, batch in modes:
                    trials.setdefault(_label(mode, batch, k), []).append(
                        _trial(data, mode, batch, args.window, workdir)
                    )
        _trial(files[repeats[-1]], "arrow", args.big_batch, args.window, workdir, profiles)
    finally:
        loads.append(os.getloadavg()[0])
        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    runs = {label: median_run(r) for label, r in trials.items()}
    by_size = {k: runs[_label("records", args.batch, k)] for k in repeats}
    text = io.StringIO()
    stats = pstats.Stats(*profiles, stream=text)
    stats.sort_stats("tottime").print_stats(15)
    own = _own_steps(stats, by_size[repeats[-1]]["records"])
    result = {
        "benchmark": "gateway_arrow",
        "records": by_size[repeats[0]]["records"],
        "repeats": repeats,
        "trials": args.trials,
        "client_window": args.window,
        "machine": {**machine(), "load_1min_start_end": loads},
        "runs": runs,
        "ratios_vs_records": {
            label: {
                "rate": run["rate"] / records["rate"],
                "client_cpu": run["client_cpu_us"] / records["client_cpu_us"],
                "gateway_cpu": run["gateway_cpu_us"] / records["gateway_cpu_us"],
            }
            for k, records in by_size.items()
            for label, run in runs.items()
            if label.endswith(f"x{k}")
        },
        "before": None if before is None else _before(before, runs),
        "profile_top15": _trimmed(text.getvalue()),
        "gateway_steps_us_per_update": own,
    }
    write_results(args.out, "gateway_arrow", result, _table(result))
    return result


def _before(before: dict[str, Any], runs: dict[str, Any]) -> dict[str, Any]:
    """Per mode both runs have: the earlier run's median and trials, and the ratio."""
    return {
        label: {
            "rate": then["rate"],
            "trial_rates": then["trial_rates"],
            "ratio": runs[label]["rate"] / then["rate"],
        }
        for label, then in before["runs"].items()
        if label in runs
    }


def _label(mode: str, batch: int, repeat: int) -> str:
    return f"{mode}, batch {batch}, x{repeat}"


def _repeated(lines: list[str], k: int, path: Path) -> Path:
    """The SNAP lines ``k`` times over, each copy's times after the previous copy's (so
    the stream stays in time order; offsets are line numbers), written to ``path``."""
    rows = [line.split() for line in lines if line.strip()]
    times = [int(r[2]) for r in rows]
    span = max(times) - min(times) + 1
    with path.open("w") as out:
        for copy in range(k):
            out.writelines(
                f"{r[0]} {r[1]} {t + copy * span}\n" for r, t in zip(rows, times, strict=True)
            )
    return path


_STEPS = {
    "arrow_updates_of": "decode + check (arrow_wire.arrow_updates_of)",
    "_fresh_columns": "resend skipping (_SourcePast._fresh_columns)",
    "_in_order_columns": "time order (_in_order_columns)",
    "_feed_items": "to the feed (service._feed_items)",
    "run": "FeedPump.run (before the pipeline: the feed, sending, waiting for the logs)",
    "offer": "FeedPump.offer (the reader: the feed, sending)",
    "wait_logged": "FeedPump.wait_logged (the handler: waiting for the shards' logs)",
}


_PUMP = {"run", "offer", "wait_logged"}


def _own_steps(stats: pstats.Stats, records: int) -> dict[str, float]:
    """Cumulative microseconds per update of the gateway's steps for an Arrow batch."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    out = dict.fromkeys(_STEPS.values(), 0.0)
    for (path, _, function), (_, _, _, cumulative, _) in table.items():
        if function in _STEPS and (function not in _PUMP or path.endswith("ingest.py")):
            out[_STEPS[function]] += 1e6 * cumulative / records
    return out


def _trimmed(text: str) -> str:
    """The profile's table, paths shortened to the repository or site-packages."""
    out = []
    for line in text.splitlines():
        for marker in ("site-packages/", str(Path(__file__).parent.parent) + "/"):
            if marker in line:
                head, _, tail = line.partition(marker)
                line = head[: head.rfind(" ") + 1] + tail
        out.append(line.rstrip())
    return "\n".join(line for line in out if line).strip()


def _table(result: dict[str, Any]) -> str:
    lines = [
        "# Gateway ingestion, records vs Arrow IPC: CollegeMsg, 2 shards, 1 client",
        "",
        f"Median of {result['trials']} interleaved trials per mode (machine: "
        f"{result['machine']['cpus']} CPUs, shared with the shards and other work; load"
        " average over 1 min at the start and the end: "
        f"{', '.join(f'{x:.1f}' for x in result['machine']['load_1min_start_end'])}). x1: "
        f"CollegeMsg once ({result['records']:,} updates; a fresh graph's shards spend much"
        " of it starting up), xk: k times over (times shifted), a longer stream. The client"
        f" sends up to {result['client_window']} batches ahead of their acks. CPU time"
        " per update of the client process and of the gateway (this process: decoding,"
        " checks, the feed, acks; not the shards').",
        "",
        "| mode | updates/s | seconds | client CPU us/update | gateway CPU us/update | "
        "edges | trials (updates/s) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, run in result["runs"].items():
        lines.append(
            f"| {label} | {run['rate']:,.0f} | {run['seconds']:.2f} | "
            f"{run['client_cpu_us']:.1f} | {run['gateway_cpu_us']:.1f} | {run['edges']:,} | "
            f"{', '.join(f'{r:,}' for r in run['trial_rates'])} |"
        )
    if result.get("before"):
        lines += [
            "",
            "Against the code before (`--before`: the same bench on it, in the same sitting):",
            "",
            "| mode | before updates/s | trials before | now updates/s | now / before |",
            "|---|---:|---|---:|---:|",
        ]
        for label, then in result["before"].items():
            lines.append(
                f"| {label} | {then['rate']:,.0f} | "
                f"{', '.join(f'{r:,}' for r in then['trial_rates'])} | "
                f"{result['runs'][label]['rate']:,.0f} | {then['ratio']:.2f} |"
            )
    lines += ["", "| vs records | rate | client CPU | gateway CPU |", "|---|---:|---:|---:|"]
    for label, r in result["ratios_vs_records"].items():
        lines.append(
            f"| {label} | {r['rate']:.2f} | {r['client_cpu']:.2f} | {r['gateway_cpu']:.2f} |"
        )
    lines += ["", "Gateway steps of one Arrow stream (cProfile, cumulative, us per update):", ""]
    lines += ["| step | us/update |", "|---|---:|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in result["gateway_steps_us_per_update"].items()]
    lines += [
        "",
        "Reading: the gateway's own work on an Arrow batch (decode, checks, offering it to the"
        " feed) is about 1 us per update; the rest of its threads' time is waiting -- the"
        " handler for the shards' logs (`wait_logged`, `ray.wait`) and for the reader (the"
        " window's lock), the reader for the client. Before the pipeline that wait was"
        " `FeedPump.run` per batch, serial; now the shards log one batch while the next are"
        " sent, and the rate is what the shards' CPU gives on cores they share with this"
        " process and the client.",
    ]
    lines += ["", "Gateway side of one Arrow stream (cProfile, top 15 by own time):", "", "```"]
    lines += [result["profile_top15"], "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
