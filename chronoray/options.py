"""``IngestOptions``: how sources are fed into a graph, as one value.

:meth:`GraphCluster.ingest <chronoray.graph.GraphCluster.ingest>` takes one (or the same
fields as keywords), on either runtime; ``chronoray ingest`` sets the same fields from
its options.

>>> opts = IngestOptions(allowed_lateness=60, late="apply")
>>> opts.replace(sort=True).sort, opts.idle_timeout
(True, 10.0)
>>> IngestOptions(late="later")
Traceback (most recent call last):
...
ValueError: late must be one of ('reject', 'apply'), got 'later'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from shards.coordinator import DEFAULT_IDLE_TIMEOUT
from shards.progress import Progress
from shards.watermark import LATE_POLICIES, LatePolicy
from vertex.annotations import mark_module_api

__all__ = ["IngestOptions", "OnError"]

OnError = Literal["raise", "skip"]


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """How to feed sources.

    * ``name``: the source name of a plain iterable of updates (default: a fresh one, so
      two lists never pass for the same source; give one to make ingesting the same
      list again a no-op);
    * ``on_error``: a malformed record stops the ingest (``"raise"``) or is counted and
      written to ``rejects`` (``"skip"``);
    * ``progress``: a bar (``True``) or a callable getting the count of updates read;
      ``total``: updates expected (the bar's end);
    * ``wait``: return the report once every update is applied and the graph is idle
      (else an :class:`~chronoray.ingest.IngestJob` at once);
    * ``in_driver``: feed from this process rather than a source actor (Ray; ``on_batch``
      is then called with the number of batches sent after each send);
    * event time -- ``sort``: sort the source by time first (outside memory);
      ``allowed_lateness`` (seconds): reorder behind a watermark instead, with ``late``
      saying what becomes of updates later than that (``"reject"``: to ``rejects``;
      ``"apply"``: applied at the watermark); ``idle_timeout``: seconds a source may read
      nothing before it stops holding the other sources back.
    """

    name: str | None = None
    on_error: OnError = "raise"
    rejects: str | Path | None = None
    progress: Progress = False
    total: int | None = None
    wait: bool = True
    in_driver: bool = False
    on_batch: Callable[[int], None] | None = None
    allowed_lateness: float | None = None
    late: LatePolicy = "reject"
    sort: bool = False
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT

    def __post_init__(self) -> None:
        if self.on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {self.on_error!r}")
        if self.late not in LATE_POLICIES:
            raise ValueError(f"late must be one of {LATE_POLICIES}, got {self.late!r}")
        if self.allowed_lateness is not None and not self.allowed_lateness >= 0:
            raise ValueError(f"allowed_lateness must be >= 0 seconds, got {self.allowed_lateness}")
        if not self.idle_timeout > 0:
            raise ValueError(f"idle_timeout must be > 0 seconds, got {self.idle_timeout}")

    def replace(self, **changes: Any) -> IngestOptions:
        """A copy with ``changes`` (field names; ``None`` for ``idle_timeout``, or ``0``,
        as the old keywords took it: the default)."""
        if changes.get("idle_timeout", 1) in (None, 0):
            changes["idle_timeout"] = DEFAULT_IDLE_TIMEOUT
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"unknown ingest option(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)

    @property
    def rejects_path(self) -> str | None:
        """``rejects`` as an absolute path (a source actor may run elsewhere)."""
        return None if self.rejects is None else str(Path(self.rejects).resolve())


mark_module_api(globals(), public=("IngestOptions",))
