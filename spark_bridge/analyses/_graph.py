"""What every analysis starts from: a snapshot's vertex ids and its distinct (src, dst) pairs
as Spark DataFrames; how iterative analyses size their partitions from the data; and the
numpy blocks they build from a partition's columns (:class:`ArrayGraph`: from a snapshot's
parts in the object store, or from a DataFrame's Arrow batches)."""

from __future__ import annotations

import contextlib
import pickle
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = [
    "ROWS_PER_PARTITION",
    "ArrayGraph",
    "array_graph",
    "arrow_on",
    "graph_frames",
    "partition_blocks",
    "partitions_for",
    "sorted_ids",
    "vertex_frame",
]

ROWS_PER_PARTITION = 1_000_000
"""Rows of a cached graph table per partition: a task's work must outweigh its ~10 ms of
scheduling, and one partition per core is the most that runs at once."""


def partitions_for(spark: Any, rows: int) -> int:
    """Partitions for a cached table of ``rows`` rows: one per ``ROWS_PER_PARTITION``
    rows, at least 1, at most the cores of the executors (``defaultParallelism``)."""
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    return max(1, min(cores, -(-rows // ROWS_PER_PARTITION)))


def graph_frames(spark: Any, graph: Any) -> tuple[DataFrame, DataFrame]:
    """``(vertices, edges)``: ``vertices`` has one column ``vertex`` (every vertex of the
    snapshot and every edge endpoint), ``edges`` the snapshot's edge table.

    ``graph`` is a :class:`~snapshot.Snapshot` or a pair of Spark DataFrames
    ``(vertices with an id column, edges with src and dst)``.
    """
    if isinstance(graph, tuple):
        vertex_frame, edges = graph
    else:
        from spark_bridge.convert import snapshot_to_spark

        vertex_frame, edges = snapshot_to_spark(spark, graph)
    # in a time cut a target can be logged just after the edge that names it (DESIGN §3):
    # the edge endpoints belong to the graph either way, as in networkx
    vertices = (
        vertex_frame.select(F.col("id").alias("vertex"))
        .union(edges.select(F.col("src").alias("vertex")))
        .union(edges.select(F.col("dst").alias("vertex")))
        .distinct()
    )
    return vertices, edges


@contextlib.contextmanager
def arrow_on(spark: Any) -> Iterator[None]:
    """Within the block, pandas <-> Spark conversions go through Arrow (columns, not a
    Python object per row); the session's own setting comes back after it."""
    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key, "false")
    spark.conf.set(key, "true")
    try:
        with warnings.catch_warnings():  # pyspark 3.5's own use of deprecated pandas APIs
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        spark.conf.set(key, before)


def sorted_ids(spark: Any, vertices: DataFrame) -> np.ndarray:
    """The ``vertex`` column of ``vertices`` (distinct values) as a sorted numpy array:
    position ``i`` is the dense index of a vertex in the array analyses."""
    with arrow_on(spark):
        ids = vertices.select("vertex").toPandas()["vertex"].to_numpy()
    return np.sort(ids)


@dataclass(frozen=True)
class ArrayGraph:
    """A graph as the array analyses see it: its vertex ids, sorted (position ``i`` is the
    dense index of a vertex), and its edge rows, read in shares by Spark tasks.

    From a snapshot (:func:`array_graph`), the ids come from the parts' Arrow tables on
    the driver (no Spark job) and the tasks read their shares of the parts from the
    object store (:func:`~spark_bridge.convert.snapshot_columns`); from DataFrames, the
    ids are one distinct job and the shares the frame's partitions."""

    spark: Any
    graph: Any  # a Snapshot, or (vertices, edges) DataFrames
    ids: np.ndarray
    edge_columns: frozenset[str] | None  # a snapshot's (checked here); None for frames

    def edge_rows(self) -> int:
        """Edge rows of the graph: a snapshot's metadata says it, a DataFrame is counted."""
        if isinstance(self.graph, tuple):
            return int(self.graph[1].count())
        return int(self.graph.meta.edges)

    @contextlib.contextmanager
    def blocks(
        self,
        columns: dict[str, str | None],
        build: Callable[[dict[str, np.ndarray]], Any],
        partitions: int,
    ) -> Iterator[Any]:
        """A context of an RDD with one element per partition: ``build`` of that share of
        the edge rows, as ``{name: numpy array}`` (``columns``: name -> edge column, or
        ``None`` for ones). Every edge row is in exactly one share; a share may be empty.
        Raises ``ValueError`` naming a column the edges do not have."""
        if self.edge_columns is not None:
            missing = sorted({c for c in columns.values() if c} - self.edge_columns)
            if missing:
                raise ValueError(
                    f"edge column {missing[0]!r} is not in the snapshot's edges "
                    f"(columns: {', '.join(sorted(self.edge_columns))})"
                )
            from spark_bridge.convert import snapshot_columns

            with snapshot_columns(self.spark, self.graph, columns, partitions) as shares:
                yield shares.map(build)
            return
        edges = self.graph[1]
        rows = edges.select(*(F.col(c) if c else F.lit(1.0) for c in columns.values()))
        rows = rows.toDF(*columns)
        current = int(rows.rdd.getNumPartitions())  # any split will do: no shuffle if fewer
        rows = rows.coalesce(partitions) if partitions <= current else rows.repartition(partitions)
        yield partition_blocks(rows, list(columns), build)


def array_graph(spark: Any, graph: Any) -> ArrayGraph:
    """``graph`` (a :class:`~snapshot.Snapshot` or ``(vertices, edges)`` DataFrames) for
    the array analyses; every vertex of the snapshot and every edge endpoint is a vertex,
    as in :func:`graph_frames`."""
    if isinstance(graph, tuple):
        vertices, _ = graph_frames(spark, graph)
        return ArrayGraph(spark, graph, sorted_ids(spark, vertices), None)
    from spark_bridge.convert import snapshot_tables

    vertex_parts = snapshot_tables(graph, "vertex_refs")
    edge_parts = snapshot_tables(graph, "edge_refs")
    ids = [t["id"].to_numpy() for t in vertex_parts]
    ids += [t[c].to_numpy() for t in edge_parts for c in ("src", "dst")]
    found = np.unique(np.concatenate(ids)) if ids else np.empty(0, np.int64)
    names = [frozenset(t.column_names) for t in edge_parts]  # in every part: a task reads any
    return ArrayGraph(spark, graph, found, frozenset.intersection(*names) if names else _FIXED)


_FIXED = frozenset({"src", "dst"})


def partition_blocks(
    frame: DataFrame, columns: list[str], build: Callable[[dict[str, np.ndarray]], Any]
) -> Any:
    """An RDD with one element per partition of ``frame``: ``build`` of that partition's
    ``columns`` as numpy arrays (empty arrays for an empty partition).

    The rows reach Python as Arrow batches (``mapInArrow``) and ``build`` sees whole
    columns, so no Python runs per row; its result crosses back pickled, once."""

    def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts = list(batches)
        arrays = {
            name: (
                np.concatenate([b.column(name).to_numpy(zero_copy_only=False) for b in parts])
                if parts
                else np.empty(0)
            )
            for name in columns
        }
        yield pa.RecordBatch.from_pydict({"block": [pickle.dumps(build(arrays), protocol=5)]})

    packed = frame.select(*columns).mapInArrow(pack, "block binary")
    return packed.rdd.map(lambda row: pickle.loads(row[0]))


def vertex_frame(spark: Any, ids: np.ndarray, name: str, values: np.ndarray) -> DataFrame:
    """A DataFrame ``(vertex, name)`` from two numpy arrays, built through Arrow."""
    import pandas as pd

    with arrow_on(spark):
        return spark.createDataFrame(pd.DataFrame({"vertex": ids, name: values}))
