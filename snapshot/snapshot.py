"""``Snapshot``: a consistent past graph in the Ray object store, as Arrow tables.

Every shard's part is rebuilt by a Ray task on the node that holds the shard's log,
reading it through a read-only RocksDB handle, so the live graph keeps running
(:func:`snapshot.tasks.build_snapshot`). The tables stay in the object store behind
object refs (one vertex table and one edge table per shard) until a view asks for them. A
graph running in this process (the ``local`` runtime) or stopped builds the same tables
here (:func:`build_local_snapshot`); this module imports Ray only to read a snapshot whose
parts are object refs, so that path never loads it.

A snapshot never changes: a clock cut is a fixed prefix of every log, and a time cut is
only built once every update with an earlier time has been logged (the driver waits for
that), after which new entries only carry later times. Every part's tables have the
columns and types of the graph's schema (the union of the shards' logged schemas), so
snapshots of any times -- an empty one before the first event included -- read together.

A part whose tables were lost with the node that held them (Ray cannot re-run its task
there) is built again when read, from the shard's log wherever the shard runs now (logs
on shared storage): the same prefix of the log (the part's recorded bound), checked
against the part's recorded size. A part that cannot be built the same again raises
:class:`SnapshotLost`, naming the shard, the node it was lost with, and how to take the
snapshot again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa
import pyarrow.parquet as pq

from shards.codec import Schema
from shards.logstore import LogStore
from shards.replay import read_schema
from snapshot.reconstruct import consistent_bound, part_columns, part_rows, rebuild_part
from snapshot.tables import column_tables, empty_edges, empty_vertices, snapshot_tables
from vertex.annotations import mark_module_api

__all__ = [
    "Snapshot",
    "SnapshotLost",
    "SnapshotMeta",
    "assemble_snapshot",
    "build_local_snapshot",
    "part_tables",
]

if TYPE_CHECKING:
    import ray


class SnapshotLost(RuntimeError):
    """A snapshot's part was lost with its node and could not be built the same again."""


@dataclass
class SnapshotMeta:
    """What a snapshot is: its cut, its size, what building it cost."""

    kind: str  # "time", "clock", "now" or "window"
    at: float | None = None
    window: tuple[float, float] | None = None
    clock: list[int] | None = None  # the requested (or observed) clock vector
    cut: list[int] = field(default_factory=list)  # per shard: highest worker clock included
    vertices: int = 0
    edges: int = 0
    replayed: int = 0  # log entries replayed, all shards
    checkpoints: list[int] = field(default_factory=list)  # shard checkpoint used per shard
    part_vertices: list[int] = field(default_factory=list)  # rows per shard
    part_edges: list[int] = field(default_factory=list)
    build_seconds: float = 0.0
    shard_seconds: list[float] = field(default_factory=list)
    part_nodes: list[str] = field(default_factory=list)  # the Ray node each part was built on

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


Part: TypeAlias = "ray.ObjectRef[Any] | pa.Table"
"""One shard's table: behind an object ref (built by a Ray task), or here."""

Rebuild = Callable[[int, int], tuple["Part", "Part", dict[str, Any], str]]
"""``rebuild(shard, bound)``: that shard's part of the same cut built again from its log
where the shard runs now, as ``(vertices, edges, stats, node)``."""


