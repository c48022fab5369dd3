"""Live computations on the evolving graph (DESIGN §5, thesis ch. 9.3.2 and 9.6).

* Ephemeral computations (:mod:`ephemeral.computation`, algorithms in
  :mod:`ephemeral.algorithms`): per-vertex state driven by vertex changes and their own
  messages, never logged, queryable while they run.
* Notification streams (:mod:`ephemeral.notify`): vertex updates delivered to the
  driver in per-vertex log order, with bounded buffers and explicit lag markers, live or
  replayed from the log.
* Secondary indexes (:mod:`ephemeral.index`): keys derived from vertex state -> ids.

The shard side is :class:`~ephemeral.host.LiveHost`; the driver side the handles in
:mod:`ephemeral.live`; :class:`~ephemeral.local.LiveLocalRuntime` runs it in-process.
"""

from ephemeral.algorithms import (
    BfsDepth,
    DegreeHistogram,
    LivePageRank,
    WeaklyConnectedComponents,
)
from ephemeral.computation import Computation, EphemeralContext, VertexView
from ephemeral.host import LiveHost
from ephemeral.live import Index, LiveComputation, LiveComputationLost, Subscription
from ephemeral.local import LiveLocalRuntime
from ephemeral.notify import Lagged, Notification, NotificationFilter, StreamPosition

__all__ = [
    "BfsDepth",
    "Computation",
    "DegreeHistogram",
    "EphemeralContext",
    "Index",
    "Lagged",
    "LiveComputation",
    "LiveComputationLost",
    "LiveHost",
    "LiveLocalRuntime",
    "LivePageRank",
    "Notification",
    "NotificationFilter",
    "StreamPosition",
    "Subscription",
    "VertexView",
    "WeaklyConnectedComponents",
]
