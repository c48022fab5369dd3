"""Where a model's partitions run: in this process, or one Ray actor per partition.

A model is written as a pure *partition worker* class (no Ray import) whose methods the
driver calls on every partition at once, between barriers. The kinds of call:

* :meth:`PartitionGroup.call` -- every worker runs a method; the (small) results come
  back to the driver, e.g. counts, aggregates, final tables;
* :meth:`PartitionGroup.exchange` -- every worker runs a method on its inbox and returns
  a small summary plus one outgoing batch per destination partition. The batches become
  the next inbox of their destination. On Ray, a worker's batches are separate return
  objects of its actor call and are handed to the destination actors as object refs, so
  they go through the object store, one object per (sender, receiver) pair, and never
  through the driver;
* :meth:`PartitionGroup.iterate` -- up to ``count`` exchanges in a row without the driver:
  every step's batches and summaries go from worker to worker, every worker gets every
  summary of a step and a stop rule (the same on all) ends them together. On Ray the
  partition actors hold one direct connection per (sender, receiver) pair (a
  :class:`_Mesh`, set up once per pooled actor), so a step costs one message per pair and
  no actor call; the driver makes one call per partition per ``iterate``. Iterative models
  with a fixed step (Pregel) use it.

:class:`LocalGroup` does the same in this process (for tests, doctests and small graphs);
:class:`RayGroup` runs one actor per partition (``num_cpus=0`` by default, so ``P`` may
exceed the CPU count; Ray still runs the actors in parallel processes). Partition actors
are pooled: a finished job hands its actors (emptied) to the next one, since starting an
actor process costs about a second; :func:`release_actors` kills the idle ones.
"""

from __future__ import annotations

import functools
import os
import pickle
import secrets
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from typing import Any, Literal, Protocol

import pyarrow as pa

from snapshot.models.partition import GraphPartition, partition_graph, split_tables

__all__ = [
    "Executor",
    "GraphInput",
    "LocalGroup",
    "PartitionGroup",
    "RayGroup",
    "release_actors",
    "start_group",
]

Executor = Literal["auto", "local", "ray"]
GraphInput = Any  # a snapshot.Snapshot, or a (vertices, edges) pair of Arrow tables
WorkerFactory = Callable[..., Any]  # (GraphPartition, *args) -> partition worker
MeshAddress = tuple[str, int, str]  # a partition actor's (host, port, its mesh's own id)
StopRule = Callable[[list[Any]], bool]  # every partition's summary of a step -> stop after it


class PartitionGroup(Protocol):
    """``num_parts`` partition workers driven in lockstep."""

    num_parts: int
    loaded: list[Any]
    """Every worker's ``worker.then()`` right after it was built (``then`` of
    :func:`start_group`; empty without one): read in the call that builds the workers."""

    def call(self, method: str, *args: Any) -> list[Any]:
        """Run ``worker.method(*args)`` on every partition; their results, in order."""
        ...

    def exchange(self, method: str, inbox: list[Any], *args: Any) -> tuple[list[Any], list[Any]]:
        """Run ``worker.method(batches, *args) -> (summary, [batch for each partition])``
        on every partition, where ``batches`` are the batches sent to it (``inbox[p]``).
        Returns the summaries and the next inbox (opaque: pass it to the next exchange)."""
        ...

    def iterate(
        self,
        method: str,
        start: int,
        count: int,
        previous: list[Any],
        stop: StopRule,
        *,
        fresh: bool,
    ) -> list[list[Any]]:
        """Up to ``count`` exchanges in a row: step ``k`` runs ``worker.method(batches,
        start + k, summaries) -> (summary, [batch for each partition])`` on every
        partition, where ``batches`` are the batches sent to it in the step before (none
        in the first step if ``fresh``, else those of the last step of the previous
        ``iterate``) and ``summaries`` every partition's summary of the step before
        (``previous`` for the first). Stops after the first step whose summaries
        ``stop`` accepts. Returns every step's summaries, in order."""
        ...

    def empty_inbox(self) -> list[Any]:
        """An inbox with no batches for anyone."""
        ...

    def reload(self, method: str, graph: GraphInput, *args: Any, direction: str = "out") -> None:
        """Hand every worker its partition of another graph: ``worker.method(partition,
        *args)`` (used by pause/shift/resume)."""
        ...

    def close(self) -> None:
        """Release the workers."""
        ...


