"""Helpers for testing graphs and vertex classes (yours and chronoray's own).

* :class:`LocalRuntime` runs a graph in this process, without Ray, in milliseconds, with
  live computations, notification streams and indexes (``ephemeral.LiveLocalRuntime``).
* :func:`edge_oracle` reads an edge file independently of chronoray's sources, as the
  truth to compare a graph with.
* :class:`GatedSource` pauses a source at given offsets until the test opens each gate
  (files, so it works in a source actor's process too): kills tied to ingest progress.
* :func:`kill_shard` kills a shard actor's process (``SIGKILL``, no clean stop), the way a
  crash would.
* :func:`kill_source` does the same to a source actor (it resumes from what was logged),
  :func:`kill_controller` to the graph's controller (it recovers its view of the sources).
* :class:`RayHead` runs a real ``ray start --head`` on loopback (own ports, own temp dir,
  job server on) and submits ``ray job submit`` jobs to it; it is stopped by the pid it
  started, never by ``ray stop`` (other Ray instances on the machine are left alone).
* :func:`simulated_cluster` starts a multi-node cluster on this machine
  (``ray.cluster_utils.Cluster``), each node labelled ``chronoray-node=n<i>``.
* :func:`run_chaos` (a :class:`ChaosPlan`) kills shards, sources, the gateway, the
  controller and nodes at seeded random moments while two sources feed a graph, and
  checks the graph now and at past times against the file oracle; :func:`small_disk`,
  :func:`fill_disk` and :func:`read_only` make real disk trouble (:mod:`chronoray.chaos`).
* :class:`TokenVertex` and :func:`causality_violations` check that a past snapshot is a
  consistent cut: no vertex in it holds the effect of a message whose sending is not in it.
* :class:`LedgerVertex` is a batch behavior (``on_updates``) to test the batch path with:
  a running balance, a message count, the last amount and the time of the last message.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import ray

from chronoray.chaos import ChaosPlan, ChaosReport, fill_disk, read_only, run_chaos, small_disk
from ephemeral.local import LiveLocalRuntime as LocalRuntime
from shards.protocol import ShardStats
from vertex import Context, TemporalVertex, UpdateKind, VertexId
from vertex.batch import BatchVertex, MessageBatch

__all__ = [
    "EdgeOracle",
    "GatedSource",
    "IndexedVertex",
    "LedgerRowsVertex",
    "LedgerVertex",
    "LocalRuntime",
    "RecordingShard",
    "TokenVertex",
    "causality_violations",
    "edge_oracle",
    "RayHead",
    "free_port",
    "kill_controller",
    "kill_shard",
    "kill_source",
    "simulated_cluster",
    "stop_started",
    "oracle_graph",
    "pair_counts",
    "pair_counts_between",
    "ChaosPlan",
    "ChaosReport",
    "run_chaos",
    "small_disk",
    "fill_disk",
    "read_only",
]

EdgeOracle = dict[tuple[int, int], list[tuple[float, float]]]


def edge_oracle(path: str | Path, fmt: Literal["snap", "bitcoin-csv"]) -> EdgeOracle:
    """``(src, dst) -> [(ts, weight), ...]`` in file order, parsed with nothing but ``split``.

    SNAP lines have no weight (0.0 is used).
    """
    sep = "," if fmt == "bitcoin-csv" else None
    pairs: EdgeOracle = {}
    with Path(path).open() as f:
        for line in f:
            fields = line.split(sep)
            if fmt == "bitcoin-csv":
                ts, weight = float(fields[3]), float(fields[2])
            else:
                ts, weight = float(fields[2]), 0.0
            pairs.setdefault((int(fields[0]), int(fields[1])), []).append((ts, weight))
    return pairs


def pair_counts(oracle: EdgeOracle) -> Counter[tuple[int, int]]:
    """Occurrences per ``(src, dst)`` pair."""
    return Counter({pair: len(events) for pair, events in oracle.items()})


def pair_counts_between(
    oracle: EdgeOracle, t1: float, t0: float = float("-inf")
) -> dict[tuple[int, int], int]:
    """Occurrences per pair with time in ``[t0, t1]`` (pairs with none left out): what a
    time cut at ``t1`` (or a window ``(t0, t1)``) must hold.

    >>> pair_counts_between({(1, 2): [(5.0, 0.0), (9.0, 0.0)], (2, 3): [(8.0, 0.0)]}, 8.0)
    {(1, 2): 1, (2, 3): 1}
    """
    counts = {}
    for pair, events in oracle.items():
        n = sum(1 for ts, _ in events if t0 <= ts <= t1)
        if n:
            counts[pair] = n
    return counts


def oracle_graph(oracle: EdgeOracle, at: float = float("inf")) -> Any:
    """The ``networkx.DiGraph`` of the pairs with an occurrence at time ``<= at``, each
    edge with its ``count``: what analyses of a time cut at ``at`` are compared with.

    >>> g = oracle_graph({(1, 2): [(5.0, 0.0), (9.0, 0.0)], (2, 3): [(8.0, 0.0)]}, 8.0)
    >>> sorted(g.edges(data="count")), sorted(g)
    ([(1, 2, 1), (2, 3, 1)], [1, 2, 3])
    """
    import networkx as nx

    graph = nx.DiGraph()
    for (src, dst), n in pair_counts_between(oracle, at).items():
        graph.add_edge(src, dst, count=n)
    return graph


class GatedSource:
    """``source`` read as usual up to the ``i``-th of ``gates`` (offsets), where reading
    pauses -- having marked the gate reached -- until :meth:`open_gate` opens gate ``i``.

    The gates are files in ``directory``, so a source actor in another process (also a
    restarted one, which passes the gates already open) and the test agree on them. While
    paused, the source says it has nothing to read now (the feed sends what it holds).
    """

    def __init__(self, source: Any, gates: Iterable[int], directory: str | Path) -> None:
        self.source = source
        self.name: str = source.name
        self.gates = sorted(gates)
        self.directory = str(directory)

    def __repr__(self) -> str:
        return f"GatedSource({self.source!r}, gates={self.gates})"

    def records(self) -> Iterator[Any]:
        """The source's records, pausing before the first offset past each gate."""
        pending = list(enumerate(self.gates))
        for record in self.source.records():
            offset = getattr(record, "offset", None)
            while pending and offset is not None and offset > pending[0][1]:
                i, _ = pending.pop(0)
                _touch(self._file(f"reached-{self.name}-{i}"))
                while not os.path.exists(self._file(f"open-{i}")):
                    yield None
                    time.sleep(0.01)
            yield record

    def read(self) -> Iterator[Any]:
        """The updates (the ``Source`` protocol); a malformed record is raised."""
        for record in self.records():
            if isinstance(record, Exception):
                raise record
            if record is not None:
                yield record

    def reached(self, gate: int) -> bool:
        """Whether reading paused at gate ``gate`` (or passed it)."""
        return os.path.exists(self._file(f"reached-{self.name}-{gate}"))

    def open_gate(self, gate: int) -> None:
        """Let reading go past gate ``gate`` (for every source gated in this directory)."""
        _touch(self._file(f"open-{gate}"))

    def _file(self, name: str) -> str:
        return os.path.join(self.directory, name)


