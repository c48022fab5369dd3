"""Operator instances: user code per partition, with a chronoray graph at hand.

An :class:`Operator` is what a domain expert writes (seed 002, sec. 3): it gets the events
the splitter routed to its instance, in stream order, as Arrow record batches (the schema
of :data:`cep.columns.SCHEMA`), sees time pass, and emits :class:`~cep.merger.Report` s
for the merger. Several instances run the same operator class in parallel (on Ray: one
actor each), each on its own share of the stream.

Hooks: :meth:`Operator.start` once, then :meth:`Operator.process` ``(ctx, batch, until)``
per batch: the batch's events in stream order, then time passes up to ``until`` (the time
of the whole stream's batch's last event) -- also when the instance got no event: time
passes for every instance alike. Time-driven work (decays, window expiries) happens for
every time ``<= until``. An operator works on whole columns (DESIGN.md section 12): the
DEBS queries hand a batch to a compiled kernel; a loop per row in Python belongs only where
each event goes through user objects (the graph-backed store below).

The graph: :meth:`Context.graph` gives an :class:`EmbeddedGraph`, a chronoray graph held by
the instance -- event-sourced vertex actors on ``shards`` shard cores with RocksDB logs, and
live computations (chronoray's in-process runtime, so the graph runs inside the instance's
Ray actor). :meth:`EmbeddedGraph.manipulate_graph` applies updates;
:meth:`EmbeddedGraph.execute` runs a live computation on the graph and returns its result.
It keeps the graph's history (every behavior logged, so the graph can be replayed, cut at
a past time, recovered); a query that needs only the graph's present state keeps it in its
own columns instead (Query 2's default store).

**When the graph is complete.** A chronoray graph is asynchronous: an update's effects
travel as messages between vertices and shards. Before an operator reads a result it must
be sure every effect of every update so far has been processed. ``manipulate_graph``
gives that per update: each update is processed until no message is pending anywhere
(vertex messages and live-computation messages alike) before the next one is applied.
So a live computation that records what it sees, tagged with the update that caused it,
records it exactly as of that update; ``execute`` reads it once per batch.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

import chronoray as cr
from cep.merger import Entry, Ranking, Report, StepKey

__all__ = ["Context", "EmbeddedGraph", "Operator", "TopKOperator"]


class EmbeddedGraph:
    """A chronoray graph held by one operator instance (see the module doc).

    ``vertex_types``: the graph's vertex classes (the first is the default for vertices
    created by an edge). Logs go to ``log_dir``, which must be new or empty (a temporary
    directory, removed by :meth:`close`, when ``None``); they stay there after the run.
    """

    def __init__(
        self,
        vertex_types: list[type[cr.Vertex]],
        *,
        shards: int = 1,
        log_dir: str | Path | None = None,
    ) -> None:
        self._temp = log_dir is None
        self.log_dir = Path(tempfile.mkdtemp(prefix="cep-graph-") if log_dir is None else log_dir)
        if not self._temp and self.log_dir.exists() and any(self.log_dir.iterdir()):
            # an operator's graph starts empty: another run's logs would be recovered into it
            raise ValueError(f"{self.log_dir} already holds a graph; give an empty log_dir")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.runtime = _in_process_graph(vertex_types, shards, self.log_dir)
        self._pending: list[cr.Update] = []
        self._offset = 0
        self._live: dict[int, cr.LiveComputation] = {}
        self.updates = 0

    def manipulate_graph(self, updates: Iterable[cr.Update]) -> None:
        """Apply ``updates`` in order (buffered until the next :meth:`flush`/:meth:`execute`;
        each one is processed until the graph is idle before the next)."""
        self._pending.extend(updates)

    def flush(self) -> None:
        """Apply what :meth:`manipulate_graph` buffered."""
        if not self._pending:
            return
        stamped = []
        for update in self._pending:
            self._offset += 1
            stamped.append(update.with_origin("cep", self._offset))
        self._pending = []
        self.updates += len(stamped)
        self.runtime.ingest(stamped, name="cep")

    def execute(self, computation: cr.Computation) -> Any:
        """Run ``computation`` on the graph as it is after every update so far, and return
        its aggregated result. The first call starts it as a live computation (activating
        on every matching vertex); it then follows each update, and later calls read it."""
        self.flush()
        live = self._live.get(id(computation))
        if live is None:
            live = self._live[id(computation)] = self.runtime.start_computation(computation)
        return live.result()

    def vertex(self, vertex_id: Any) -> dict[str, Any]:
        """State and edges of one vertex (``chronoray.VertexNotFound`` if absent)."""
        self.flush()
        return self.runtime.vertex(vertex_id)

    def close(self) -> None:
        """Close the logs (and remove them if they were temporary)."""
        self.runtime.close()
        if self._temp:
            shutil.rmtree(self.log_dir, ignore_errors=True)


def _in_process_graph(
    vertex_types: list[type[cr.Vertex]], shards: int, log_dir: Path
) -> cr.GraphCluster:
    """A live chronoray graph in this process (``runtime="local"``), its shard logs in
    RocksDB under ``log_dir``; one update per batch, each processed until the graph is idle
    before the next."""
    return cr.GraphCluster(
        runtime="local",
        log_dir=str(log_dir),
        num_shards=shards,
        vertex_types=vertex_types,
        batch_size=1,
    )


class Context:
    """What an operator's hooks get: ``instance`` (its number), ``instances`` (how many),
    :meth:`emit` for reports and :meth:`graph` for an embedded chronoray graph."""

    def __init__(self, instance: int, instances: int, log_dir: str | None = None) -> None:
        self.instance = instance
        self.instances = instances
        self.log_dir = log_dir
        self.reports: list[Report] = []
        self._graphs: list[EmbeddedGraph] = []

    def emit(self, key: StepKey, entries: tuple[Entry, ...]) -> None:
        """Report the instance's local result ``entries`` at step ``key``."""
        self.reports.append(Report(key, entries))

    def graph(self, vertex_types: list[type[cr.Vertex]], *, shards: int = 1) -> EmbeddedGraph:
        """A new chronoray graph for this instance (closed with the instance)."""
        log_dir = None
        if self.log_dir is not None:
            log_dir = (
                Path(self.log_dir) / f"instance-{self.instance}" / f"graph-{len(self._graphs)}"
            )
        graph = EmbeddedGraph(vertex_types, shards=shards, log_dir=log_dir)
        self._graphs.append(graph)
        return graph

    def take_reports(self) -> list[Report]:
        """The reports emitted since the last call, in step order."""
        reports, self.reports = self.reports, []
        reports.sort(key=lambda r: r.key)  # stable: one step's reports keep their order
        return reports

    def close(self) -> None:
        for graph in self._graphs:
            graph.close()
        self._graphs = []


class Operator:
    """Base class of operator code (see the module doc for when each hook runs)."""

    def start(self, ctx: Context) -> None:
        """Once, before the first batch."""

    def process(self, ctx: Context, batch: pa.RecordBatch, until: int) -> None:
        """The events routed to this instance (stream order), then time up to ``until``."""

    def stats(self) -> dict[str, Any]:
        """Counters for the run summary."""
        return {}


class TopKOperator(Operator):
    """An operator whose result is a local top-k of items in a :class:`~cep.merger.Ranking`.

    :meth:`report` emits the local top-k at a step if it changed since the last report
    (keys, items or displays), which is what :class:`~cep.merger.TopKMerger` combines.
    """

    def __init__(self, k: int, *, low: int, high: int) -> None:
        self.k = k
        self.ranking = Ranking(low=low, high=high)
        self._reported: list[Entry] = []

    def report(self, ctx: Context, key: StepKey) -> None:
        """Emit the local top-k at ``key`` if it changed."""
        top = self.ranking.top(self.k)
        if top != self._reported:
            self._reported = top
            ctx.emit(key, tuple(top))