def _tables(graph: GraphInput) -> tuple[pa.Table, pa.Table] | None:
    if isinstance(graph, tuple) and len(graph) == 2:
        return graph[0], graph[1]
    return None


class LocalGroup:
    """Partition workers as plain objects in this process."""

    def __init__(
        self,
        graph: GraphInput,
        num_parts: int,
        factory: WorkerFactory,
        args: tuple[Any, ...],
        direction: str = "out",
        then: str | None = None,
    ) -> None:
        self.num_parts = num_parts
        self._inbox = self.empty_inbox()
        self.workers = [
            factory(part, *args) for part in _local_partitions(graph, num_parts, direction)
        ]
        self.loaded = [] if then is None else self.call(then)

    def call(self, method: str, *args: Any) -> list[Any]:
        return [getattr(w, method)(*args) for w in self.workers]

    def exchange(self, method: str, inbox: list[Any], *args: Any) -> tuple[list[Any], list[Any]]:
        summaries, outboxes = [], []
        for worker, batches in zip(self.workers, inbox, strict=True):
            summary, out = getattr(worker, method)(batches, *args)
            summaries.append(summary)
            outboxes.append(out)
        nxt = [[outboxes[p][q] for p in range(self.num_parts)] for q in range(self.num_parts)]
        return summaries, nxt

    def iterate(
        self,
        method: str,
        start: int,
        count: int,
        previous: list[Any],
        stop: StopRule,
        *,
        fresh: bool,
    ) -> list[list[Any]]:
        if fresh:
            self._inbox = self.empty_inbox()
        steps: list[list[Any]] = []
        for k in range(count):
            previous, self._inbox = self.exchange(method, self._inbox, start + k, previous)
            steps.append(previous)
            if stop(previous):
                break
        return steps

    def empty_inbox(self) -> list[Any]:
        return [[] for _ in range(self.num_parts)]

    def reload(self, method: str, graph: GraphInput, *args: Any, direction: str = "out") -> None:
        parts = _local_partitions(graph, self.num_parts, direction)
        for worker, part in zip(self.workers, parts, strict=True):
            getattr(worker, method)(part, *args)

    def close(self) -> None:
        self.workers = []


def _local_partitions(graph: GraphInput, num_parts: int, direction: str) -> list[GraphPartition]:
    tables = _tables(graph)
    if tables is None:  # a Snapshot: fetch its tables into this process
        tables = (graph.vertices(), graph.edges())
    pieces = split_tables(*tables, num_parts, direction=direction)
    return [partition_graph([pieces[p]], p, num_parts) for p in range(num_parts)]


_HEAD = struct.Struct("!QqHIH")  # body bytes, step (signed), token bytes, pickle bytes, buffers
_SIZE = struct.Struct("!Q")  # one raw buffer's bytes