class RecordingShard:
    """A stand-in for a shard worker (``ray.remote`` it, async) for tests of what the
    graph's controller tells the shards: it takes a frontier or gate as a shard does --
    one numbered below the last it took is ignored -- and keeps what it holds.
    :meth:`hold_frontiers` makes its ``set_frontier`` calls wait until :meth:`release`,
    as a shard busy with a long batch answers late."""

    def __init__(self, shard: int) -> None:
        self.shard = shard
        self.frontier = -math.inf
        self.gate: dict[str, Any] | None = None
        self.frontier_calls = 0
        self._taken = {"frontier": -1, "gate": -1}
        self._held = False
        self._released: asyncio.Event | None = None

    async def stats(self, pending_time: bool = False) -> ShardStats:
        """Counters of an empty shard (the controller reads its source times)."""
        return ShardStats(self.shard, 0, 0, 0, [0], 0, 0, [0], {}, 0, {}, 0, self.gate, 0)

    async def set_frontier(self, time: float, reset: bool = False, seq: int = 0) -> None:
        """Take the frontier (after :meth:`release`, while held)."""
        self.frontier_calls += 1
        if self._held:
            if self._released is None:
                self._released = asyncio.Event()
            await self._released.wait()
        if self._newer("frontier", seq):
            self.frontier = time if reset else max(self.frontier, time)

    async def set_gate(self, gate: dict[str, Any] | None, seq: int = 0) -> None:
        """Take the gate."""
        if self._newer("gate", seq):
            self.gate = gate

    async def hold_frontiers(self) -> None:
        """Make ``set_frontier`` calls wait until :meth:`release`."""
        self._held = True

    async def release(self) -> None:
        """Let the waiting ``set_frontier`` calls go on."""
        self._held = False
        if self._released is not None:
            self._released.set()

    async def told(self) -> tuple[float, dict[str, Any] | None, int]:
        """The frontier and gate it holds, and how many frontiers it was sent."""
        return self.frontier, self.gate, self.frontier_calls

    def _newer(self, what: str, seq: int) -> bool:
        if seq < self._taken[what]:
            return False
        self._taken[what] = seq
        return True


