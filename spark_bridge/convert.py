"""Snapshots to Spark DataFrames and Spark results back to Ray, without files.

A snapshot's per-shard Arrow tables are already in the Ray object store; they become a
Ray dataset (``from_arrow_refs``) and then a Spark DataFrame (``to_spark``), which RayDP
feeds to its executors through the object store. Results return through
``ray.data.from_spark``.

The array analyses (PageRank, WCC) need neither: :func:`snapshot_columns` gives Spark an
RDD whose tasks read a share of the edge parts' columns straight from the object store
as numpy arrays (no DataFrame, no conversion pass through the JVM), and the driver takes
what it needs (the vertex ids) from the same Arrow tables (:func:`snapshot_tables`).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import ray
from ray.exceptions import ObjectLostError

from snapshot.snapshot import Snapshot

__all__ = [
    "snapshot_columns",
    "snapshot_tables",
    "snapshot_to_spark",
    "to_arrow",
    "to_pandas",
    "to_ray_dataset",
]

# RayDP (to_spark and from_spark) reads a pyspark property deprecated in 3.5: not ours to fix
warnings.filterwarnings("ignore", message="DataFrame.sql_ctx", category=UserWarning)


def snapshot_to_spark(spark: Any, snapshot: Snapshot) -> tuple[Any, Any]:
    """``(vertices, edges)`` of ``snapshot`` as Spark DataFrames (no file round trip)."""
    return (
        _frame(spark, snapshot.vertex_refs, snapshot.meta.part_vertices),
        _frame(spark, snapshot.edge_refs, snapshot.meta.part_edges),
    )


def _frame(spark: Any, refs: list[ray.ObjectRef], sizes: list[int]) -> Any:
    # empty parts carry only the fixed columns; leave them out so the schemas agree
    kept = [ref for ref, size in zip(refs, sizes, strict=True) if size] or refs[:1]
    return ray.data.from_arrow_refs(kept).to_spark(spark)


def snapshot_tables(snapshot: Snapshot, which: str = "edge_refs") -> list[pa.Table]:
    """The snapshot's non-empty parts of ``which`` (``"vertex_refs"`` or ``"edge_refs"``)
    as Arrow tables in this process (zero-copy from the local object store); lost parts
    are built again first (:meth:`~snapshot.Snapshot.restore`)."""
    sizes = snapshot.meta.part_vertices if which == "vertex_refs" else snapshot.meta.part_edges
    try:
        return _fetch(getattr(snapshot, which), sizes)
    except ObjectLostError:
        snapshot.restore()
        return _fetch(getattr(snapshot, which), sizes)


def _fetch(parts: list[Any], sizes: list[int]) -> list[pa.Table]:
    kept = [part for part, size in zip(parts, sizes, strict=True) if size]
    refs = [part for part in kept if isinstance(part, ray.ObjectRef)]
    got = iter(ray.get(refs)) if refs else iter(())
    return [next(got) if isinstance(part, ray.ObjectRef) else part for part in kept]


@contextlib.contextmanager
def snapshot_columns(
    spark: Any, snapshot: Snapshot, columns: dict[str, str | None], partitions: int
) -> Iterator[Any]:
    """A context of one RDD of ``partitions`` elements: element ``k`` is share ``k`` of
    every edge row of ``snapshot`` (rows ``[n k / P, n (k + 1) / P)`` of each part) as
    ``{name: numpy array}``, ``columns`` mapping a name to an edge column (``None``: ones).

    Spark's tasks read the parts from the object store themselves: the part refs wait in
    a small Ray actor of this process (:class:`_PartHolder`) that hands them to the
    executors' Python (in band, so Ray counts the executors as borrowers) until the
    context ends; the RDD's jobs must run inside it. Each share is read where its task
    runs: nothing goes through the driver or the JVM but the partition numbers, and
    there is no DataFrame to convert."""
    sizes = snapshot.meta.part_edges
    parts = [p for p, size in zip(snapshot.edge_refs, sizes, strict=True) if size]
    holder, key = _holder(), uuid.uuid4().hex
    ray.get(holder.hold.remote(key, parts))  # refs inside a list stay refs
    context = ray.get_runtime_context()
    place = (context.gcs_address, context.namespace, _holder_name(), key)
    read = _share_reader(place, columns, partitions)
    try:
        yield spark.sparkContext.parallelize(range(partitions), partitions).map(read)
    finally:
        holder.drop.remote(key)


@ray.remote(num_cpus=0)
class _PartHolder:
    """Snapshot part refs by key, for the Spark tasks that read them."""

    def __init__(self) -> None:
        self._parts: dict[str, list[Any]] = {}

    def hold(self, key: str, parts: list[Any]) -> None:
        self._parts[key] = parts

    def parts(self, key: str) -> list[Any]:
        return self._parts[key]

    def drop(self, key: str) -> None:
        self._parts.pop(key, None)


def _holder_name() -> str:
    return f"chronoray_spark_parts_{ray.get_runtime_context().get_job_id()}"


_holders: dict[str, Any] = {}


def _holder() -> Any:
    """This driver's part holder, started on first use and kept: Ray ends an actor (named
    or not) when its creator's handles are gone, and with the driver's job."""
    name = _holder_name()
    where = f"{ray.get_runtime_context().gcs_address} {name}"
    if where not in _holders:
        _holders.clear()  # an earlier Ray instance's, if any
        _holders[where] = _PartHolder.options(name=name).remote()
    return _holders[where]


def _share_reader(
    place: tuple[str, str, str, str], columns: dict[str, str | None], partitions: int
) -> Any:
    address, namespace, name, key = place

    def read(k: int) -> dict[str, np.ndarray]:
        if not ray.is_initialized():  # an executor's Python worker, first task
            # the driver's namespace, as RayDP's own reader (to_spark) in this worker expects
            ray.init(
                address=address,
                namespace=namespace,
                logging_level=logging.WARNING,
                log_to_driver=False,
            )
        parts = ray.get(ray.get_actor(name, namespace=namespace).parts.remote(key))
        refs = [p for p in parts if isinstance(p, ray.ObjectRef)]
        tables = (ray.get(refs) if refs else []) + [p for p in parts if isinstance(p, pa.Table)]
        return _share(tables, k, partitions, columns)

    return read


def _share(
    tables: list[pa.Table], k: int, partitions: int, columns: dict[str, str | None]
) -> dict[str, np.ndarray]:
    """Rows ``[n k / P, n (k + 1) / P)`` of every table, as numpy columns."""
    pieces: dict[str, list[np.ndarray]] = {name: [] for name in columns}
    for table in tables:
        start, stop = table.num_rows * k // partitions, table.num_rows * (k + 1) // partitions
        rows = table.slice(start, stop - start)
        for name, column in columns.items():
            pieces[name].append(
                np.ones(rows.num_rows) if column is None else rows[column].to_numpy()
            )
    return {name: np.concatenate(a) if a else np.empty(0) for name, a in pieces.items()}


def to_ray_dataset(frame: Any) -> Any:
    """A Spark DataFrame as a Ray dataset."""
    return ray.data.from_spark(frame)


def to_arrow(frame: Any) -> pa.Table:
    """A Spark DataFrame as one Arrow table (through the Ray object store)."""
    refs = to_ray_dataset(frame).to_arrow_refs()
    tables = [t for t in ray.get(refs) if t.num_rows]
    return pa.concat_tables(tables) if tables else ray.get(refs[0])


def to_pandas(frame: Any) -> Any:
    """A Spark DataFrame as a pandas DataFrame (through the Ray object store), with the
    dtypes Arrow's own conversion gives (numpy ones, as for a local analysis' table)."""
    return to_arrow(frame).to_pandas()
