"""Time travel: consistent cuts, reconstruction from the logs, retrospective queries."""

from snapshot.reconstruct import ShardPart, consistent_bound, rebuild_part
from snapshot.retro import vertex_history, vertex_state_at
from snapshot.snapshot import Snapshot, SnapshotMeta

__all__ = [
    "ShardPart",
    "Snapshot",
    "SnapshotMeta",
    "consistent_bound",
    "rebuild_part",
    "vertex_history",
    "vertex_state_at",
]