def _touch(path: str) -> None:
    Path(path).touch()


def kill_shard(graph: Any, shard: int) -> int:
    """SIGKILL the process of ``graph``'s shard actor ``shard``; returns the killed pid.

    Ray restarts the actor (``max_restarts``); the new process recovers from its log. A
    graph running in this process (``runtime="local"``) loses the shard's memory the same
    way and rebuilds it from its log (the pid returned is this process's).
    """
    if getattr(graph, "runtime", "ray") == "local":
        graph._runtime.crash(shard)
        return os.getpid()
    pid: int = ray.get(graph.shards[shard].pid.remote())
    os.kill(pid, signal.SIGKILL)
    return pid


def kill_source(job: Any) -> int:
    """SIGKILL the process of the source actor of ``job`` (an ``IngestJob``); returns the
    pid. Ray restarts the actor, which resumes from what the shards logged."""
    pid: int = ray.get(job.actor.pid.remote())
    os.kill(pid, signal.SIGKILL)
    return pid


def kill_controller(graph: Any) -> int:
    """SIGKILL the process of ``graph``'s controller; returns the killed pid.

    Ray restarts it; the new instance finds the shards, takes the open sources back from
    ``LOG_DIR/controller.pickle`` and has every source report its progress again. A graph
    running in this process (``runtime="local"``) loses its source coordinator's memory the
    same way (the pid returned is this process's).
    """
    if getattr(graph, "runtime", "ray") == "local":
        graph._runtime.crash_coordinator()
        return os.getpid()
    pid: int = graph._runtime.crash_controller()
    return pid


