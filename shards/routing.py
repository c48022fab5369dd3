"""Stable hash partitioning of vertex ids over shards.

Python's ``hash`` is salted per process for ``str``; shards live in different processes
and must agree across restarts, so ids are hashed with a fixed function instead.
"""

from __future__ import annotations

import hashlib

from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["shard_of", "stable_hash"]

_MASK = (1 << 64) - 1


def stable_hash(vertex_id: VertexId) -> int:
    """A 64-bit hash of ``vertex_id`` that is the same in every process and run.

    >>> stable_hash(42) == stable_hash(42)
    True
    >>> stable_hash("alice") != stable_hash("bob")
    True
    """
    if isinstance(vertex_id, int) and not isinstance(vertex_id, bool):
        # splitmix64 finaliser: consecutive ids spread evenly over shards
        z = (vertex_id + 0x9E3779B97F4A7C15) & _MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)
    if isinstance(vertex_id, str):
        return int.from_bytes(hashlib.blake2b(vertex_id.encode(), digest_size=8).digest(), "big")
    raise TypeError(f"vertex id must be an int or a str, got {vertex_id!r}")


def shard_of(vertex_id: VertexId, num_shards: int) -> int:
    """The shard (``0 <= shard < num_shards``) that hosts ``vertex_id``.

    >>> shard_of(7, 1)
    0
    >>> sorted({shard_of(v, 4) for v in range(100)})
    [0, 1, 2, 3]
    """
    return stable_hash(vertex_id) % num_shards


mark_module_api(globals())
