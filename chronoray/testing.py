"""Helpers for testing graphs and vertex classes (yours and chronoray's own).

* :class:`LocalRuntime` runs a graph in this process, without Ray, in milliseconds.
* :func:`edge_oracle` reads an edge file independently of chronoray's sources, as the
  truth to compare a graph with.
* :func:`kill_shard` kills a shard actor's process (``SIGKILL``, no clean stop), the way a
  crash would.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import ray

from shards.local import LocalRuntime

__all__ = ["EdgeOracle", "LocalRuntime", "edge_oracle", "pair_counts", "kill_shard"]

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


def kill_shard(graph: Any, shard: int) -> int:
    """SIGKILL the process of ``graph``'s shard actor ``shard``; returns the killed pid.

    Ray restarts the actor (``max_restarts``); the new process recovers from its log.
    """
    pid: int = ray.get(graph.shards[shard].pid.remote())
    os.kill(pid, signal.SIGKILL)
    return pid
