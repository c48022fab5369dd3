"""chronoray: live, history-aware graph processing on Ray.

``import chronoray as cr`` gives the whole public API::

    with cr.GraphCluster(num_shards=2, log_dir="logs") as g:
        g.ingest(cr.SnapEdgeSource("collegemsg.txt"))
        print(g.stats().edges, g.vertex(1)["state"])
"""

from chronoray.config import Config
from chronoray.graph import GraphCluster, GraphStats, IngestReport, SnapshotNotReady
from chronoray.sources import (
    BitcoinCsvSource,
    IterableSource,
    MalformedRecord,
    SnapEdgeSource,
    Source,
    open_source,
)
from ephemeral import (
    BfsDepth,
    Computation,
    DegreeHistogram,
    Index,
    Lagged,
    LiveComputation,
    LivePageRank,
    Notification,
    Subscription,
    WeaklyConnectedComponents,
)
from shards.core import VertexNotFound
from snapshot import Snapshot, SnapshotMeta
from vertex import Context, TemporalVertex, Update, UpdateKind, Vertex

__all__ = [
    "BfsDepth",
    "BitcoinCsvSource",
    "Computation",
    "Config",
    "Context",
    "DegreeHistogram",
    "GraphCluster",
    "GraphStats",
    "Index",
    "IngestReport",
    "IterableSource",
    "Lagged",
    "LiveComputation",
    "LivePageRank",
    "MalformedRecord",
    "Notification",
    "SnapEdgeSource",
    "Snapshot",
    "SnapshotMeta",
    "SnapshotNotReady",
    "Source",
    "Subscription",
    "TemporalVertex",
    "Update",
    "UpdateKind",
    "Vertex",
    "VertexNotFound",
    "WeaklyConnectedComponents",
    "open_source",
]

__version__ = "0.1.0"
