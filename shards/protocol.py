"""The values that cross the boundary between a shard and its callers.

Each is a slotted dataclass, pickled as is by Ray and built the same way by the in-process
runtime: a shard's answer to a batch (:class:`Outcome`), its counters
(:class:`ShardStats`), what a restarted shard is told (:class:`ShardSettings`). The
batches themselves are :class:`shards.core.Batch`; sources' promises and the
coordinator's instructions live in :mod:`shards.coordinator`.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

from shards.coordinator import Gate
from vertex.annotations import mark_module_api

__all__ = ["Outcome", "Quiet", "ShardSettings", "ShardStats"]


@dataclass(slots=True)
class Outcome:
    """What a shard did with a batch (or where a channel stands): executions (of this
    batch and of queued updates of other sources it let run), duplicates skipped, whether
    the batch was buffered for later (its ``prev`` is ahead), the channel's positions
    applied (logged) and received (applied, or queued to be merged), and the shard's
    ``incarnation`` (a new one after a restart: the sender resends what was not applied)."""

    executed: int = 0
    duplicates: int = 0
    buffered: bool = False
    applied: int = 0
    received: int = 0
    incarnation: str = ""


@dataclass(slots=True)
class ShardStats:
    """One shard's counters, kept as it runs (none is recomputed by a scan): vertices and
    edges, its worker clock and vector clock, failed behaviors, messages not yet
    acknowledged (``pending``) and sent (``sent``, per destination), each channel's
    applied position and each source channel's last time, source updates queued to be
    merged, the gate, live computations' side items pending and processed, its
    incarnation and whether it is a restarted instance. ``min_pending_time``: the earliest
    time of a message not yet acknowledged, when asked for (a scan of the outboxes)."""

    shard: int
    vertices: int
    edges: int
    worker_clock: int
    vector_clock: list[int]
    errors: int
    pending: int
    sent: list[int]
    applied: dict[str, int]
    side_pending: int
    times: dict[str, float]
    queued: int
    gate: Gate | None
    side_processed: int
    incarnation: str = ""
    restarted: bool = False
    min_pending_time: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the gate as ``{channel: [time, sent]}``)."""
        out = asdict(self)
        if self.gate is not None:
            out["gate"] = {c: [p.time, list(p.sent)] for c, p in self.gate.items()}
        return out

    def __getitem__(self, key: str) -> Any:
        """Deprecated: the counters were a dict once; read them as attributes."""
        warnings.warn(
            f"ShardStats[{key!r}] is deprecated: use .{key}", DeprecationWarning, stacklevel=2
        )
        return getattr(self, key)


@dataclass(slots=True)
class ShardSettings:
    """What a restarted shard sets before it sends or merges anything: the frontier and
    the gate, each with the number it was told under (an older value arriving later is
    ignored)."""

    frontier_seq: int
    frontier: float
    reset: bool
    gate_seq: int
    gate: Gate | None


@dataclass(slots=True)
class Quiet:
    """A shard's answer to a wait for quiet: whether nothing is pending there (no message
    nor side item waiting to be sent or acknowledged), its worker clock and the side
    items it processed (unchanged over two answers in a row: nothing ran between)."""

    quiet: bool
    worker_clock: int
    side_processed: int


mark_module_api(globals())