def _frame(token: bytes, step: int, payload: Any) -> list[memoryview]:
    """One message on the wire: a head, the job's token, ``payload`` pickled with its
    numpy arrays left out (protocol 5, out of band), their sizes, then the arrays' own
    bytes, sent as they are (no copy into the pickle)."""
    buffers: list[pickle.PickleBuffer] = []
    meta = pickle.dumps(payload, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = b"".join(_SIZE.pack(r.nbytes) for r in raws)
    body = len(token) + len(meta) + len(sizes) + sum(r.nbytes for r in raws)
    head = _HEAD.pack(body, step, len(token), len(meta), len(raws)) + token + meta + sizes
    return [memoryview(head), *raws]


class _Inbound:
    """What one peer sent and this side has not taken yet: a receive buffer (grown as
    needed, kept between steps) filled by ``recv_into``, and where its data starts."""

    def __init__(self) -> None:
        self.buffer = bytearray(1 << 16)
        self.start = self.end = 0

    def room(self) -> memoryview:
        """Free space after the data (moving the data to the front, growing the buffer
        to hold the frame being received)."""
        need = self._frame_size()
        if self.start and (self.end == len(self.buffer) or need > len(self.buffer) - self.start):
            data = self.end - self.start
            self.buffer[:data] = self.buffer[self.start : self.end]
            self.start, self.end = 0, data
        if need > len(self.buffer):
            self.buffer.extend(bytes(need - len(self.buffer)))
        if self.end == len(self.buffer):
            self.buffer.extend(bytes(len(self.buffer)))
        return memoryview(self.buffer)[self.end :]

    def _frame_size(self) -> int:
        if self.end - self.start < _HEAD.size:
            return 0
        return int(_HEAD.size + _HEAD.unpack_from(self.buffer, self.start)[0])

    def take(self) -> tuple[bytes, int, Any] | None:
        """The first whole frame's ``(token, step, payload)`` (its arrays copied out of
        the buffer, writable), or None if it is not all there yet."""
        size = self._frame_size()
        if not size or self.end - self.start < size:
            return None
        _, step, token_size, meta_size, count = _HEAD.unpack_from(self.buffer, self.start)
        view = memoryview(self.buffer)
        at = self.start + _HEAD.size
        token = bytes(view[at : at + token_size])
        meta = view[at + token_size : at + token_size + meta_size]
        at += token_size + meta_size
        lengths = [_SIZE.unpack_from(self.buffer, at + _SIZE.size * i)[0] for i in range(count)]
        at += _SIZE.size * count
        buffers = []
        for length in lengths:
            buffers.append(bytearray(view[at : at + length]))
            at += length
        payload = pickle.loads(meta, buffers=buffers)
        self.start += size
        if self.start == self.end:
            self.start = self.end = 0
        return token, step, payload


class _Mesh:
    """An actor's direct connections to the other partition actors, one TCP socket per
    pair (set up once and kept by the pooled actors): the actor with the smaller address
    connects, the other accepts (in a thread; a handshake with ``authkey``). A step's
    messages are exchanged by :meth:`exchange` in the actor's own thread, sending and
    receiving at once (so two large messages never wait for each other). A message is
    a :func:`_frame`: numpy arrays travel as raw bytes (``sendmsg`` of the arrays' own
    buffers, ``recv_into`` a receive buffer kept per peer); only the rest is pickled."""

    def __init__(self, host: str, authkey: bytes) -> None:
        self._authkey = authkey
        self._listener = Listener((host, 0), authkey=authkey)
        host, port = self._listener.address
        self.address: MeshAddress = (host, port, uuid.uuid4().hex)  # a port may be reused
        self._socks: dict[MeshAddress, socket.socket] = {}
        self._inbound: dict[MeshAddress, _Inbound] = {}
        self._accepted = threading.Condition()
        threading.Thread(target=self._accept, daemon=True, name="mesh-accept").start()

    def _accept(self) -> None:
        while True:
            try:  # a caller without the key (or gone mid-handshake) is turned away
                conn = self._listener.accept()
                peer = tuple(conn.recv())
            except (OSError, EOFError, AuthenticationError):
                continue
            with self._accepted:
                self._socks[peer] = _socket_of(conn)  # type: ignore[index]
                self._accepted.notify_all()

    def _sock(self, peer: MeshAddress) -> socket.socket:
        sock = self._socks.get(peer)
        if sock is not None:
            return sock
        if self.address < peer:
            conn = Client(peer[:2], authkey=self._authkey)
            conn.send(self.address)
            sock = self._socks[peer] = _socket_of(conn)
            return sock
        with self._accepted:
            if not self._accepted.wait_for(lambda: peer in self._socks, timeout=_CONNECT_SECONDS):
                raise RuntimeError(f"partition actor at {peer[0]}:{peer[1]} never connected")
            return self._socks[peer]

    def exchange(
        self, outgoing: dict[MeshAddress, Any], token: str, step: int
    ) -> dict[MeshAddress, Any]:
        """Send ``outgoing[peer]`` to every peer and return what each sent for ``step``
        of job ``token`` (an older job's leftovers are skipped)."""
        socks = {peer: self._sock(peer) for peer in outgoing}
        tag = token.encode()
        writes = {peer: _frame(tag, step, payload) for peer, payload in outgoing.items()}
        received: dict[MeshAddress, Any] = {}
        for peer in outgoing:
            self._take(peer, tag, step, received)
        spin_until = time.perf_counter() + _SPIN_SECONDS if len(outgoing) < _CPUS else 0.0
        while True:
            for peer in [p for p, parts in writes.items() if parts]:
                writes[peer] = _send(socks[peer], writes[peer])
            for peer in outgoing:
                if peer not in received:
                    self._receive(peer, socks[peer])
                    self._take(peer, tag, step, received)
            if len(received) == len(outgoing) and not any(writes.values()):
                return received
            if time.perf_counter() < spin_until:
                os.sched_yield()  # a peer's step is due any moment: no sleep and wake-up
            else:
                _wait(socks, writes, received)

    def _receive(self, peer: MeshAddress, sock: socket.socket) -> None:
        """Read what ``peer`` sent so far (without waiting)."""
        inbound = self._inbound.setdefault(peer, _Inbound())
        try:
            got = sock.recv_into(inbound.room())
        except BlockingIOError:
            return
        if not got:
            raise RuntimeError(f"partition actor at {peer[0]}:{peer[1]} went away")
        inbound.end += got

    def _take(
        self, peer: MeshAddress, tag: bytes, step: int, received: dict[MeshAddress, Any]
    ) -> None:
        """Move ``peer``'s message for ``step`` out of its buffer, if it is all there."""
        inbound = self._inbound.setdefault(peer, _Inbound())
        while peer not in received:
            frame = inbound.take()
            if frame is None:
                return
            if frame[0] == tag and frame[1] == step:
                received[peer] = frame[2]


def _send(sock: socket.socket, parts: list[memoryview]) -> list[memoryview]:
    """Send what the socket takes now of ``parts``; the rest (empty: all sent)."""
    try:
        sent = sock.sendmsg(parts[:_MAX_PARTS])
    except BlockingIOError:
        return parts
    while parts and sent >= parts[0].nbytes:
        sent -= parts[0].nbytes
        parts = parts[1:]
    if sent:
        parts = [parts[0][sent:], *parts[1:]]
    return parts


def _wait(
    socks: dict[MeshAddress, socket.socket],
    writes: dict[MeshAddress, list[memoryview]],
    received: dict[MeshAddress, Any],
) -> None:
    """Block until a socket with something left to send or to receive is ready."""
    poller = select.poll()
    for peer, sock in socks.items():
        events = (select.POLLOUT if writes[peer] else 0) | (
            select.POLLIN if peer not in received else 0
        )
        if events:
            poller.register(sock, events)
    poller.poll()


def _socket_of(conn: Connection) -> socket.socket:
    """The connection's socket (a duplicate: ``conn`` is closed), non-blocking and sending
    small messages at once (no Nagle delay waiting for the peer's ack)."""
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    conn.close()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)
    return sock


