"""Offline processing models on snapshots (thesis 9.4-9.5, X-Stream).

Each runs in parallel over a snapshot's Arrow data -- one Ray actor per partition, or in
this process for tables -- and never touches the live graph:

* :func:`pregel` / :class:`PregelJob`: vertex-centric supersteps, with a per-vertex
  program (:class:`PregelProgram`, pause/shift/resume) or an array program
  (:class:`PregelArrays`: one call per partition and superstep);
* :func:`scatter_gather`: edge-centric streaming partitions;
* :func:`mapreduce` over vertices or edges, :func:`temporal_mapreduce` over two snapshots;
* :func:`replay`: a fold over vertices' logged histories between two times;
* pause/shift/resume: :meth:`PregelJob.shift` with a shift function (:mod:`.shift`).
"""

from snapshot.models.mapreduce import (
    MapReduceResult,
    mapreduce,
    mapreduce_series,
    snapshots_at,
    temporal_mapreduce,
    temporal_series,
)
from snapshot.models.partition import GraphPartition, partitions_of
from snapshot.models.pregel import Aggregator, PregelContext, PregelJob, PregelProgram, pregel
from snapshot.models.pregel_arrays import PregelArrays, VertexBatch, VertexTable
from snapshot.models.replay import replay
from snapshot.models.result import ModelResult
from snapshot.models.scatter_gather import EdgeChunk, EdgeProgram, VertexBlock, scatter_gather
from snapshot.models.shift import VertexDelta

__all__ = [
    "Aggregator",
    "EdgeChunk",
    "EdgeProgram",
    "GraphPartition",
    "MapReduceResult",
    "ModelResult",
    "PregelContext",
    "PregelJob",
    "PregelArrays",
    "PregelProgram",
    "VertexBatch",
    "VertexBlock",
    "VertexDelta",
    "VertexTable",
    "mapreduce",
    "mapreduce_series",
    "partitions_of",
    "pregel",
    "replay",
    "scatter_gather",
    "snapshots_at",
    "temporal_mapreduce",
    "temporal_series",
]
