"""Fault injection for tests and chaos runs: disk trouble, and (see :func:`run_chaos`)
processes killed at seeded random moments while a graph is fed.

Disk trouble is real: :func:`small_disk` mounts a tmpfs of a few megabytes (root only;
:class:`DiskTroubleUnavailable` says precisely why not otherwise), :func:`fill_disk` fills
it until the kernel answers ``ENOSPC``, :func:`read_only` bind-mounts a directory onto
itself read-only. Linux refuses to make a mount read-only while a file on it is open for
writing ("mount point is busy"), so a running shard's own log directory cannot be made
read-only under it; that case is a failing write, which :mod:`shards.faults` injects.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import random
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "TARGETS",
    "ChaosPlan",
    "ChaosReport",
    "CutCheck",
    "Kill",
    "chaos_streams",
    "run_chaos",
    "DiskTroubleUnavailable",
    "fill_disk",
    "read_only",
    "small_disk",
]


class DiskTroubleUnavailable(RuntimeError):
    """This machine does not let the test make the disk trouble (not root, no mount)."""


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise DiskTroubleUnavailable(f"mount {' '.join(args)} failed: {done.stderr.strip()}")


def _umount(path: Path) -> None:
    # lazy: a process of the test (a Ray worker, a RocksDB handle) may still hold a file
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def small_disk(path: str | os.PathLike[str], size_mb: int = 32) -> Iterator[Path]:
    """A fresh tmpfs of ``size_mb`` MB mounted at ``path`` (created) for the ``with``
    block. :class:`DiskTroubleUnavailable` if this process may not mount."""
    mount_point = Path(path)
    mount_point.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        raise DiskTroubleUnavailable("mounting a small tmpfs needs root")
    _mount("-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(mount_point))
    try:
        yield mount_point
    finally:
        _umount(mount_point)


def fill_disk(path: str | os.PathLike[str], chunk: int = 1 << 20) -> Path:
    """Write the file ``path`` until its file system is full (``ENOSPC``); returns it.
    Removing the file frees the space again."""
    filler = Path(path)
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            try:
                os.write(fd, b"\0" * chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if chunk == 1:
                    return filler
                chunk = max(1, chunk // 16)  # fill the last pages too
    finally:
        os.close(fd)


@contextlib.contextmanager
def read_only(path: str | os.PathLike[str]) -> Iterator[Path]:
    """``path`` (a directory) bind-mounted onto itself read-only for the ``with`` block:
    even root gets ``EROFS`` writing under it. :class:`DiskTroubleUnavailable` if this
    process may not mount, or a file under ``path`` is open for writing."""
    directory = Path(path)
    if os.geteuid() != 0:
        raise DiskTroubleUnavailable("a read-only bind mount needs root")
    _mount("--bind", str(directory), str(directory))
    try:
        _mount("-o", "remount,bind,ro", str(directory))
        yield directory
    finally:
        _umount(directory)


# -- the chaos runner -------------------------------------------------------------------


TARGETS = ("shard", "source", "gateway", "controller", "node")
"""What :func:`run_chaos` can kill: a shard actor's process (it is also the host of the
shard's part of every live computation: killing it is how a live-computation host is
killed), a source actor's process, the in-driver gRPC gateway (stopped at once and
started again on its port), the graph's controller process (Ray restarts it; it recovers
from the shards, ``LOG_DIR/controller.pickle`` and the sources' reports), a node of a
``ray.cluster_utils`` cluster (removed and added back with its label; its shards restart
on other nodes: logs on shared storage)."""


@dataclass
class ChaosPlan:
    """A chaos run: what is fed, what is killed, how often. Everything random comes from
    ``seed``. ``copies`` CollegeMsg copies (each after the previous one in time) and, with
    ``bitcoin``, Bitcoin OTC are ingested by two sources at once into ``shards`` shards;
    ``kills`` kills of ``targets`` happen ``gap`` seconds apart (uniform in the range)
    while they run, in the order :meth:`schedule` draws (it depends on ``seed`` alone, not
    on how fast the run goes); ``past_times`` time cuts are checked against the file oracle during
    the run (snapshot readers) and after it."""

    seed: int = 23
    kills: int = 10
    targets: tuple[str, ...] = ("shard", "source", "gateway", "controller")
    copies: int = 1
    bitcoin: bool = True
    shards: int = 4
    batch_size: int = 500
    gap: tuple[float, float] = (0.5, 2.0)
    past_times: int = 5
    cycle: bool = False
    """Kill ``targets`` in turn (a target listed twice: twice as often) instead of a
    random one each time: every target is hit although the sources may end early."""
    cluster: Any = None
    """A ``ray.cluster_utils.Cluster`` (from :func:`~chronoray.testing.simulated_cluster`)
    whose worker nodes ``"node"`` kills may remove; ``None``: no node kills."""

    def __post_init__(self) -> None:
        unknown = set(self.targets) - set(TARGETS)
        if unknown or not self.targets:
            raise ValueError(f"chaos targets must be some of {TARGETS}, not {self.targets}")

    def schedule(self) -> list[tuple[float, str, float]]:
        """The kills to make, drawn from ``seed`` alone: ``(gap before it, target, pick)``
        each, ``pick`` in ``[0, 1)`` choosing which shard, source or node. ``"node"``
        is left out without a ``cluster``. A run that ends first makes a prefix of it."""
        rng = random.Random(self.seed)
        targets = [t for t in self.targets if t != "node" or self.cluster is not None]
        if not targets:
            raise ValueError("only node kills planned, but no cluster given")
        return [
            (
                rng.uniform(*self.gap),
                targets[i % len(targets)] if self.cycle else rng.choice(targets),
                rng.random(),
            )
            for i in range(self.kills)
        ]


@dataclass
class Kill:
    """One kill: when (seconds into the run), what, its pid or node, how far each source
    had read (``max_ts``) at that moment, and the seconds from the kill until the target
    answered again (a shard or node: every shard answers; a source or the controller: its
    restarted process answers with a new pid; the gateway: the new one serves)."""

    at: float
    target: str
    detail: str
    progress: dict[str, float]
    recovered_after: float | None = None


@dataclass
class CutCheck:
    """A time cut ``T`` compared with the oracle: pairs and update counts missing from
    it and extra in it (an extra count: an update applied twice, or logged at a time
    after ``T`` although its own is ``<= T``, or the other way round)."""

    at: float
    who: str
    missing_updates: int = 0
    extra_updates: int = 0
    wrong_pairs: int = 0
    example: str = ""
    error: str = ""

    @property
    def exact(self) -> bool:
        """No difference and no error."""
        return not (self.missing_updates or self.extra_updates or self.error)


@dataclass
class ChaosReport:
    """What a chaos run did and found (:meth:`failures` empty: it passed)."""

    plan: dict[str, Any]
    seconds: float = 0.0
    updates: int = 0
    kills: list[Kill] = field(default_factory=list)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    final: CutCheck | None = None
    cuts: list[CutCheck] = field(default_factory=list)
    readers: list[CutCheck] = field(default_factory=list)
    gateway_told: dict[str, int] = field(default_factory=dict)
    gateway_problems: list[str] = field(default_factory=list)
    live_histogram: str = ""
    """The live degree histogram at the end: ``exact``, ``WRONG``, or ``refused: why``;
    a shard restart ends the live computations it hosted, which then say so
    (``LiveComputationLost``): it is restarted and checked, ``exact (restarted; told:
    ...)``."""
    errors: list[str] = field(default_factory=list)

    def failures(self) -> list[str]:
        """One line per broken guarantee, naming the cut, the counts and the kills before."""
        out = list(self.errors)
        for check in [c for c in [self.final] if c is not None] + self.cuts + self.readers:
            if check.exact:
                continue
            before = [k for k in self.kills if min(k.progress.values(), default=0) <= check.at]
            out.append(
                f"{check.who} at T={check.at:g}: {check.missing_updates} updates missing, "
                f"{check.extra_updates} extra over {check.wrong_pairs} pairs"
                f"{' (' + check.example + ')' if check.example else ''}"
                f"{'; error: ' + check.error if check.error else ''}; kills while the "
                f"sources were at or before T: {len(before)} "
                f"({', '.join(sorted({k.target for k in before})) or 'none'})"
            )
        out += self.gateway_problems
        if self.live_histogram.startswith("WRONG"):
            out.append("the live degree histogram differs from the oracle's")
        return out

    def counts(self) -> dict[str, Any]:
        """Kills per target, batches resent (their updates already applied are skipped
        by the shards), updates skipped by a resuming source, seconds until the killed
        target answered again (median, max; overall and per target)."""
        per: dict[str, int] = {}
        for k in self.kills:
            per[k.target] = per.get(k.target, 0) + 1
        recovered = sorted(k.recovered_after for k in self.kills if k.recovered_after is not None)
        by_target: dict[str, list[float]] = {}
        for k in self.kills:
            if k.recovered_after is not None:
                by_target.setdefault(k.target, []).append(k.recovered_after)
        return {
            "kills": len(self.kills),
            "per_target": per,
            "recover_by_target": {
                t: {"median_s": sorted(v)[len(v) // 2], "max_s": max(v)}
                for t, v in sorted(by_target.items())
            },
            "resent_batches": sum(s.get("resent_batches", 0) for s in self.sources.values()),
            "resumed_skipped": sum(s.get("skipped", 0) for s in self.sources.values()),
            "recover_median_s": recovered[len(recovered) // 2] if recovered else None,
            "recover_max_s": recovered[-1] if recovered else None,
        }

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (with :meth:`counts` and :meth:`failures`)."""
        data = asdict(self)
        data["counts"] = self.counts()
        data["failures"] = self.failures()
        return data