def simulated_cluster(
    nodes: int = 3,
    *,
    num_cpus: int = 1,
    head_cpus: int | None = None,
    object_store_memory: int = 96 * 1024 * 1024,
    **head: Any,
) -> Any:
    """A ``ray.cluster_utils.Cluster`` of ``nodes`` nodes on this machine, node ``i``
    labelled ``chronoray-node=n<i>`` (the head is ``n0``), each with ``num_cpus`` CPUs
    (the head ``head_cpus``, if given); ``head`` adds head options (e.g.
    ``include_dashboard=True`` for Ray's state API). Shut it down when done."""
    from ray.cluster_utils import Cluster

    from chronoray.placement import NODE_LABEL

    def args(i: int) -> dict[str, Any]:
        return {
            "num_cpus": num_cpus,
            "object_store_memory": object_store_memory,
            "labels": {NODE_LABEL: f"n{i}"},
        }

    head_args = {"include_dashboard": False, **args(0), **head}
    if head_cpus is not None:
        head_args["num_cpus"] = head_cpus
    cluster = Cluster(initialize_head=True, head_node_args=head_args)
    for i in range(1, nodes):
        cluster.add_node(**args(i))
    cluster.wait_for_nodes()
    return cluster


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_started(process: subprocess.Popen[Any], timeout: float = 90.0) -> None:
    """Stop a ``ray start --block`` (or any) process this test started, by its pid: SIGTERM,
    then wait until its process group (started with ``start_new_session=True``: only what
    it started) is gone, SIGKILL to that group if it is not within ``timeout``."""
    if process.poll() is None:
        process.terminate()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # its raylet, GCS... end after it
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        process.poll()
        time.sleep(0.5)
    else:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


