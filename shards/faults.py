"""A fault-injecting :class:`~shards.logstore.LogStore` wrapping a real one.

:class:`FaultyLogStore` passes every call to the store it wraps (usually a
:class:`~shards.logstore.RocksLogStore`) except those a :class:`FaultPlan` says must fail.
A :class:`Fault` names an operation (:class:`Op`: ``append``, ``scan``, ``checkpoint``
write, ``open``), a shard (or every shard), the call it hits first (``at``, counted per
shard and operation from 1), how often it repeats (``every`` calls, at most ``times``
times) and what happens (:class:`Kind`):

* ``error``: the call raises :class:`InjectedFault` (a :class:`~shards.logstore.LogError`)
  and writes nothing -- what a failing disk does;
* ``torn``: the batch is dropped before it reaches the store and the process ends on
  the spot (``crash="exit"``: ``os._exit``, as a kill during the write would; in-process,
  ``crash="raise"``: :class:`SimulatedCrash`, a ``BaseException`` nothing catches), so the
  caller can never acknowledge it;
* ``slow``: the call waits ``delay`` seconds, then goes through.

A plan can be kept in a JSON file (:meth:`FaultPlan.save`); the store then records each
firing in ``<plan>.fired`` (one line per firing, appended and flushed before the fault
acts), so a one-shot fault fires once in total even though the process it hit is
restarted and opens the store again. That is what makes the store usable on Ray:
``Config(log_store="shards.faults:open_faulty")`` makes every shard actor open its log
with :func:`open_faulty`, which reads the plan ``faults.json`` next to the shard logs
(in ``log_dir``; no file: no faults).
"""

from __future__ import annotations

import enum
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from shards.logstore import LogBatch, LogError, LogName, LogStore, RocksLogStore
from vertex.annotations import mark_module_api

__all__ = [
    "PLAN_FILE",
    "Fault",
    "FaultPlan",
    "FaultyLogStore",
    "InjectedFault",
    "Kind",
    "Op",
    "SimulatedCrash",
    "open_faulty",
]

PLAN_FILE = "faults.json"
"""The name of the plan file :func:`open_faulty` reads, in the graph's ``log_dir``."""

TORN_EXIT_CODE = 86
"""The exit status of a process ended by a ``torn`` fault (``crash="exit"``)."""


class Op(enum.StrEnum):
    """The store operations a fault can hit (``checkpoint``: an append carrying a shard
    checkpoint; such an append is also an ``append``)."""

    APPEND = "append"
    SCAN = "scan"
    CHECKPOINT = "checkpoint"
    OPEN = "open"


class Kind(enum.StrEnum):
    """What a fault does (see the module docstring)."""

    ERROR = "error"
    TORN = "torn"
    SLOW = "slow"


class InjectedFault(LogError):
    """An injected failure of a log store operation (nothing was written)."""


class SimulatedCrash(BaseException):  # noqa: N818 -- a crash, not an error to handle
    """A ``torn`` fault in-process: the write was dropped and the "process" is gone; the
    store and everything built on it must be discarded and reopened."""


@dataclass(frozen=True)
class Fault:
    """One injected fault: operation ``op`` of shard ``shard`` (``None``: every shard)
    fails from its ``at``-th call on, then on every ``every``-th call after (0: once),
    at most ``times`` times in all (0: no limit); ``kind`` says how, ``delay`` is the
    wait of a ``slow`` fault in seconds."""

    op: Op
    kind: Kind = Kind.ERROR
    shard: int | None = None
    at: int = 1
    every: int = 0
    times: int = 1
    delay: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", Op(self.op))
        object.__setattr__(self, "kind", Kind(self.kind))
        if self.at < 1 or self.every < 0 or self.times < 0 or self.delay < 0:
            raise ValueError(f"a fault needs at >= 1 and every, times, delay >= 0: {self}")
        if self.op is Op.OPEN and self.kind is Kind.TORN:
            raise ValueError("an open has nothing to tear")

    def hits(self, call: int) -> bool:
        """Whether the ``call``-th call (from 1) of its operation is one this fault hits
        (before counting how many times it fired)."""
        if call < self.at:
            return False
        return call == self.at or (self.every > 0 and (call - self.at) % self.every == 0)


