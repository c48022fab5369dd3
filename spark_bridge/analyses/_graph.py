"""What every analysis starts from: a snapshot's vertex ids and its distinct (src, dst) pairs
as Spark DataFrames; how iterative analyses size their partitions from the data; and the
numpy blocks they build from a partition's Arrow batches."""

from __future__ import annotations

import contextlib
import pickle
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = [
    "ROWS_PER_PARTITION",
    "arrow_on",
    "edge_rows",
    "graph_frames",
    "partition_blocks",
    "partitions_for",
    "sorted_ids",
    "vertex_frame",
]

ROWS_PER_PARTITION = 1_000_000
"""Rows of a cached graph table per partition: a task's work must outweigh its ~10 ms of
scheduling, and one partition per core is the most that runs at once."""

def edge_rows(graph: Any, edges: DataFrame) -> int:
    """Edge rows of ``graph``: a snapshot's metadata says it, a DataFrame is counted."""
    return int(edges.count()) if isinstance(graph, tuple) else int(graph.meta.edges)


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