def chaos_streams(workdir: Path, copies: int, bitcoin: bool) -> dict[str, tuple[Path, str]]:
    """The run's input files: CollegeMsg ``copies`` times (copy ``k`` shifted after copy
    ``k-1`` in time) as SNAP, and Bitcoin OTC as shipped; name -> (path, format)."""
    from chronoray.datasets import bitcoinotc_path, collegemsg_path

    lines = [line.split() for line in collegemsg_path().read_text().splitlines() if line]
    times = [int(f[2]) for f in lines]
    span = max(times) - min(times) + 1
    path = workdir / f"collegemsg-x{copies}.txt"
    with path.open("w") as out:
        for k in range(copies):
            out.writelines(f"{s} {d} {int(t) + k * span}\n" for s, d, t in lines)
    streams = {path.name: (path, "snap")}
    if bitcoin:
        streams[bitcoinotc_path().name] = (bitcoinotc_path(), "bitcoin-csv")
    return streams


def _check(who: str, at: float, got: Mapping[tuple[Any, Any], int], want: Mapping) -> CutCheck:
    check = CutCheck(at, who)
    for pair in set(got) | set(want):
        diff = got.get(pair, 0) - want.get(pair, 0)
        if diff:
            check.wrong_pairs += 1
            if diff > 0:
                check.extra_updates += diff
            else:
                check.missing_updates -= diff
            if not check.example:
                check.example = f"pair {pair}: {got.get(pair, 0)} instead of {want.get(pair, 0)}"
    return check


