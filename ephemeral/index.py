"""Secondary indexes: vertex ids by keys derived from vertex state.

A vertex class declares its indexes as a class attribute mapping an index name to a key
function of the vertex's state::

    class User(cr.Vertex):
        indexes = {"name": lambda state: state.get("name"),
                   "followers": lambda state: state.get("in_degree", 0)}

Every shard keeps, per index, key -> ids of its vertices (with the keys in sorted order
for range lookups) and updates it after every change of one of its vertices, so the index
always reflects the latest states (the "simple API" of thesis ch. 9.6.3: a vertex has at
most one entry per index, replaced at each change). A key function returning ``None``
leaves the vertex out of that index; one that raises leaves it out and is counted in
``errors``. Keys of one index must be comparable with each other (all numbers, all
strings, tuples of those...).

``g.index(name).lookup(key)`` and ``.range(lo, hi)`` gather the ids from every shard. An
index is eventually consistent with ingestion (it follows each vertex as soon as that
vertex's execution ran) and lives in memory: a restarted shard rebuilds its part from
the vertices it recovered from its log.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Mapping
from typing import Any

from vertex.records import VertexId

__all__ = ["KeyFunction", "ShardIndex", "declared_indexes", "id_order"]

KeyFunction = Callable[[Mapping[str, Any]], Any]


def declared_indexes(classes: list[type]) -> dict[str, dict[str, KeyFunction]]:
    """``index name -> {vertex type name -> key function}`` from the ``indexes`` class
    attributes of ``classes``."""
    found: dict[str, dict[str, KeyFunction]] = {}
    for cls in classes:
        for name, key_fn in (getattr(cls, "indexes", None) or {}).items():
            if not callable(key_fn):
                raise TypeError(f"{cls.__name__}.indexes[{name!r}] must be a function of state")
            found.setdefault(name, {})[cls.type_name] = key_fn  # type: ignore[attr-defined]
    return found


class ShardIndex:
    """One index on one shard: key -> ids, keys sorted.

    >>> index = ShardIndex("age", {"User": lambda s: s.get("age")})
    >>> index.update(1, "User", {"age": 30}); index.update(2, "User", {"age": 25})
    >>> index.update(3, "User", {"age": 30}); index.update(1, "User", {"age": 31})
    >>> index.lookup(30), index.range(25, 30)
    ([3], [(25, 2), (30, 3)])
    >>> index.update(3, "User", None); index.lookup(30)
    []
    """

    def __init__(self, name: str, key_functions: dict[str, KeyFunction]) -> None:
        self.name = name
        self.key_functions = key_functions
        self.key_of: dict[VertexId, Any] = {}
        self.ids_by_key: dict[Any, set[VertexId]] = {}
        self.sorted_keys: list[Any] = []
        self.errors = 0

    def update(self, vertex_id: VertexId, type_name: str, state: Mapping[str, Any] | None) -> None:
        """Re-index ``vertex_id`` from its new ``state`` (``None``: deleted)."""
        key_fn = self.key_functions.get(type_name)
        key = None
        if key_fn is not None and state is not None:
            try:
                key = key_fn(state)
            except Exception:
                self.errors += 1
                key = None
        old = self.key_of.get(vertex_id)
        if old is not None and old == key:
            return
        if old is not None:
            self._remove(vertex_id, old)
        if key is not None:
            self.key_of[vertex_id] = key
            ids = self.ids_by_key.get(key)
            if ids is None:
                ids = self.ids_by_key[key] = set()
                insort(self.sorted_keys, key)
            ids.add(vertex_id)

    def _remove(self, vertex_id: VertexId, key: Any) -> None:
        del self.key_of[vertex_id]
        ids = self.ids_by_key[key]
        ids.discard(vertex_id)
        if not ids:
            del self.ids_by_key[key]
            i = bisect_left(self.sorted_keys, key)
            del self.sorted_keys[i]

    def lookup(self, key: Any) -> list[VertexId]:
        """Ids whose key equals ``key``."""
        return sorted(self.ids_by_key.get(key, ()), key=id_order)

    def range(self, lo: Any = None, hi: Any = None) -> list[tuple[Any, VertexId]]:
        """``(key, id)`` with ``lo <= key <= hi`` (``None``: unbounded), by key then id."""
        keys = self.sorted_keys
        i = 0 if lo is None else bisect_left(keys, lo)
        j = len(keys) if hi is None else bisect_right(keys, hi)
        return [(k, v) for k in keys[i:j] for v in sorted(self.ids_by_key[k], key=id_order)]

    def __len__(self) -> int:
        return len(self.key_of)


def id_order(vertex_id: VertexId) -> tuple[int, Any]:
    """Ints before strings, each in their natural order."""
    return (1, vertex_id) if isinstance(vertex_id, str) else (0, vertex_id)