_MAX_PARTS = 512  # buffers per sendmsg (the system allows 1024)
# How long an exchange polls its sockets before it blocks in poll(): partitions finish a
# step within a fraction of a millisecond of each other, and a blocked process's wake-up
# costs about as much again. Only while every partition can have a CPU of its own (more
# partitions than CPUs: polling would take the CPU a peer needs to finish its step). The
# CPUs this process may run on, not the machine's: a container may see more than it gets.
_SPIN_SECONDS = 0.002
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
_CONNECT_SECONDS = 60.0
_AUTHKEY = secrets.token_bytes(16)  # this driver's actors' mesh key


class _PartitionActor:
    """The Ray shell around one partition worker: it only unpacks and calls. Actors are
    pooled and reused by later jobs (an actor process takes seconds to start)."""

    def __init__(self) -> None:
        self.worker: Any = None
        self.mesh: _Mesh | None = None
        self.inbox: list[Any] = []
        self.seconds = {"compute": 0.0, "exchange": 0.0, "steps": 0.0}

    def load(
        self,
        factory: WorkerFactory,
        index: int,
        num_parts: int,
        args: tuple[Any, ...],
        authkey: bytes,
        split: str | None,
        then: str | None,
        *pieces: Any,
    ) -> tuple[MeshAddress, Any]:
        """Build the worker (:func:`_partition`); returns this actor's mesh address (the
        mesh starts once) and ``worker.then()`` (None without ``then``), so a job's setup
        is one actor call per partition."""
        self.worker = factory(_partition(pieces, index, num_parts, split), *args)
        ready = None if then is None else getattr(self.worker, then)()
        self.seconds = dict.fromkeys(self.seconds, 0.0)
        if self.mesh is None:
            import ray

            self.mesh = _Mesh(ray.util.get_node_ip_address(), authkey)
        return self.mesh.address, ready

    def drop(self) -> None:
        self.worker = None
        self.inbox = []

    def timing(self) -> dict[str, float]:
        """Seconds this worker spent in :meth:`iterate` since it was loaded: in the
        worker's method (``compute``), in the mesh exchange (``exchange``: sending,
        waiting for the peers, receiving), and how many ``steps``."""
        return dict(self.seconds)

    def call(self, method: str, args: tuple[Any, ...]) -> Any:
        return getattr(self.worker, method)(*args)

    def exchange(self, method: str, args: tuple[Any, ...], *batches: Any) -> tuple[Any, ...]:
        summary, out = getattr(self.worker, method)(list(batches), *args)
        return (summary, *out)

    def iterate(
        self,
        method: str,
        peers: list[MeshAddress],
        token: str,
        start: int,
        count: int,
        previous: list[Any],
        stop: StopRule,
        fresh: bool,
    ) -> list[list[Any]]:
        """:meth:`PartitionGroup.iterate` on this partition (``peers``: every partition's
        mesh address, in partition order; ``token``: the job's, so a message left over
        from an aborted job is never taken for one of this job)."""
        mesh = self.mesh
        assert mesh is not None
        me = peers.index(mesh.address)
        others = [peer for q, peer in enumerate(peers) if q != me]
        if fresh:
            self.inbox = [None] * len(peers)
        steps, seconds, clock = [], self.seconds, time.perf_counter
        for k in range(count):
            began = clock()
            try:
                summary, out = getattr(self.worker, method)(self.inbox, start + k, previous)
            except BaseException as error:  # the peers wait for this step: tell them
                failed = (None, None, repr(error))
                mesh.exchange(dict.fromkeys(others, failed), token, start + k)
                raise
            computed = clock()
            got = mesh.exchange(
                {peer: (summary, out[q], None) for q, peer in enumerate(peers) if q != me},
                token,
                start + k,
            )
            seconds["compute"] += computed - began
            seconds["exchange"] += clock() - computed
            seconds["steps"] += 1
            previous, self.inbox = [], []
            for q, peer in enumerate(peers):
                their = (summary, out[q], None) if q == me else got[peer]
                if their[2] is not None:
                    raise RuntimeError(f"partition {q} failed in step {start + k}: {their[2]}")
                previous.append(their[0])
                self.inbox.append(their[1])
            steps.append(previous)
            if stop(previous):
                break
        return steps

    def reload(
        self,
        method: str,
        index: int,
        num_parts: int,
        args: tuple[Any, ...],
        split: str | None,
        *pieces: Any,
    ) -> None:
        getattr(self.worker, method)(_partition(pieces, index, num_parts, split), *args)


