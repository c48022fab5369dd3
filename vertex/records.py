"""Stream update records: what sources feed into the graph.

An :class:`Update` is one change from an external stream. Every update carries the
stream's event time ``ts`` and, once a source has read it, a ``(source, offset)`` id:
the shard that applies it remembers the highest offset it applied per source, so a
resent update (after a crash, or a second ingest of the same file) is applied once.
Offsets must increase within one source.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from vertex.annotations import mark_module_api

__all__ = ["EDGE_KINDS", "VertexId", "UpdateKind", "Update"]

VertexId = int | str
"""A vertex id: an ``int`` or a ``str``. Ids are compared by value and type (``1 != "1"``)."""


class UpdateKind(enum.StrEnum):
    """What an update does. Edge updates are routed to the edge's source (its owner)."""

    ADD_VERTEX = "add_vertex"
    REMOVE_VERTEX = "remove_vertex"
    ADD_EDGE = "add_edge"
    UPDATE_EDGE = "update_edge"
    REMOVE_EDGE = "remove_edge"
    MESSAGE = "message"


EDGE_KINDS: frozenset[UpdateKind] = frozenset(
    (UpdateKind.ADD_EDGE, UpdateKind.UPDATE_EDGE, UpdateKind.REMOVE_EDGE)
)
"""The kinds whose updates name an edge: they need its target ``dst``, the others take none."""


@dataclass(frozen=True, slots=True)
class Update:
    """One graph update from a stream.

    ``vertex`` is the vertex the update is delivered to: for edge updates the edge's
    source (edges are owned by their source vertex), ``dst`` the edge's target.
    ``props`` holds edge properties (e.g. ``{"weight": -3}``), vertex properties for
    ``add_vertex``, or the payload of a user ``message``. ``vertex_type`` names a
    registered vertex class for ``add_vertex`` (``None``: the graph's default class).
    ``source``/``offset`` identify the update for exactly-once application; sources set them.
    """

    kind: UpdateKind
    vertex: VertexId
    ts: float = 0
    dst: VertexId | None = None
    props: Mapping[str, Any] = field(default_factory=dict)
    vertex_type: str | None = None
    source: str = ""
    offset: int = -1

    def __post_init__(self) -> None:
        if not isinstance(self.kind, UpdateKind):
            object.__setattr__(self, "kind", UpdateKind(self.kind))
        _check_id(self.vertex, "vertex")
        _check_time(self.ts)
        if self.kind in EDGE_KINDS:
            _check_id(self.dst, "dst")
        elif self.dst is not None:
            raise ValueError(f"{self.kind.value} update takes no dst, got {self.dst!r}")

    @classmethod
    def add_edge(cls, src: VertexId, dst: VertexId, ts: float = 0, **props: Any) -> Update:
        """An edge occurrence ``src -> dst`` at ``ts`` (a new edge, or one more occurrence)."""
        return cls(UpdateKind.ADD_EDGE, src, ts, dst, props)

    @classmethod
    def update_edge(cls, src: VertexId, dst: VertexId, ts: float = 0, **props: Any) -> Update:
        """Set properties of the existing edge ``src -> dst``."""
        return cls(UpdateKind.UPDATE_EDGE, src, ts, dst, props)

    @classmethod
    def remove_edge(cls, src: VertexId, dst: VertexId, ts: float = 0) -> Update:
        """Remove the edge ``src -> dst``."""
        return cls(UpdateKind.REMOVE_EDGE, src, ts, dst)

    @classmethod
    def add_vertex(
        cls, vertex: VertexId, ts: float = 0, vertex_type: str | None = None, **props: Any
    ) -> Update:
        """Create ``vertex`` (of ``vertex_type``) with initial properties."""
        return cls(UpdateKind.ADD_VERTEX, vertex, ts, None, props, vertex_type)

    @classmethod
    def remove_vertex(cls, vertex: VertexId, ts: float = 0) -> Update:
        """Delete ``vertex`` and its outgoing edges."""
        return cls(UpdateKind.REMOVE_VERTEX, vertex, ts)

    @classmethod
    def message(cls, vertex: VertexId, ts: float = 0, **payload: Any) -> Update:
        """Deliver a user message with ``payload`` to ``vertex``'s ``on_message``."""
        return cls(UpdateKind.MESSAGE, vertex, ts, None, payload)

    def with_origin(self, source: str, offset: int) -> Update:
        """This update stamped with its ``(source, offset)`` id (its other fields were
        checked when it was made: not checked again, as ``dataclasses.replace`` would)."""
        stamped = object.__new__(Update)
        for name in _FIELDS:
            object.__setattr__(stamped, name, getattr(self, name))
        object.__setattr__(stamped, "source", source)
        object.__setattr__(stamped, "offset", offset)
        return stamped


_FIELDS = tuple(f.name for f in fields(Update) if f.name not in ("source", "offset"))


def _check_time(value: object) -> None:
    # a NaN time is in no time cut and compares false with every watermark: such an
    # update would be dropped silently (found by tests/fuzz/test_fuzz_updates.py)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"update time must be an int or a float, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"update time must be finite, got {value!r}")


def _check_id(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{what} id must be an int or a str, got {value!r}")


mark_module_api(globals(), public=("Update", "UpdateKind"))