def _snapshot_counts(graph: Any, at: float) -> dict[tuple[Any, Any], int]:
    table = graph.snapshot(at=at, timeout=600).edges().select(["src", "dst", "count"])
    cols = table.to_pydict()
    return dict(zip(zip(cols["src"], cols["dst"], strict=True), cols["count"], strict=True))


class _Chaos:
    """The state of one run (see :func:`run_chaos`)."""

    def __init__(self, plan: ChaosPlan, workdir: Path) -> None:
        from chronoray.testing import EdgeOracle, edge_oracle

        self.plan = plan
        self.rng = random.Random(plan.seed)
        self.workdir = workdir
        self.streams = chaos_streams(workdir, plan.copies, plan.bitcoin)
        self.oracle: EdgeOracle = {}
        for path, fmt in self.streams.values():
            for pair, events in edge_oracle(path, fmt).items():  # type: ignore[arg-type]
                self.oracle.setdefault(pair, []).extend(events)
        times = sorted(ts for events in self.oracle.values() for ts, _ in events)
        described = {k: v for k, v in vars(plan).items() if k != "cluster"}  # no deep copy
        self.report = ChaosReport(described | {"cluster": plan.cluster is not None})
        self.report.updates = len(times)
        picks = sorted(self.rng.sample(range(len(times)), plan.past_times))
        self.past = [times[i] for i in picks]
        self.stop = threading.Event()
        self.started = time.monotonic()

    def want(self, at: float = math.inf) -> dict[tuple[Any, Any], int]:
        from chronoray.testing import pair_counts_between

        return pair_counts_between(self.oracle, at)

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 3)


