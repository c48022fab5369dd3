"""Named state predicates for subscriptions over the network.

A client cannot send a function, so a subscription names its predicate: one registered
here, ``predicate(old_state, new_state) -> bool`` as ``GraphCluster.subscribe`` takes it
(either state may be ``None``: the update created or deleted the vertex). Register your own
with :func:`register_predicate` in the process that runs the gateway, before it serves.

>>> PREDICATES["created"](None, {"a": 1}), PREDICATES["changed"]({"a": 1}, {"a": 1})
(True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ephemeral.notify import StatePredicate

__all__ = ["PREDICATES", "register_predicate"]

State = Mapping[str, Any] | None


def _created(old: State, new: State) -> bool:
    return old is None and new is not None


def _deleted(old: State, new: State) -> bool:
    return old is not None and new is None


def _changed(old: State, new: State) -> bool:
    return old != new


PREDICATES: dict[str, StatePredicate] = {}
"""Predicate name -> ``predicate(old_state, new_state)``."""


def register_predicate(name: str, predicate: StatePredicate) -> None:
    """Make ``predicate`` available to subscriptions as ``name`` (registered once)."""
    if not name or name in PREDICATES:
        raise ValueError(f"predicate name {name!r} is empty or registered already")
    PREDICATES[name] = predicate


register_predicate("created", _created)  # the update created the vertex
register_predicate("deleted", _deleted)  # the update deleted it
register_predicate("changed", _changed)  # its state is different afterwards