def _partition(
    pieces: tuple[Any, ...], index: int, num_parts: int, split: str | None
) -> GraphPartition:
    """Partition ``index`` from ``pieces``: its piece of every shard, or (``split``, the
    direction) every shard's whole ``vertices, edges`` tables in turn, split here."""
    if split is not None:
        tables = iter(pieces)
        pieces = tuple(
            split_tables(v, e, num_parts, direction=split)[index]
            for v, e in zip(tables, tables, strict=True)
        )
    return partition_graph(list(pieces), index, num_parts)


SPLIT_IN_ACTORS = 250_000  # edges: up to this, every actor splits the whole graph itself
_idle: dict[str, list[Any]] = {}  # Ray job id -> idle pooled actors


def _take_actors(count: int) -> list[Any]:
    import ray

    from shards.remote import actor_class

    idle = _idle.setdefault(ray.get_runtime_context().get_job_id(), [])
    actors = [idle.pop() for _ in range(min(count, len(idle)))]
    cls = actor_class(_PartitionActor).options(num_cpus=0)
    actors += [cls.remote() for _ in range(count - len(actors))]
    return actors


def release_actors() -> int:
    """Kill the idle pooled partition actors of this Ray job; returns how many."""
    import ray

    idle = _idle.pop(ray.get_runtime_context().get_job_id(), []) if ray.is_initialized() else []
    for actor in idle:
        ray.kill(actor)
    return len(idle)