class Snapshot:
    """A consistent past graph: per-shard Arrow tables, behind Ray object refs or in this
    process."""

    def __init__(
        self,
        vertex_refs: list[Part],
        edge_refs: list[Part],
        meta: SnapshotMeta,
        rebuild: Rebuild | None = None,
    ) -> None:
        self.vertex_refs = vertex_refs
        self.edge_refs = edge_refs
        self.meta = meta
        self.rebuild = rebuild
        """Builds a lost part again (set by the runtime; not pickled with the snapshot)."""

    def __getstate__(self) -> dict[str, Any]:
        return dict(vars(self), rebuild=None)  # the runtime's callable stays in this process

    def __repr__(self) -> str:
        m = self.meta
        when = m.at if m.kind == "time" else m.window if m.kind == "window" else m.cut
        return f"Snapshot({m.kind} {when}: {m.vertices:,} vertices, {m.edges:,} edges)"

    def vertices(self) -> pa.Table:
        """All vertices: ``id``, ``type``, ``clock``, ``time`` and state columns."""
        return _concat(self._parts("vertex_refs"), empty_vertices)

    def edges(self) -> pa.Table:
        """All edges: ``src``, ``dst`` and property columns (``window_*`` for a window)."""
        return _concat(self._parts("edge_refs"), empty_edges)

    def to_pandas(self) -> tuple[Any, Any]:
        """``(vertices, edges)`` as pandas DataFrames."""
        return self.vertices().to_pandas(), self.edges().to_pandas()

    def to_ray_dataset(self) -> tuple[Any, Any]:
        """``(vertices, edges)`` as Ray datasets built straight from the object refs (or
        from the tables of a snapshot built in this process). The tables stay in the
        object store: call :meth:`restore` first after a node was lost."""
        return _dataset(self.vertex_refs), _dataset(self.edge_refs)

    def restore(self) -> list[int]:
        """Build again every part whose tables were lost with their node (reading a
        snapshot's tables does this by itself); returns those shards.
        :class:`SnapshotLost` if one cannot be built the same again."""
        lost = [k for k in range(len(self.vertex_refs)) if self._lost(k)]
        for shard in lost:
            self._rebuild(shard)
        return lost

    def _parts(self, which: str) -> list[pa.Table]:
        try:
            return _tables(getattr(self, which))
        except _lost_errors():  # evaluated only when something raised
            self.restore()
            return _tables(getattr(self, which))

    def _lost(self, shard: int) -> bool:
        refs = [p for p in (self.vertex_refs[shard], self.edge_refs[shard]) if _is_ref(p)]
        if not refs:
            return False
        try:
            _tables(refs)
        except _lost_errors():
            return True
        return False

    def _rebuild(self, shard: int) -> None:
        """Shard ``shard``'s part again, checked to be the same as the one lost."""
        m = self.meta
        node = m.part_nodes[shard] if shard < len(m.part_nodes) else "?"
        what = f"snapshot part of shard {shard} (built on node {node[:12]}, lost with it)"
        again = f"take the snapshot again ({_how_to_take(m)})"
        if self.rebuild is None:
            raise SnapshotLost(f"{what} cannot be built again here: {again}")
        try:
            vertices, edges, stats, built_on = self.rebuild(shard, m.cut[shard])
            got = (stats["bound"], stats["vertices"], stats["edges"])
            want = (m.cut[shard], m.part_vertices[shard], m.part_edges[shard])
            if got != want:
                raise SnapshotLost(
                    f"{what}: its log now gives (last clock, vertices, edges) {got}, not "
                    f"{want}: {again}"
                )
            _tables([p for p in (vertices, edges) if _is_ref(p)])
        except SnapshotLost:
            raise
        except Exception as exc:
            raise SnapshotLost(
                f"{what} could not be built again from its log ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}): {again}"
            ) from exc
        self.vertex_refs[shard], self.edge_refs[shard] = vertices, edges
        if shard < len(m.part_nodes):
            m.part_nodes[shard] = built_on

    def to_networkx(self) -> Any:
        """A ``networkx.DiGraph`` with vertex and edge attributes."""
        import networkx as nx

        graph = nx.DiGraph()
        for row in self.vertices().to_pylist():
            graph.add_node(row.pop("id"), **row)
        for row in self.edges().to_pylist():
            graph.add_edge(row.pop("src"), row.pop("dst"), **row)
        return graph

    def save_parquet(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``vertices.parquet`` and ``edges.parquet`` into ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = out / "vertices.parquet", out / "edges.parquet"
        pq.write_table(self.vertices(), paths[0])
        pq.write_table(self.edges(), paths[1])
        return paths


def _is_ref(part: Part) -> bool:
    return not isinstance(part, pa.Table)  # a part is a table or an object ref


def _lost_errors() -> tuple[type[Exception], ...]:
    """What reading a part lost with its node raises (asked once reading parts raised:
    with refs in hand, Ray is imported by then)."""
    from ray.exceptions import ObjectLostError, TaskUnschedulableError

    return (TaskUnschedulableError, ObjectLostError)


def _how_to_take(meta: SnapshotMeta) -> str:
    if meta.kind == "time":
        return f"graph.snapshot(at={meta.at!r})"
    if meta.kind == "window":
        return f"graph.snapshot(window={meta.window!r})"
    return f"graph.snapshot(clock={meta.cut!r})"


def _tables(parts: list[Part]) -> list[pa.Table]:
    """The tables of ``parts`` (fetched from the object store if some are refs)."""
    if not any(_is_ref(p) for p in parts):
        return list(parts)
    import ray

    return ray.get(list(parts))


def _dataset(parts: list[Part]) -> Any:
    import ray

    if parts and all(isinstance(p, pa.Table) for p in parts):
        return ray.data.from_arrow(list(parts))
    return ray.data.from_arrow_refs(parts)  # type: ignore[arg-type]  # Ray types refs twice


def _concat(tables: list[pa.Table], empty: Callable[[], pa.Table]) -> pa.Table:
    """The parts as one table; ``empty()`` where there is none (made only then: an empty
    table is built by pandas, which a process reading parts need not import)."""
    if not tables:
        return empty()
    return pa.concat_tables(tables)  # the parts share one schema


def part_tables(
    store: LogStore,
    shard: int,
    schema: Schema,
    clock: tuple[int, ...] | None,
    at: float | None,
    since: float | None,
    bound: int | None = None,
) -> tuple[pa.Table, pa.Table, dict[str, Any]]:
    """One shard's tables at the cut (``bound``: a worker clock found for it before,
    instead of the one ``clock`` gives), and what building them took."""
    if bound is None and clock is not None:
        bound = consistent_bound(store, shard, clock)
    part = rebuild_part(store, shard, bound=bound, at=at, since=since)
    windowed = since is not None
    columns = part_columns(part, schema)
    if columns is None:  # values the schema does not type: typed row by row
        vertices, edges = snapshot_tables(*part_rows(part), schema, windowed=windowed)
    else:
        vertices, edges = column_tables(*columns, schema, windowed=windowed)
    stats = {
        "bound": part.bound,
        "replayed": part.replayed,
        "checkpoint": part.checkpoint,
        "seconds": part.seconds,
        "vertices": vertices.num_rows,
        "edges": edges.num_rows,
    }
    return vertices, edges, stats


def assemble_snapshot(
    meta: SnapshotMeta,
    vertices: list[Part],
    edges: list[Part],
    stats: list[dict[str, Any]],
    started: float,
) -> Snapshot:
    """The snapshot of the parts built (each part's ``stats`` as :func:`part_tables`
    gives them), ``meta`` filled in with the cut and sizes they give and the seconds since
    ``started``."""
    meta.cut = [s["bound"] for s in stats]
    meta.part_vertices = [s["vertices"] for s in stats]
    meta.part_edges = [s["edges"] for s in stats]
    meta.vertices = sum(meta.part_vertices)
    meta.edges = sum(meta.part_edges)
    meta.replayed = sum(s["replayed"] for s in stats)
    meta.checkpoints = [s["checkpoint"] for s in stats]
    meta.shard_seconds = [s["seconds"] for s in stats]
    meta.build_seconds = time.perf_counter() - started
    return Snapshot(vertices, edges, meta)


def build_local_snapshot(
    stores: list[LogStore],
    meta: SnapshotMeta,
    *,
    clock: tuple[int, ...] | None = None,
    at: float | None = None,
    since: float | None = None,
) -> Snapshot:
    """Rebuild every shard's part in this process from ``stores`` (a graph running here),
    all with the graph's schema."""
    started = time.perf_counter()
    schema = Schema.empty()
    for store in stores:
        schema = schema.merge(read_schema(store))
    parts = [part_tables(store, k, schema, clock, at, since) for k, store in enumerate(stores)]
    return assemble_snapshot(
        meta, [v for v, _, _ in parts], [e for _, e, _ in parts], [s for _, _, s in parts], started
    )


mark_module_api(globals(), public=("Snapshot", "SnapshotLost", "SnapshotMeta"))
