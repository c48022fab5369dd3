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
from vertex.annotations import mark_public_api

__all__ = [
    "algorithms",
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

mark_public_api(globals()[name] for name in __all__)


def __getattr__(name: str) -> object:
    # ``cr.spark_bridge`` without importing pyspark for users who never touch Spark
    if name == "spark_bridge":
        import spark_bridge

        return spark_bridge
    raise AttributeError(f"module 'chronoray' has no attribute {name!r}")
