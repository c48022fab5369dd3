"""The public API (``import chronoray``) and the developer API under it are marked, and
every class and function the lower layers export carries its mark."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import chronoray
import shards
from vertex.annotations import DEVELOPER, PUBLIC, api_level, mark_module_api

INTERNAL = [
    *(f"chronoray.{m}" for m in (
        "ray_graph", "local_graph", "ingest", "controller", "deploy", "handles", "placement",
        "manifest", "travel", "pipeline", "connect", "protocol", "options", "spark_source",
        "stopped", "config", "errors", "graph", "sources", "tides",
    )),
    *(f"shards.{m.name}" for m in pkgutil.iter_modules(shards.__path__)),
    # the modules defining what ``import chronoray`` exports mark it there, not on first
    # access through ``chronoray`` (which imports lazily): ``from chronoray.graph import
    # GraphCluster`` gives the marked class too
    "ephemeral.computation", "ephemeral.live", "ephemeral.notify",
    *(f"ephemeral.algorithms.{m}" for m in ("bfs", "degree_histogram", "pagerank", "wcc")),
    *(f"snapshot.models.{m}" for m in ("mapreduce", "pregel", "replay", "scatter_gather")),
    "snapshot.snapshot", "snapshot.tasks", "vertex.model", "vertex.records",
]  # fmt: skip
EXPORTED = {id(getattr(chronoray, n)) for n in chronoray.__all__}


def _own(module) -> list[tuple[str, object]]:
    names = getattr(module, "__all__", None)
    assert names is not None, f"{module.__name__} has no __all__"
    return [
        (n, getattr(module, n))
        for n in names
        if (inspect.isclass(getattr(module, n)) or inspect.isfunction(getattr(module, n)))
        and getattr(module, n).__module__ == module.__name__
    ]


def test_everything_chronoray_exports_is_public_api():
    for name in chronoray.__all__:
        obj = getattr(chronoray, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert api_level(obj) == PUBLIC, name
            assert obj.__doc__.endswith("changed only after a deprecation."), name


@pytest.mark.parametrize("name", INTERNAL)
def test_every_name_of_a_lower_layer_is_marked(name):
    module = importlib.import_module(name)
    for attr, obj in _own(module):
        expected = PUBLIC if id(obj) in EXPORTED else DEVELOPER
        assert api_level(obj) == expected, f"{name}.{attr}: {api_level(obj)}, not {expected}"
        if expected == DEVELOPER:
            assert "Developer API" in (obj.__doc__ or ""), f"{name}.{attr}"


def test_a_subclass_does_not_inherit_its_base_mark():
    from shards.logstore import MemoryLogStore

    class Mine(MemoryLogStore):
        """A user's store."""

    assert api_level(MemoryLogStore) == DEVELOPER and api_level(Mine) is None


def test_a_public_name_must_be_listed_in_all():
    namespace = {"__name__": "m", "__all__": ["f"], "f": lambda: None}
    with pytest.raises(ValueError, match="public names not in __all__: \\['g'\\]"):
        mark_module_api(namespace, public=["g"])


def test_marks_leave_runtime_checkable_protocols_alone():
    import chronoray as cr

    class Mine:
        name = "mine"

        def read(self):
            return iter(())

    assert api_level(cr.Source) == PUBLIC and isinstance(Mine(), cr.Source)
