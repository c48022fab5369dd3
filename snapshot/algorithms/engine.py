"""Which implementation of a built-in algorithm runs: the choice by size, stated.

Every algorithm of :mod:`snapshot.algorithms` has one public name and several
implementations, as networkx's backends have: a **vectorized kernel** in this process
(``engine="local"``: scipy.sparse/numpy over the snapshot's Arrow columns) and a
**processing model** on Ray actors (``engine="ray"``: Pregel or scatter/gather over the
snapshot's partitions); :mod:`chronoray.analysis` adds Spark. ``engine="auto"`` picks by
the snapshot's size (read from its metadata, nothing fetched): the kernel while the graph
fits this process comfortably -- it is the fastest below that size on every graph
measured (``bench/results/analyses.md``, the crossover curve) -- and the Ray model above
it, where the partitions spread the memory over the cluster. The choice and its reason go
into the result's ``info`` (``engine``, ``engine_reason``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from snapshot.algorithms.csr import graph_size

__all__ = ["LOCAL_MAX_EDGES", "Engine", "EngineChoice", "choose_engine"]

Engine = Literal["auto", "local", "ray"]

LOCAL_MAX_EDGES = 50_000_000
"""Above this many edge rows ``auto`` leaves the driver: a kernel holds about 40 bytes per
edge (ids, index arrays, one sparse matrix), ~2 GB at this size."""


@dataclass(frozen=True)
class EngineChoice:
    """The engine an algorithm runs on, and why (one sentence)."""

    engine: str
    reason: str

    def info(self) -> dict[str, str]:
        """The ``info`` entries of a result."""
        return {"engine": self.engine, "engine_reason": self.reason}

    def executor(self, executor: str) -> Any:
        """Where a processing model runs: the ``executor`` asked for, except that
        ``"auto"`` means Ray once the engine is ``"ray"`` (tables included)."""
        return "ray" if self.engine == "ray" and executor == "auto" else executor


def choose_engine(graph: Any, engine: str, *, model: str | None = None) -> EngineChoice:
    """The engine for ``graph`` (a snapshot or a pair of tables): ``engine`` if given,
    the processing model if ``model`` is given, else by size.

    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1]}), pa.table({"src": [1], "dst": [1]}))
    >>> choose_engine(graph, "auto").engine, choose_engine(graph, "auto", model="pregel").engine
    ('local', 'model')
    """
    if engine not in ("auto", "local", "ray"):
        raise ValueError(f"engine must be 'auto', 'local' or 'ray', got {engine!r}")
    if engine == "local":
        if model is not None:
            raise ValueError(f"engine='local' runs the kernel; model={model!r} needs engine 'ray'")
        return EngineChoice("local", "asked for (engine='local')")
    if engine == "ray":
        return EngineChoice("ray", "asked for (engine='ray')")
    if model is not None:  # where it runs is the executor's choice (Ray for a snapshot)
        return EngineChoice("model", f"a processing model was asked for (model={model!r})")
    vertices, edges = graph_size(graph)
    if edges <= LOCAL_MAX_EDGES:
        return EngineChoice(
            "local",
            f"{edges:,} edges <= {LOCAL_MAX_EDGES:,}: the vectorized kernel in this process "
            "is fastest at this size",
        )
    return EngineChoice(
        "ray",
        f"{edges:,} edges > {LOCAL_MAX_EDGES:,}: too large for one process, partitioned "
        "over Ray actors",
    )
