"""API stability markers, in the manner of Ray's ``PublicAPI`` and ``DeveloperAPI``.

chronoray's public API is what ``import chronoray`` exports (its ``__all__``, plus the
``vertex`` model it re-exports): it changes only with a deprecation first. The layers
under it -- ``shards.*``, and ``chronoray``'s runtime modules (``ray_graph``,
``local_graph``, ``ingest``, ``controller``, ``deploy``, ``handles`` ...) -- are a
developer API: importable, documented and typed, but free to change between versions.

Each of those modules ends with ``mark_module_api(globals())``: every class and function
of its ``__all__`` is then marked, readable by :func:`api_level` and stated at the end of
its docstring (what ``help()`` and the API docs show). A name a module defines that the
public API re-exports is named in ``public=``. This module sits at the bottom of the
package graph so that every layer can mark itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, Literal

__all__ = ["DEVELOPER", "PUBLIC", "ApiLevel", "api_level", "mark_module_api"]

ApiLevel = Literal["public", "developer"]
PUBLIC: ApiLevel = "public"
DEVELOPER: ApiLevel = "developer"

_LEVELS: dict[object, ApiLevel] = {}
_NOTES: dict[ApiLevel, str] = {
    PUBLIC: "Public API: exported by ``import chronoray``; changed only after a deprecation.",
    DEVELOPER: (
        "Developer API: an internal layer of chronoray; it may change between versions "
        "without a deprecation (use what ``import chronoray`` exports)."
    ),
}


def api_level(obj: object) -> ApiLevel | None:
    """``"public"``, ``"developer"`` or None (not marked) for a class or function (a
    subclass does not inherit its base's mark).

    >>> from shards.clocks import VectorClock
    >>> api_level(VectorClock)
    'developer'
    """
    try:
        return _LEVELS.get(obj)
    except TypeError:  # not hashable: not a class or function
        return None


def _mark(obj: Any, level: ApiLevel) -> None:
    if api_level(obj) == level:
        return
    # kept here, not as an attribute: a class attribute would become a member that
    # isinstance() checks of a runtime-checkable Protocol (cr.Source, cr.Graph) require
    _LEVELS[obj] = level
    doc = inspect.cleandoc(obj.__doc__ or "")
    for note in _NOTES.values():
        doc = doc.replace(f"\n\n{note}", "").replace(note, "")
    obj.__doc__ = f"{doc}\n\n{_NOTES[level]}" if doc else _NOTES[level]


def _markable(obj: object, module: str) -> bool:
    return (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == module


def mark_module_api(namespace: dict[str, Any], public: Iterable[str] = ()) -> None:
    """Mark every class and function that the module of ``namespace`` (its
    ``globals()``) defines and lists in ``__all__``: a developer API, except the names in
    ``public`` (the public API re-exports them). Called once, at the module's end."""
    module = namespace["__name__"]
    public = set(public)
    unknown = public - set(namespace.get("__all__", ()))
    if unknown:
        raise ValueError(f"{module}: public names not in __all__: {sorted(unknown)}")
    for name in namespace.get("__all__", ()):
        obj = namespace[name]
        if _markable(obj, module):
            _mark(obj, PUBLIC if name in public else DEVELOPER)