def run_chaos(plan: ChaosPlan, workdir: str | os.PathLike[str]) -> ChaosReport:
    """Feed the plan's streams by two sources into a named graph with a live degree
    histogram, a gRPC gateway with a client and a snapshot reader, kill what the plan
    says at seeded random moments, then compare the graph now and at the plan's past
    times with the file oracle. Ray must be initialised (on ``plan.cluster`` for node
    kills). The returned report's :meth:`~ChaosReport.failures` list what broke."""
    import chronoray as cr
    from chronoray.gateway import Gateway, GatewaySettings

    root = Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    chaos = _Chaos(plan, root)
    storage = "shared" if plan.cluster is not None else "local"
    name = f"chaos-{plan.seed}-{os.getpid()}-{int(time.time())}"
    graph = cr.GraphCluster.create(
        name,
        num_shards=plan.shards,
        log_dir=str(root / "g"),
        batch_size=plan.batch_size,
        storage=storage,
    )
    settings = GatewaySettings(port=0, token="chaos", output_dir=str(root / "gateway-out"))
    gateway = Gateway(graph, settings).start()
    settings = GatewaySettings(port=gateway.port, token="chaos", output_dir=settings.output_dir)
    box = {"gateway": gateway}
    threads: list[threading.Thread] = []
    try:
        histogram = graph.start_computation(cr.DegreeHistogram())
        sources = [
            cr.SnapEdgeSource(path) if fmt == "snap" else cr.BitcoinCsvSource(path)
            for path, fmt in chaos.streams.values()
        ]
        jobs = graph.ingest_many(sources, wait=False)
        threads = [
            threading.Thread(target=_snapshot_reader, args=(chaos, graph), daemon=True),
            threading.Thread(target=_gateway_client, args=(chaos, box), daemon=True),
        ]
        for thread in threads:
            thread.start()
        _kill_loop(chaos, graph, jobs, box, lambda: Gateway(graph, settings).start())
        for job in jobs:
            try:
                chaos.report.sources[job.name] = job.wait(timeout=1800).as_dict()
            except Exception as exc:  # noqa: BLE001 -- reported, the run goes on to its checks
                chaos.report.errors.append(f"source {job.name}: {type(exc).__name__}: {exc}")
        graph.wait_idle()
        chaos.stop.set()
        for thread in threads:
            thread.join(timeout=900)
        _final_checks(chaos, graph, histogram)
    finally:
        chaos.stop.set()
        box["gateway"].stop(0)
        graph.shutdown()
    chaos.report.seconds = chaos.elapsed()
    return chaos.report


def _kill_loop(
    chaos: _Chaos, graph: Any, jobs: list[Any], box: dict[str, Any], new_gateway: Any
) -> None:
    """Make the plan's :meth:`~ChaosPlan.schedule` of kills until it is done or the
    sources have ended; each kill waits until its target answers again."""
    plan = chaos.plan
    for gap, target, pick in plan.schedule():
        time.sleep(gap)
        running = [job for job in jobs if not job.done()]
        if not running:
            return
        progress = {job.name: float(job.progress().get("max_ts") or 0.0) for job in running}
        kill = Kill(chaos.elapsed(), target, "", progress)
        began = time.monotonic()
        if target == "shard":
            kill.detail = _kill_shard(graph, int(pick * plan.shards))
            _wait_answering(graph)
        elif target == "source":
            kill.detail = _kill_source(running[int(pick * len(running))])
        elif target == "gateway":
            box["gateway"].stop(0)
            box["gateway"] = new_gateway()
            kill.detail = f"gateway on port {box['gateway'].port} restarted"
        elif target == "controller":
            kill.detail = _kill_controller(graph)
        else:
            kill.detail = _kill_node(plan.cluster, pick)
            _wait_answering(graph)
        kill.recovered_after = round(time.monotonic() - began, 3)
        chaos.report.kills.append(kill)


def _kill_shard(graph: Any, shard: int) -> str:
    from chronoray.testing import kill_shard

    try:
        return f"shard {shard} pid {kill_shard(graph, shard)}"
    except Exception as exc:  # noqa: BLE001 -- restarting already: counted, not killed
        return f"shard {shard} not killed ({type(exc).__name__})"


def _kill_source(job: Any) -> str:
    """SIGKILL the source actor's process; return once its restarted process answers
    (or the source ended meanwhile)."""
    from chronoray.testing import kill_source

    try:
        pid = kill_source(job)
    except Exception as exc:  # noqa: BLE001 -- it ended or restarts meanwhile
        return f"source {job.name} not killed ({type(exc).__name__})"
    _wait_new_pid(lambda: None if job.done() else int(_ray_get(job.actor.pid.remote())), pid)
    return f"source {job.name} pid {pid}"


def _kill_controller(graph: Any) -> str:
    """SIGKILL the graph's controller; return once its restarted process answers."""
    from chronoray.controller import CONTROLLER_NAME, graph_namespace
    from chronoray.handles import ControllerHandle
    from chronoray.testing import kill_controller

    pid = kill_controller(graph)
    handle = ControllerHandle.named(CONTROLLER_NAME, graph_namespace(graph.name))
    _wait_new_pid(handle.pid, pid)
    return f"controller pid {pid}"


def _ray_get(ref: Any) -> Any:
    import ray

    return ray.get(ref, timeout=60)


