"""Vector clocks over shard worker clocks.

Each shard counts its behavior executions (its *worker clock*). A shard's vector clock
holds, for every shard, the highest worker clock of that shard it has heard of (directly
or transitively, through message batches); its own component is its worker clock. The
vector a shard held when it executed an entry is that entry's causal past, and a vector of
worker clocks taken that way is a globally consistent cut.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vertex.annotations import mark_module_api

__all__ = ["VectorClock"]


class VectorClock:
    """A mutable vector of worker clocks, one component per shard.

    >>> a = VectorClock(3)
    >>> a.tick(0), a.tick(0)
    (1, 2)
    >>> b = VectorClock(3); b.merge((0, 0, 5))
    True
    >>> b.merge(a.as_tuple())
    True
    >>> b.as_tuple()
    (2, 0, 5)
    >>> b.merge((1, 0, 5))
    False
    """

    __slots__ = ("_v",)

    def __init__(self, size: int, values: Iterable[int] | None = None) -> None:
        self._v = list(values) if values is not None else [0] * size
        if len(self._v) != size:
            raise ValueError(f"vector clock needs {size} components, got {len(self._v)}")

    def tick(self, shard: int) -> int:
        """Count one execution on ``shard``; returns its new worker clock."""
        self._v[shard] += 1
        return self._v[shard]

    def merge(self, other: Sequence[int]) -> bool:
        """Component-wise max with ``other``; ``True`` if anything grew."""
        grew = False
        v = self._v
        for i, x in enumerate(other):
            if x > v[i]:
                v[i] = x
                grew = True
        return grew

    def __getitem__(self, shard: int) -> int:
        return self._v[shard]

    def __setitem__(self, shard: int, value: int) -> None:
        self._v[shard] = value

    def __len__(self) -> int:
        return len(self._v)

    def as_tuple(self) -> tuple[int, ...]:
        """An immutable copy."""
        return tuple(self._v)

    def __repr__(self) -> str:
        return f"VectorClock({self._v})"


mark_module_api(globals())