@dataclass
class FaultPlan:
    """The faults of a run, and (when it is kept in a file) how often each fired."""

    faults: list[Fault] = field(default_factory=list)
    path: Path | None = None

    def save(self, path: str | os.PathLike[str]) -> FaultPlan:
        """Write the plan to ``path`` (JSON), forget earlier firings; returns the plan."""
        self.path = Path(path)
        self.path.write_text(json.dumps([asdict(f) for f in self.faults]))
        self._fired_file.unlink(missing_ok=True)
        return self

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FaultPlan:
        """The plan saved at ``path``."""
        faults = [Fault(**raw) for raw in json.loads(Path(path).read_text())]
        return cls(faults, Path(path))

    @property
    def _fired_file(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".fired")

    def fired(self) -> list[tuple[int, int, str]]:
        """``(fault index, shard, operation)`` of every firing so far, in order (in a
        file-backed plan: of every process that used it)."""
        if self.path is not None:
            if not self._fired_file.exists():
                return []
            rows = [line.split() for line in self._fired_file.read_text().splitlines()]
            return [(int(i), int(k), op) for i, k, op in rows]
        return list(self._memory)

    def fire(self, index: int, shard: int, op: Op) -> None:
        """Record a firing (durably first, for a file-backed plan)."""
        op = Op(op)
        if self.path is not None:
            with self._fired_file.open("a") as f:
                f.write(f"{index} {shard} {op.value}\n")
                f.flush()
                os.fsync(f.fileno())
        else:
            self._memory.append((index, shard, op.value))

    def __post_init__(self) -> None:
        self._memory: list[tuple[int, int, str]] = []

    def due(self, shard: int, op: Op, call: int) -> tuple[int, Fault] | None:
        """The first fault (index, fault) hitting this call that has fired fewer than its
        ``times``; ``None`` if the call goes through."""
        op = Op(op)
        candidates = [
            (i, f)
            for i, f in enumerate(self.faults)
            if f.op is op and f.shard in (None, shard) and f.hits(call)
        ]
        if not candidates:
            return None
        counts: dict[int, int] = {}
        for i, _, _ in self.fired():
            counts[i] = counts.get(i, 0) + 1
        for i, f in candidates:
            if f.times == 0 or counts.get(i, 0) < f.times:
                return i, f
        return None


class FaultyLogStore:
    """A :class:`~shards.logstore.LogStore` that runs ``plan`` against the store made by
    ``opener`` (called once here, so ``open`` faults hit the constructor) for shard
    ``shard``. Calls are counted per operation in this instance: a reopened store counts
    from 1 again, and a file-backed plan keeps one-shot faults from firing twice."""

    def __init__(
        self,
        opener: Callable[[], LogStore],
        plan: FaultPlan,
        shard: int,
        *,
        where: str = "",
        crash: Literal["exit", "raise"] = "raise",
    ) -> None:
        self.plan = plan
        self.shard = shard
        self.where = where or f"shard {shard}"
        self.crash = crash
        self._calls = dict.fromkeys(Op, 0)
        self._inject(Op.OPEN)
        self.inner = opener()

    def _inject(self, op: Op) -> Kind | None:
        """Count a call of ``op``; act out the fault due on it, if any (``torn`` is left
        to the caller, which must drop its write first); returns the kind that fired."""
        self._calls[op] += 1
        due = self.plan.due(self.shard, op, self._calls[op])
        if due is None:
            return None
        index, fault = due
        self.plan.fire(index, self.shard, op)
        if fault.kind is Kind.SLOW:
            time.sleep(fault.delay)
        elif fault.kind is Kind.ERROR:
            raise InjectedFault(
                f"{self.where}: injected {op.value} failure (fault {index}, call {self._calls[op]})"
            )
        return fault.kind

    def _tear(self, op: Op) -> None:
        """The batch was dropped: end the process (or raise :class:`SimulatedCrash`)."""
        if self.crash == "exit":
            os._exit(TORN_EXIT_CODE)
        raise SimulatedCrash(f"{self.where}: torn {op.value}: batch dropped, process gone")

    # -- LogStore --

    def append(self, batch: LogBatch) -> None:
        ops = [Op.APPEND, Op.CHECKPOINT] if batch.entries.get(LogName.CHECKPOINTS) else [Op.APPEND]
        for op in ops:
            if self._inject(op) is Kind.TORN:
                self._tear(op)
        self.inner.append(batch)

    def scan(
        self,
        log: LogName,
        start: int | None = None,
        end: int | None = None,
        *,
        reverse: bool = False,
    ) -> Iterator[tuple[int, bytes]]:
        self._inject(Op.SCAN)
        return self.inner.scan(log, start, end, reverse=reverse)

    def last_seq(self, log: LogName) -> int:
        return self.inner.last_seq(log)

    def floor(self, log: LogName, seq: int) -> tuple[int, bytes] | None:
        return self.inner.floor(log, seq)

    def get_meta(self, key: str) -> bytes | None:
        return self.inner.get_meta(key)

    def close(self) -> None:
        if hasattr(self, "inner"):
            self.inner.close()

    @property
    def closed(self) -> bool:
        return self.inner.closed

    def __repr__(self) -> str:
        return f"FaultyLogStore({self.inner!r}, {self.where})"


def open_faulty(path: str, *, sync: bool = False, create: bool = True) -> LogStore:
    """The log store factory of ``Config(log_store="shards.faults:open_faulty")``: the
    RocksDB log at ``path`` (``<log_dir>/shard-<k>``) behind the plan
    ``<log_dir>/faults.json``, if there is one (a ``torn`` fault ends the process)."""
    log = Path(path)
    plan_file = log.parent / PLAN_FILE
    if not plan_file.exists():
        return RocksLogStore(path, sync=sync, create=create)
    shard = int(log.name.rsplit("-", 1)[-1])
    return FaultyLogStore(
        lambda: RocksLogStore(path, sync=sync, create=create),
        FaultPlan.load(plan_file),
        shard,
        where=f"shard {shard} ({path})",
        crash="exit",
    )


mark_module_api(globals())
