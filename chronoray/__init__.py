"""chronoray: live, history-aware graph processing on Ray.

``import chronoray as cr`` gives the whole public API (:data:`__all__`)::

    with cr.GraphCluster(num_shards=2, log_dir="logs") as g:       # on Ray
        g.ingest(cr.SnapEdgeSource("collegemsg.txt"))
        print(g.stats().edges, g.vertex(1)["state"])
    with cr.GraphCluster(runtime="local", log_dir="logs") as g:    # in this process
        g.ingest([a, b], cr.IngestOptions(allowed_lateness=60))

Progress bars: every ``progress=`` argument takes ``False``, ``True`` (a bar) or a callable
(:data:`Progress`); :func:`progress_reporter` makes the same kind of reporter for your own
long work (a bar with a title, total, unit and note, drawn on a ``rich`` console).

Everything else (``chronoray.ray_graph``, ``chronoray.local_graph``, ``chronoray.ingest``,
``chronoray.controller``, ``chronoray.deploy``, ``shards.*``...) is internal: a developer
API that may change between versions. Each name says which it is
(:func:`vertex.annotations.api_level`, and the last line of its docstring).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chronoray.config import Config
    from chronoray.errors import ClusterUnreachable
    from chronoray.graph import (
        GraphCluster,
        GraphExists,
        GraphNotFound,
        GraphStats,
        GraphStatus,
        IngestJob,
        IngestOptions,
        IngestReport,
        LogDirInUse,
        ShardsUnavailable,
        SnapshotNotReady,
        SourceBusy,
        SourceMismatch,
    )
    from chronoray.protocol import Graph
    from chronoray.sources import (
        BitcoinCsvSource,
        IterableSource,
        MalformedRecord,
        OutOfOrder,
        SnapEdgeSource,
        SortedSource,
        Source,
        open_source,
    )
    from chronoray.tides import Control, GraphTidesSource, Marker, write_tides
    from ephemeral import (
        BfsDepth,
        Computation,
        DegreeHistogram,
        Index,
        Lagged,
        LiveComputation,
        LiveComputationLost,
        LivePageRank,
        Notification,
        StreamPosition,
        Subscription,
        WeaklyConnectedComponents,
    )
    from shards.core import VertexNotFound
    from shards.progress import Progress, Reporter, progress_reporter
    from snapshot import Snapshot, SnapshotMeta, algorithms
    from snapshot.models import (
        PregelJob,
        PregelProgram,
        mapreduce,
        pregel,
        replay,
        scatter_gather,
        temporal_mapreduce,
    )
    from snapshot.snapshot import SnapshotLost
    from vertex import Context, TemporalVertex, Update, UpdateKind, Vertex
    from vertex.batch import BatchVertex, MessageBatch

__all__ = [
    "algorithms",
    "BatchVertex",
    "BfsDepth",
    "BitcoinCsvSource",
    "ClusterUnreachable",
    "Computation",
    "Config",
    "Context",
    "Control",
    "DegreeHistogram",
    "Graph",
    "GraphCluster",
    "GraphExists",
    "GraphNotFound",
    "GraphStats",
    "GraphStatus",
    "GraphTidesSource",
    "Index",
    "IngestJob",
    "IngestOptions",
    "IngestReport",
    "IterableSource",
    "Lagged",
    "LiveComputation",
    "LiveComputationLost",
    "LivePageRank",
    "LogDirInUse",
    "Marker",
    "MalformedRecord",
    "MessageBatch",
    "PregelJob",
    "PregelProgram",
    "Progress",
    "Reporter",
    "Notification",
    "OutOfOrder",
    "ShardsUnavailable",
    "SnapEdgeSource",
    "Snapshot",
    "SnapshotLost",
    "SnapshotMeta",
    "SnapshotNotReady",
    "SortedSource",
    "SourceBusy",
    "SourceMismatch",
    "Source",
    "StreamPosition",
    "Subscription",
    "TemporalVertex",
    "Update",
    "UpdateKind",
    "Vertex",
    "VertexNotFound",
    "mapreduce",
    "WeaklyConnectedComponents",
    "write_tides",
    "open_source",
    "pregel",
    "progress_reporter",
    "replay",
    "scatter_gather",
    "temporal_mapreduce",
]

__version__ = "0.1.0"

# Each name is imported on first use (PEP 562): ``import chronoray`` costs little, and a
# process that needs one part -- a shard, a source or the controller actor, the CLI reading
# stopped logs -- imports only that part (not Ray's driver side, Spark, gRPC or pandas).
_LAZY: dict[str, str] = {
    "algorithms": "snapshot",
    "BfsDepth": "ephemeral",
    "BitcoinCsvSource": "chronoray.sources",
    "ClusterUnreachable": "chronoray.errors",
    "Computation": "ephemeral",
    "Config": "chronoray.config",
    "Context": "vertex",
    "Control": "chronoray.tides",
    "DegreeHistogram": "ephemeral",
    "Graph": "chronoray.protocol",
    "GraphCluster": "chronoray.graph",
    "GraphExists": "chronoray.graph",
    "GraphNotFound": "chronoray.graph",
    "GraphStats": "chronoray.graph",
    "GraphStatus": "chronoray.graph",
    "GraphTidesSource": "chronoray.tides",
    "Index": "ephemeral",
    "IngestJob": "chronoray.graph",
    "IngestOptions": "chronoray.graph",
    "IngestReport": "chronoray.graph",
    "IterableSource": "chronoray.sources",
    "Lagged": "ephemeral",
    "LiveComputation": "ephemeral",
    "LiveComputationLost": "ephemeral",
    "LivePageRank": "ephemeral",
    "LogDirInUse": "chronoray.graph",
    "MalformedRecord": "chronoray.sources",
    "mapreduce": "snapshot.models",
    "Marker": "chronoray.tides",
    "Notification": "ephemeral",
    "open_source": "chronoray.sources",
    "OutOfOrder": "chronoray.sources",
    "pregel": "snapshot.models",
    "PregelJob": "snapshot.models",
    "PregelProgram": "snapshot.models",
    "Progress": "shards.progress",
    "progress_reporter": "shards.progress",
    "replay": "snapshot.models",
    "Reporter": "shards.progress",
    "scatter_gather": "snapshot.models",
    "ShardsUnavailable": "chronoray.graph",
    "SnapEdgeSource": "chronoray.sources",
    "Snapshot": "snapshot",
    "SnapshotLost": "snapshot.snapshot",
    "SnapshotMeta": "snapshot",
    "SnapshotNotReady": "chronoray.graph",
    "SortedSource": "chronoray.sources",
    "Source": "chronoray.sources",
    "SourceBusy": "chronoray.graph",
    "SourceMismatch": "chronoray.graph",
    "StreamPosition": "ephemeral",
    "Subscription": "ephemeral",
    "temporal_mapreduce": "snapshot.models",
    "TemporalVertex": "vertex",
    "BatchVertex": "vertex.batch",
    "MessageBatch": "vertex.batch",
    "Update": "vertex",
    "UpdateKind": "vertex",
    "Vertex": "vertex",
    "VertexNotFound": "shards.core",
    "WeaklyConnectedComponents": "ephemeral",
    "write_tides": "chronoray.tides",
}


def __getattr__(name: str) -> object:
    if name == "spark_bridge":  # ``cr.spark_bridge``: pyspark only for those who use it
        return importlib.import_module("spark_bridge")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'chronoray' has no attribute {name!r}")
    owner = importlib.import_module(module)
    obj = (
        getattr(owner, name)
        if hasattr(owner, name)
        else importlib.import_module(f"{module}.{name}")
    )
    globals()[name] = obj  # the next access is a plain attribute
    return obj


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
