"""The errors chronoray reports to people in one line (the CLI prints them as such).

This module imports nothing heavy, so the command line can name them before Ray loads.
"""

from __future__ import annotations

from vertex.annotations import mark_module_api

__all__ = [
    "ClusterUnreachable",
    "GatewayError",
    "GraphExists",
    "GraphNotFound",
    "LogDirInUse",
    "ShardsUnavailable",
    "SnapshotNotReady",
    "SourceBusy",
    "SourceMismatch",
    "USER_ERRORS",
]


class SnapshotNotReady(RuntimeError):
    """A time cut was asked for a time whose updates are not all logged yet."""


class GraphNotFound(LookupError):
    """No graph of that name runs in the Ray cluster."""

    def __str__(self) -> str:
        return str(self.args[0])


class GraphExists(ValueError):
    """A graph of that name runs already."""


class LogDirInUse(RuntimeError):
    """Another graph has the log directory open."""


class ShardsUnavailable(RuntimeError):
    """Shards cannot run: their log's node is not in the cluster."""


class SourceBusy(ValueError):
    """A source of that name is feeding the graph already."""


class SourceMismatch(ValueError):
    """Other data under a source name whose offsets would not name the same rows."""


class ClusterUnreachable(ConnectionError):
    """No Ray cluster answers at the address given."""


class GatewayError(RuntimeError):
    """A gateway refused a call or could not be reached: ``code`` is the gRPC status code's
    name (``NOT_FOUND``, ``INVALID_ARGUMENT``, ``UNAUTHENTICATED``, ``UNAVAILABLE``...),
    ``details`` what the server (or gRPC) said."""

    def __init__(self, code: str, details: str) -> None:
        super().__init__(code, details)
        self.code = code
        self.details = details

    def __str__(self) -> str:
        return f"{self.code}: {self.details}"


USER_ERRORS = (
    ClusterUnreachable,
    GatewayError,
    GraphExists,
    GraphNotFound,
    LogDirInUse,
    ShardsUnavailable,
    SnapshotNotReady,
    SourceBusy,
    SourceMismatch,
)
"""Errors about what the user asked for, reported as one line without a traceback."""


mark_module_api(
    globals(),
    public=(
        "ClusterUnreachable",
        "GraphExists",
        "GraphNotFound",
        "LogDirInUse",
        "ShardsUnavailable",
        "SnapshotNotReady",
        "SourceBusy",
        "SourceMismatch",
    ),
)