@functools.cache
def _split_remote() -> Any:
    import ray

    @ray.remote
    def split(vertices: pa.Table, edges: pa.Table, num_parts: int, direction: str) -> Any:
        pieces = split_tables(vertices, edges, num_parts, direction=direction)
        return pieces[0] if num_parts == 1 else tuple(pieces)

    return split


class RayGroup:
    """One Ray actor per partition. The snapshot's per-shard tables are split by Ray
    tasks (one per shard, ``P`` return objects each), and every actor is built from the
    pieces of its partition, so the graph never passes through the driver; a graph of at
    most :data:`SPLIT_IN_ACTORS` edges is split by every actor itself instead."""

    def __init__(
        self,
        graph: GraphInput,
        num_parts: int,
        factory: WorkerFactory,
        args: tuple[Any, ...],
        direction: str = "out",
        num_cpus: float = 0.0,
        then: str | None = None,
    ) -> None:
        import ray

        self.num_parts = num_parts
        self._ray = ray
        split, pieces = self._pieces(graph, direction)
        self.actors = _take_actors(num_parts)
        self._token = uuid.uuid4().hex
        built: list[tuple[MeshAddress, Any]] = ray.get(
            [
                actor.load.remote(factory, p, num_parts, args, _AUTHKEY, split, then, *pieces[p])
                for p, actor in enumerate(self.actors)
            ]
        )
        self._peers: list[MeshAddress] = [address for address, _ in built]
        self.loaded = [] if then is None else [ready for _, ready in built]

    def _pieces(self, graph: GraphInput, direction: str) -> tuple[str | None, list[list[Any]]]:
        """``(split, pieces)``: ``pieces[p]`` are object refs of partition ``p``'s piece of
        every shard (split by Ray tasks; ``split`` is None), or, for a graph of at most
        :data:`SPLIT_IN_ACTORS` edges, of every shard's tables for the actor to split
        (``split`` is the direction): one Ray round trip less, each actor reads them all."""
        ray = self._ray
        tables = _tables(graph)
        if tables is not None:
            vertex_refs, edge_refs = [ray.put(tables[0])], [ray.put(tables[1])]
            num_edges = tables[1].num_rows
        else:
            vertex_refs, edge_refs = graph.vertex_refs, graph.edge_refs
            num_edges = graph.meta.edges
        if num_edges <= SPLIT_IN_ACTORS:
            shards = [ref for pair in zip(vertex_refs, edge_refs, strict=True) for ref in pair]
            return direction, [shards] * self.num_parts
        split = _split_remote().options(num_returns=self.num_parts)
        per_shard = []
        for vref, eref in zip(vertex_refs, edge_refs, strict=True):
            refs = split.remote(vref, eref, self.num_parts, direction)
            per_shard.append([refs] if self.num_parts == 1 else refs)
        return None, [[refs[p] for refs in per_shard] for p in range(self.num_parts)]

    def call(self, method: str, *args: Any) -> list[Any]:
        return self._ray.get([a.call.remote(method, args) for a in self.actors])

    def exchange(self, method: str, inbox: list[Any], *args: Any) -> tuple[list[Any], list[Any]]:
        n = self.num_parts
        results = [
            actor.exchange.options(num_returns=n + 1).remote(method, args, *batches)
            for actor, batches in zip(self.actors, inbox, strict=True)
        ]
        summaries = self._ray.get([r[0] for r in results])  # the barrier
        return summaries, [[results[p][q + 1] for p in range(n)] for q in range(n)]

    def iterate(
        self,
        method: str,
        start: int,
        count: int,
        previous: list[Any],
        stop: StopRule,
        *,
        fresh: bool,
    ) -> list[list[Any]]:
        peers, token = self._peers, self._token
        steps: list[list[list[Any]]] = self._ray.get(
            [
                a.iterate.remote(method, peers, token, start, count, previous, stop, fresh)
                for a in self.actors
            ]
        )
        return steps[0]

    def empty_inbox(self) -> list[Any]:
        return [[] for _ in range(self.num_parts)]

    def timing(self) -> list[dict[str, float]]:
        """Every partition actor's :meth:`_PartitionActor.timing` (for benchmarks)."""
        return self._ray.get([a.timing.remote() for a in self.actors])

    def reload(self, method: str, graph: GraphInput, *args: Any, direction: str = "out") -> None:
        split, pieces = self._pieces(graph, direction)
        self._ray.get(
            [
                a.reload.remote(method, p, self.num_parts, args, split, *pieces[p])
                for p, a in enumerate(self.actors)
            ]
        )

    def close(self) -> None:
        """Free the workers and return the actors to the pool."""
        if self.actors:
            self._ray.get([a.drop.remote() for a in self.actors])
            _idle.setdefault(self._ray.get_runtime_context().get_job_id(), []).extend(self.actors)
        self.actors = []


def start_group(
    graph: GraphInput,
    num_parts: int,
    factory: WorkerFactory,
    *args: Any,
    executor: Executor = "auto",
    direction: str = "out",
    then: str | None = None,
) -> LocalGroup | RayGroup:
    """Start ``num_parts`` workers ``factory(partition, *args)`` over ``graph``.

    ``executor="auto"`` runs on Ray for a :class:`~snapshot.Snapshot` and in this process
    for a ``(vertices, edges)`` pair of tables; ``"ray"`` and ``"local"`` force either.
    ``then`` names a worker method called (without arguments) right after each worker is
    built, in the same call; its results are the group's ``loaded``.
    """
    if num_parts < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_parts}")
    if executor not in ("auto", "local", "ray"):
        raise ValueError(f"executor must be 'auto', 'local' or 'ray', got {executor!r}")
    on_ray = executor == "ray" or (executor == "auto" and _tables(graph) is None)
    if on_ray:
        return RayGroup(graph, num_parts, factory, args, direction, then=then)
    return LocalGroup(graph, num_parts, factory, args, direction, then)
