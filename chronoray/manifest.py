"""The graph manifest: ``chronoray.json`` in the log directory, the one record of what a
graph is -- shard count, vertex classes, storage mode and which node holds each shard's
log -- so that a graph can be reopened from its logs or restarted in the cluster.

Format 2 adds ``storage``, ``placement``, ``shard_nodes`` and ``name`` to format 1
(which a graph of format 1 gets as defaults when it is reopened).
"""

from __future__ import annotations

import importlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from vertex.annotations import mark_module_api
from vertex.model import Vertex, VertexTypes

__all__ = ["MANIFEST", "Manifest", "Placement", "Storage", "import_class"]

MANIFEST = "chronoray.json"
_FORMAT = 2

Storage = Literal["local", "shared"]
Placement = Literal["spread", "pack"]


@dataclass
class Manifest:
    """What a graph is. ``shard_nodes[k]`` is the key of the node holding shard ``k``'s
    log (storage ``"local"``) or where it last ran (``"shared"``); see
    :mod:`chronoray.placement`."""

    num_shards: int
    vertex_types: list[str]
    default_vertex: str
    storage: Storage = "local"
    placement: Placement = "spread"
    shard_nodes: list[str] = field(default_factory=list)
    name: str | None = None
    format: int = _FORMAT

    @classmethod
    def of(
        cls,
        num_shards: int,
        types: VertexTypes,
        storage: Storage,
        placement: Placement,
        name: str | None,
    ) -> Manifest:
        """The manifest of a new graph (nodes not yet chosen)."""
        return cls(
            num_shards,
            [f"{c.__module__}:{c.__qualname__}" for c in types.classes],
            types.default_name,
            storage,
            placement,
            [],
            name,
        )

    @classmethod
    def read(cls, log_dir: str | Path) -> Manifest:
        """The manifest in ``log_dir``; ``FileNotFoundError`` naming it if there is none."""
        path = Path(log_dir) / MANIFEST
        if not path.exists():
            raise FileNotFoundError(f"{log_dir} holds no chronoray graph ({MANIFEST} missing)")
        data: dict[str, Any] = json.loads(path.read_text())
        data["format"] = _FORMAT
        return cls(**data)

    @staticmethod
    def exists(log_dir: str | Path) -> bool:
        """Whether ``log_dir`` holds a graph."""
        return (Path(log_dir) / MANIFEST).exists()

    def write(self, log_dir: str | Path) -> None:
        """Write (or replace) the manifest in ``log_dir`` (created if missing)."""
        path = Path(log_dir)
        path.mkdir(parents=True, exist_ok=True)
        tmp = path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(path / MANIFEST)

    def check_shards(self, num_shards: int, log_dir: str | Path) -> None:
        """Refuse to open this graph with another shard count."""
        if num_shards != self.num_shards:
            raise ValueError(
                f"{log_dir} holds a graph of {self.num_shards} shards; "
                f"it cannot be opened with num_shards={num_shards}"
            )

    def types(self, given: list[type[Vertex]] | None = None) -> VertexTypes:
        """The vertex classes: ``given`` ones, else those recorded (imported)."""
        classes = given or [import_class(p) for p in self.vertex_types]
        default = next((c for c in classes if c.type_name == self.default_vertex), None)
        return VertexTypes(classes, default)


def import_class(path: str) -> type[Vertex]:
    """The class recorded as ``module:qualname``."""
    module_name, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f"vertex class {path} recorded in the log directory cannot be imported ({exc}); "
            "pass vertex_types= to GraphCluster.open"
        ) from exc
    return obj  # type: ignore[no-any-return]


mark_module_api(globals())
