"""A graph that is not running, read from its logs in this process: no Ray, no shard
actors, no recovery of the whole graph (:class:`StoppedLogs`).

Past graphs are rebuilt from the shard logs by the same code a running graph uses
(:func:`~snapshot.snapshot.build_local_snapshot`: from the newest shard checkpoint inside
the cut, replaying only the blocks that can hold entries of the cut). What a stopped graph
cannot do is deliver the messages it had in flight when it stopped: a time cut at ``T``
(or a window ending at ``T``) is refused with :class:`~chronoray.errors.SnapshotNotReady`
when a message of time ``<= T`` was logged as sent and not applied by its receiver -- the
graph must run to deliver it (open it). Clock cuts and the cut "now" are consistent by
construction and always answered. Graphs whose classes keep the built-in edge hooks (the
default) send no messages between shards for stream edges, so their cuts are always exact.

Guarantees: read-only (RocksDB opened read-only, nothing written); the same tables as a
snapshot of the running graph at the same cut.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chronoray.errors import SnapshotNotReady
from chronoray.manifest import Manifest
from shards.core import shard_channel
from shards.logstore import LogStore, RocksLogStore
from shards.replay import last_worker_clock, read_cursor, undelivered
from shards.watermark import show_time
from snapshot.snapshot import Snapshot, SnapshotMeta, build_local_snapshot
from vertex.annotations import mark_module_api

__all__ = ["StoppedLogs", "graph_running", "readable_here", "stopped_snapshot"]


def _shard_paths(log_dir: Path, num_shards: int) -> list[Path]:
    return [log_dir / f"shard-{k}" for k in range(num_shards)]


def graph_running(log_dir: str | os.PathLike[str]) -> bool:
    """Whether a process holds a shard log of the graph in ``log_dir`` open for writing
    (RocksDB's lock on the shard's ``LOCK`` file is taken). A log directory without a
    graph is not running."""
    root = Path(log_dir)
    if not Manifest.exists(root):
        return False
    return _any_locked(_shard_paths(root, Manifest.read(root).num_shards))


def _any_locked(paths: list[Path]) -> bool:
    for path in paths:
        lock = path / "LOCK"
        if not lock.exists():
            continue
        with open(lock, "rb") as f:  # a read lock conflicts with the writer's lock
            try:
                fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.lockf(f, fcntl.LOCK_UN)
    return False


def readable_here(log_dir: str | os.PathLike[str]) -> bool:
    """Whether the graph in ``log_dir`` is stopped and every shard's log is in this
    machine's ``log_dir`` (a graph whose shards logged on other nodes' disks is not), so
    this process alone can read or reopen it."""
    root = Path(log_dir)
    if not Manifest.exists(root):
        return False
    paths = _shard_paths(root, Manifest.read(root).num_shards)
    return all((p / "CURRENT").exists() for p in paths) and not _any_locked(paths)


class StoppedLogs:
    """The logs of a graph that is not running (see the module doc), as the
    :class:`~chronoray.travel.ShardLogs` time travel reads: ``TimeTravel(StoppedLogs(d))``
    answers snapshots, past vertex states and histories. ``stores``: open stores instead
    of a log directory (tests). Close it (or use it as a context manager) to release the
    stores."""

    def __init__(
        self, log_dir: str | os.PathLike[str] | None = None, stores: list[LogStore] | None = None
    ) -> None:
        if stores is None:
            if log_dir is None:
                raise ValueError("give a log directory or stores")
            root = Path(log_dir)
            if not Manifest.exists(root):
                raise FileNotFoundError(f"{root} holds no chronoray graph")
            paths = _shard_paths(root, Manifest.read(root).num_shards)
            stores = []
            try:
                for path in paths:
                    stores.append(RocksLogStore(path, read_only=True))
            except BaseException:
                for store in stores:
                    store.close()
                raise
            self._owned = True
        else:
            self._owned = False
        self.stores = stores
        self._pending: float | None = None

    def __enter__(self) -> StoppedLogs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the stores this opened."""
        if self._owned:
            for store in self.stores:
                with contextlib.suppress(Exception):
                    store.close()
            self._owned = False

    @property
    def num_shards(self) -> int:
        """Number of shards."""
        return len(self.stores)

    def undelivered_time(self) -> float:
        """The earliest time of a message logged as sent and not applied by its receiver
        (``inf``: none)."""
        if self._pending is None:
            cursors = [read_cursor(store) for store in self.stores]
            applied = [{} if c is None else c.applied for c in cursors]
            times = [
                msg[4]
                for k, store in enumerate(self.stores)
                for _, _, msg in undelivered(store, shard_channel(k), applied)
            ]
            self._pending = min(times, default=math.inf)
        return self._pending

    def wait_until_complete(self, t: float, timeout: float = 0.0) -> None:
        """Return if every effect of the updates of time ``<= t`` is in the logs; else
        :class:`~chronoray.errors.SnapshotNotReady` (the graph must run to deliver what
        it had in flight: nothing here can wait for that)."""
        pending = self.undelivered_time()
        if pending <= t:
            raise SnapshotNotReady(
                f"the graph stopped with a message of time {show_time(pending)} not yet "
                f"delivered to its shard, so the cut at {show_time(t)} is not complete in "
                "its logs: open the graph (it delivers the message), then ask again"
            )

    def build_snapshot(
        self,
        meta: SnapshotMeta,
        *,
        clock: tuple[int, ...] | None = None,
        at: float | None = None,
        since: float | None = None,
    ) -> Snapshot:
        """Every shard's part of the cut, rebuilt in this process from its log."""
        return build_local_snapshot(self.stores, meta, clock=clock, at=at, since=since)

    def read_log(self, shard: int, function: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """``function(store, *args, **kw)`` against ``shard``'s log."""
        return function(self.stores[shard], *args, **kw)

    def read_logs(
        self, function: Callable[..., Any], args: dict[int, tuple[Any, ...]]
    ) -> dict[int, Any]:
        """``function(store, *args[k])`` against shard ``k``'s log for every ``k``."""
        return {k: function(self.stores[k], *a) for k, a in args.items()}

    def clocks(self) -> tuple[int, ...]:
        """Every shard's last worker clock."""
        return tuple(last_worker_clock(store) for store in self.stores)


def stopped_snapshot(
    log_dir: str | os.PathLike[str],
    at: float | None = None,
    *,
    clock: list[int] | tuple[int, ...] | None = None,
    window: tuple[float, float] | None = None,
) -> tuple[Snapshot | None, str]:
    """The snapshot of the graph in ``log_dir`` read from its logs, if it is not running
    and its logs alone answer the cut exactly; else ``None``, with why when it is the logs
    that cannot answer (messages in flight; ``""`` for a running graph or no graph)."""
    if not Manifest.exists(Path(log_dir)) or graph_running(log_dir):
        return None, ""
    from chronoray.travel import TimeTravel  # travel builds on the runtimes' modules

    with StoppedLogs(log_dir) as logs:
        try:
            # its tables are built in this process: nothing reads the stores after this
            return TimeTravel(logs).snapshot(at, clock=clock, window=window), ""
        except SnapshotNotReady as exc:
            return None, f"{exc}; opening it"


mark_module_api(globals())