def _wait_new_pid(ask: Any, killed: int, timeout: float = 300.0) -> None:
    """Until ``ask()`` answers a pid other than ``killed`` (or ``None``: nothing to wait
    for); an actor error means it is restarting still."""
    from shards.worker import ACTOR_ERRORS

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid = ask()
            if pid is None or pid != killed:
                return
        except (*ACTOR_ERRORS, TimeoutError):
            pass
        time.sleep(0.1)
    raise TimeoutError(f"the killed process {killed} was not replaced within {timeout:g} s")


def _kill_node(cluster: Any, pick: float) -> str:
    """Remove a worker node (``pick`` in ``[0, 1)`` chooses) and add one back with the
    same label."""
    from chronoray.placement import NODE_LABEL

    workers = [n for n in cluster.list_all_nodes() if n is not cluster.head_node]
    node = workers[int(pick * len(workers))]
    label = f"n{cluster.list_all_nodes().index(node)}"
    cluster.remove_node(node, allow_graceful=False)
    cluster.add_node(num_cpus=1, object_store_memory=96 * 1024 * 1024, labels={NODE_LABEL: label})
    cluster.wait_for_nodes()
    return f"node {label} removed and added back"


def _wait_answering(graph: Any, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while graph.status(timeout=5.0).missing and time.monotonic() < deadline:
        time.sleep(0.2)


def _snapshot_reader(chaos: _Chaos, graph: Any) -> None:
    """Take snapshots at the plan's past times, in a loop, while the run goes on; each
    one is checked against the oracle at once (what the reader was told)."""
    i = 0
    while not chaos.stop.is_set():
        at = chaos.past[i % len(chaos.past)]
        i += 1
        try:
            check = _check("reader", at, _snapshot_counts(graph, at), chaos.want(at))
        except Exception as exc:  # noqa: BLE001 -- what the reader was told
            check = CutCheck(at, "reader", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            if "SnapshotNotReady" in check.error or "not complete" in check.error:
                continue  # refused clearly: the sources have not read past T yet
        chaos.report.readers.append(check)


def _gateway_client(chaos: _Chaos, box: dict[str, Any]) -> None:
    """Ask the gateway for the graph's stats in a loop; count what it answered; the
    edge total it reports must never go down nor pass the oracle's."""
    from chronoray.client import GatewayClient

    told = chaos.report.gateway_told
    final = len(chaos.want())
    last = 0
    while not chaos.stop.is_set():
        try:
            with GatewayClient(box["gateway"].address, token="chaos") as client:
                edges = int(client.stats()["edges"])
        except Exception as exc:  # noqa: BLE001 -- what the client was told
            told[type(exc).__name__] = told.get(type(exc).__name__, 0) + 1
            time.sleep(0.2)
            continue
        told["stats"] = told.get("stats", 0) + 1
        if edges < last or edges > final:
            chaos.report.gateway_problems.append(
                f"gateway told {edges} edges after {last} (the oracle ends at {final})"
            )
        last = max(last, edges)
        time.sleep(0.1)


def _final_checks(chaos: _Chaos, graph: Any, histogram: Any) -> None:
    report = chaos.report
    got = {(s, d): p["count"] for s, d, p in graph.edges()}
    report.final = _check("graph now", math.inf, got, chaos.want())
    for at in chaos.past:
        try:
            report.cuts.append(_check("snapshot", at, _snapshot_counts(graph, at), chaos.want(at)))
        except Exception as exc:  # noqa: BLE001 -- reported as the cut's error
            report.cuts.append(CutCheck(at, "snapshot", error=f"{type(exc).__name__}: {exc}"))
    out: dict[Any, int] = {}
    for src, _ in chaos.want():
        out[src] = out.get(src, 0) + 1
    vertices = {v for pair in chaos.want() for v in pair}
    want: dict[int, int] = {}
    for v in vertices:
        want[out.get(v, 0)] = want.get(out.get(v, 0), 0) + 1
    try:
        report.live_histogram = _live_check(graph, histogram, want)
    except Exception as exc:  # noqa: BLE001 -- what the live computation's user is told
        lines = [line for line in str(exc).splitlines() if "Error" in line]
        report.live_histogram = f"refused: {(lines or [type(exc).__name__])[-1].strip()}"


def _live_check(graph: Any, histogram: Any, want: dict[int, int]) -> str:
    """``exact`` or ``WRONG``; a histogram lost with a shard is restarted first, and what
    its user was told is kept."""
    import chronoray as cr

    told = ""
    try:
        result = histogram.result()
    except cr.LiveComputationLost as exc:
        told = f" (restarted; told: {exc})"
        histogram.restart()
        graph.wait_idle()
        result = histogram.result()
    return ("exact" if dict(result["out"]) == want else "WRONG") + told
