"""Pause/shift/resume (thesis 9.5.3, after GraphTau): what a vertex learns when a paused
iterative job moves from snapshot S1 to a newer snapshot S2.

The job itself is :class:`snapshot.models.pregel.PregelJob`: ``job.run(k)`` pauses after
``k`` supersteps (at a barrier), ``job.shift(s2, shift)`` calls
``shift(result, delta) -> state`` for every vertex of S2 in parallel (each partition on
its own), and ``job.run()`` resumes on S2's topology with the returned states as the
vertex states of a new superstep 0. ``result`` is the vertex's state when the job paused
(``None`` if the vertex was not in the job); ``delta`` is a :class:`VertexDelta`.
Vertices of S1 that are not in S2 leave the job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ShiftFunction", "VertexDelta", "vertex_delta"]


@dataclass(frozen=True)
class VertexDelta:
    """One vertex's change between two snapshots.

    ``old``/``new``: its views in S1 and S2 (``id``, ``type``, ``clock``, ``time``, state
    columns, ``out_edges``), ``None`` where it did not exist. ``added``/``removed``: the
    out-edge targets it gained and lost; ``changed``: the state columns whose value differs.
    ``vertices``: ``(|S1|, |S2|)``, the vertex counts of the two snapshots.
    """

    id: Any
    old: Mapping[str, Any] | None
    new: Mapping[str, Any] | None
    added: frozenset[Any] = field(default_factory=frozenset)
    removed: frozenset[Any] = field(default_factory=frozenset)
    changed: frozenset[str] = field(default_factory=frozenset)
    vertices: tuple[int, int] = (0, 0)

    @property
    def is_new(self) -> bool:
        """The vertex is in S2 only."""
        return self.old is None


ShiftFunction = Callable[[Any, VertexDelta], Any]


def vertex_delta(
    vertex_id: Any,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    vertices: tuple[int, int] = (0, 0),
) -> VertexDelta:
    """The delta between two views of one vertex.

    >>> d = vertex_delta(1, {"id": 1, "deg": 1, "out_edges": {2: {}}},
    ...                  {"id": 1, "deg": 2, "out_edges": {2: {}, 3: {}}})
    >>> sorted(d.added), sorted(d.removed), sorted(d.changed)
    ([3], [], ['deg'])
    """
    old_edges = set(old["out_edges"]) if old else set()
    new_edges = set(new["out_edges"]) if new else set()
    keys = (set(old or ()) | set(new or ())) - {"out_edges", "id"}
    changed = {k for k in keys if (old or {}).get(k) != (new or {}).get(k)}
    return VertexDelta(
        vertex_id,
        old,
        new,
        frozenset(new_edges - old_edges),
        frozenset(old_edges - new_edges),
        frozenset(changed),
        vertices,
    )
