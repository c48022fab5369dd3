"""Stable hash partitioning of vertex ids over shards.

Python's ``hash`` is salted per process for ``str``; shards live in different processes
and must agree across restarts, so ids are hashed with a fixed function instead.
"""

from __future__ import annotations

import hashlib

import numpy as np

from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = ["shard_of", "shards_of", "stable_hash"]

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


def shards_of(ids: np.ndarray, num_shards: int) -> np.ndarray:
    """:func:`shard_of` of every id of an int64 array, as one array (the same shards:
    the same splitmix64 finaliser in wrapping uint64 arithmetic).

    >>> import numpy as np
    >>> ids = np.array([-5, 0, 7, 2**62], np.int64)
    >>> shards_of(ids, 4).tolist() == [shard_of(int(v), 4) for v in ids]
    True
    """
    z = ids.astype(np.int64, copy=False).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return ((z ^ (z >> np.uint64(31))) % np.uint64(num_shards)).astype(np.intp)


mark_module_api(globals())
