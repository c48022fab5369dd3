"""Snapshots to Spark DataFrames and Spark results back to Ray, without files.

A snapshot's per-shard Arrow tables are already in the Ray object store; they become a
Ray dataset (``from_arrow_refs``) and then a Spark DataFrame (``to_spark``), which RayDP
feeds to its executors through the object store. Results return through
``ray.data.from_spark``.
"""

from __future__ import annotations

import warnings
from typing import Any

import pyarrow as pa
import ray

from snapshot.snapshot import Snapshot

__all__ = ["snapshot_to_spark", "to_ray_dataset", "to_arrow", "to_pandas"]

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