class RayHead:
    """A real Ray head node on loopback: ``ray start --head --block`` with its own ports and
    temp dir, the dashboard's job server on (``ray job submit``), token authentication
    left on. ``PATH`` starts with this interpreter's ``bin`` so jobs find ``chronoray``.

    Use as a context manager; :meth:`stop` sends SIGTERM to the process it started (and,
    if that does not end it in time, SIGKILL to its process group, which holds only the
    processes it started).
    """

    def __init__(self, num_cpus: int = 2, object_store_memory: int = 128 * 1024 * 1024) -> None:
        self.port = free_port()
        self.dashboard_port = free_port()
        self.temp_dir = tempfile.mkdtemp(prefix="crh-", dir="/tmp")  # short: socket paths
        self.address = f"127.0.0.1:{self.port}"
        self.dashboard = f"http://127.0.0.1:{self.dashboard_port}"
        self.env = dict(os.environ)
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["RAY_AUTH_MODE"] = "token"  # Ray's own CLI sends the token only if told
        self.env.pop("RAY_ADDRESS", None)
        ports = {
            "--port": self.port,
            "--dashboard-port": self.dashboard_port,
            "--ray-client-server-port": free_port(),
            "--node-manager-port": free_port(),
            "--object-manager-port": free_port(),
            "--dashboard-agent-listen-port": free_port(),
            "--dashboard-agent-grpc-port": free_port(),
            "--runtime-env-agent-port": free_port(),
            "--metrics-export-port": free_port(),
        }
        self.command = [
            str(Path(sys.executable).parent / "ray"),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1",
            "--include-dashboard=true",
            "--disable-usage-stats",
            f"--temp-dir={self.temp_dir}",
            f"--num-cpus={num_cpus}",
            f"--object-store-memory={object_store_memory}",
            *(f"{flag}={port}" for flag, port in ports.items()),
        ]
        self.log = Path(self.temp_dir) / "ray-start.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> RayHead:
        """Start the head and wait until its job server answers."""
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while self.run("ray", "job", "list", "--address", self.dashboard).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ray start --head did not come up: {self.log.read_text()}")
            time.sleep(1.0)
        return self

    def run(self, *command: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        """Run ``command`` with the head's environment (``PATH``, token mode)."""
        return subprocess.run(
            list(command), env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def submit(self, *entrypoint: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        """``ray job submit`` ``entrypoint`` and wait for it (its output is the job's)."""
        return self.run(
            "ray",
            "job",
            "submit",
            "--address",
            self.dashboard,
            "--",
            *entrypoint,
            timeout=timeout,
        )

    def stop(self, timeout: float = 90.0) -> None:
        """Stop the head by the pid this object started."""
        if self.process is not None:
            stop_started(self.process, timeout)

    def __enter__(self) -> RayHead:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TokenVertex(TemporalVertex):
    """A temporal vertex that, on every edge occurrence it owns, sends a token to the
    edge's target; a vertex remembers in ``state["tokens"]`` (sender -> sender clock) the
    latest token it got from each sender. Tokens cross shards like any message."""

    type_name: ClassVar[str] = "TokenVertex"

    def on_edge_event(
        self, ctx: Context, kind: UpdateKind, dst: VertexId, ts: float, props: Mapping[str, Any]
    ) -> None:
        super().on_edge_event(ctx, kind, dst, ts, props)
        ctx.send(dst, {"token": ctx.clock})

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        if "token" in msg:
            tokens = dict(ctx.state.get("tokens", {}))
            tokens[str(ctx.sender)] = max(msg["token"], tokens.get(str(ctx.sender), 0))
            ctx.state["tokens"] = tokens


class LedgerVertex(BatchVertex, TemporalVertex):
    """A temporal vertex whose ``amount`` messages run as batches: ``balance`` (their
    running sum), ``messages`` (their count), ``last`` (the last amount) and ``seen_at``
    (the time of the last one). An amount that is not a number fails its message."""

    type_name: ClassVar[str] = "LedgerVertex"

    def on_updates(self, batch: MessageBatch) -> Mapping[str, Any]:
        amount = batch.column("amount", 0)
        if amount.dtype.kind not in "iuf":
            raise TypeError(f"amounts must be numbers, got {amount.dtype}")
        ones = np.ones(len(batch), dtype=np.int64)
        return {
            "balance": batch.running_sum(amount, batch.state_column("balance", 0)),
            "messages": batch.running_sum(ones, batch.state_column("messages", 0)),
            "last": amount,
            "seen_at": batch.time,
        }


class LedgerRowsVertex(TemporalVertex):
    """:class:`LedgerVertex`'s rule one message at a time (``on_message``): the
    per-message class the batch one must agree with."""

    type_name: ClassVar[str] = "LedgerRowsVertex"

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        amount = msg.get("amount", 0)
        if not isinstance(amount, int | float):
            raise TypeError("amounts must be numbers")
        ctx.state["balance"] = ctx.state.get("balance", 0) + amount
        ctx.state["messages"] = ctx.state.get("messages", 0) + 1
        ctx.state["last"] = amount
        ctx.state["seen_at"] = float(ctx.time)


class IndexedVertex(TemporalVertex):
    """A temporal vertex with secondary indexes: ``out_degree``, ``in_degree``, ``parity``
    of the messages it sent (a string key) and ``hub`` (in-degree, for vertices with at
    least 50 in-edges only)."""

    type_name: ClassVar[str] = "IndexedVertex"
    indexes: ClassVar[dict[str, Any]] = {
        "out_degree": lambda s: s["out_degree"],
        "in_degree": lambda s: s["in_degree"],
        "parity": lambda s: "even" if s["sent"] % 2 == 0 else "odd",
        "hub": lambda s: s["in_degree"] if s["in_degree"] >= 50 else None,
    }


def causality_violations(vertices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Check a cut of a :class:`TokenVertex` graph: every token a vertex holds must have
    been sent by an execution inside the cut (sender present with clock >= the token's).

    ``vertices`` are rows with ``id``, ``clock`` and ``tokens`` (a dict, or its JSON text
    as in snapshot tables). Returns a description of each violation (empty: consistent).
    """
    import json

    rows = list(vertices)
    clocks = {str(row["id"]): row["clock"] for row in rows}
    problems = []
    for row in rows:
        tokens = row.get("tokens") or {}
        if isinstance(tokens, str):
            tokens = json.loads(tokens)
        for sender, sent_at in tokens.items():
            if clocks.get(sender, 0) < sent_at:
                problems.append(
                    f"vertex {row['id']} holds a token sent by {sender} at clock {sent_at}, "
                    f"but the cut has {sender} at clock {clocks.get(sender)}"
                )
    return problems
