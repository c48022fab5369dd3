"""Vertex-centric processing (Pregel) on a snapshot (thesis 9.4.2).

``compute(ctx, messages, state) -> state`` runs on every active vertex in synchronous
supersteps separated by global barriers. Guarantees:

* a message sent in superstep ``s`` is delivered in superstep ``s + 1`` (with a combiner,
  the messages to one vertex may arrive combined into fewer, in any grouping);
* a vertex that voted to halt is skipped until a message reactivates it;
* aggregated values contributed in superstep ``s`` are readable in ``s + 1``;
  ``ctx.num_vertices``/``ctx.num_edges`` are the counts as of the previous superstep;
* topology changes (``add_edge``, ``remove_edge``, ``add_vertex``, ``remove_vertex``)
  take effect at the start of the next superstep;
* the job ends when every vertex has halted and no message or new vertex is pending, or
  after ``max_supersteps`` supersteps;
* a message to a vertex that does not exist is dropped (and counted in ``dropped``).

The graph is the snapshot's Arrow data, partitioned by the stable hash of the vertex id;
each partition is one worker (one Ray actor, or an object in this process):
:class:`PregelWorker` runs a :class:`PregelProgram` (``compute`` once per vertex), and
:class:`~snapshot.models.pregel_arrays.PregelArraysWorker` a
:class:`~snapshot.models.pregel_arrays.PregelArrays` program (``compute`` once per
partition over arrays). Messages travel in one batch per (sender, receiver) partition pair
per superstep, from worker to worker (on Ray over the actors' direct connections, not
through the driver or the object store), together with the sender's summary of the
superstep (aggregates, counts). Every worker folds the summaries itself and all stop
together at the job's end, so the driver makes one call per partition per window of
supersteps (and none per superstep). The live graph is never touched. A per-vertex job
can pause at a barrier and shift to a newer snapshot (see :mod:`snapshot.models.shift`).
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from shards.routing import stable_hash
from snapshot.models.partition import GraphPartition, vertex_views
from snapshot.models.result import ModelResult, Progress, progress_reporter
from snapshot.models.runtime import Executor, GraphInput, start_group
from snapshot.models.shift import ShiftFunction, vertex_delta
from snapshot.tables import rows_to_table
from vertex.annotations import mark_module_api

if TYPE_CHECKING:
    from snapshot.models.pregel_arrays import PregelArrays

__all__ = [
    "Aggregator",
    "PregelContext",
    "PregelJob",
    "PregelProgram",
    "PregelWorker",
    "fold_summaries",
    "pregel",
]


WINDOW_SECONDS = 0.25  # the driver's default pace: one call (and progress report) per window


@dataclass(frozen=True)
class Aggregator:
    """A global reduction: every vertex may ``ctx.aggregate(name, value)`` in a superstep;
    the values are folded with ``combine`` starting from ``zero`` and readable with
    ``ctx.aggregated(name)`` in the next superstep. ``combine`` must be associative and
    commutative (partitions fold their part first)."""

    combine: Callable[[Any, Any], Any]
    zero: Any = 0

    @staticmethod
    def sum() -> Aggregator:
        """Sum, starting at 0."""
        return Aggregator(operator.add, 0)

    @staticmethod
    def max(zero: float = float("-inf")) -> Aggregator:
        """Maximum, starting at ``zero``."""
        return Aggregator(max, zero)

    @staticmethod
    def min(zero: float = float("inf")) -> Aggregator:
        """Minimum, starting at ``zero``."""
        return Aggregator(min, zero)


@dataclass
class PregelProgram:
    """A vertex program.

    ``compute(ctx, messages, state) -> state``: the new state of the vertex.
    ``init(view) -> state``: the state of a vertex at superstep 0, from its snapshot view
    (``id``, ``type``, ``clock``, ``time``, state columns, ``out_edges``); default: the
    view without ``out_edges``. ``combiner(a, b)``: merges two messages to the same vertex
    (associative, commutative). ``output(state) -> dict``: the result columns of a vertex
    (default: the state itself if it is a dict, else ``{"value": state}``).
    ``constants``: read-only parameters, ``ctx.constants``.
    """

    compute: Callable[[PregelContext, list[Any], Any], Any]
    init: Callable[[dict[str, Any]], Any] | None = None
    combiner: Callable[[Any, Any], Any] | None = None
    aggregators: Mapping[str, Aggregator] = field(default_factory=dict)
    max_supersteps: int = 100
    constants: Mapping[str, Any] = field(default_factory=dict)
    output: Callable[[Any], Mapping[str, Any]] | None = None
    name: str = "pregel"

    @property
    def worker(self) -> type[PregelWorker]:
        """The partition worker that runs this form."""
        return PregelWorker


class PregelContext:
    """What ``compute`` sees of the job for one vertex in one superstep."""

    __slots__ = (
        "vertex_id", "superstep", "num_vertices", "num_edges", "out_edges", "constants",
        "_worker", "halted", "_removed",
    )  # fmt: skip

    def __init__(self, worker: PregelWorker, superstep: int, counts: tuple[int, int]) -> None:
        self._worker = worker
        self.superstep = superstep
        self.num_vertices, self.num_edges = counts
        self.constants = worker.program.constants
        self.vertex_id: Any = None
        self.out_edges: Mapping[Any, Mapping[str, Any]] = {}
        self.halted = False
        self._removed = False

    def send(self, dst: Any, message: Any) -> None:
        """Deliver ``message`` to vertex ``dst`` in the next superstep."""
        self._worker.post(dst, message)

    def send_to_neighbors(self, message: Any) -> None:
        """Send ``message`` to every out-edge target."""
        post = self._worker.post
        for dst in self.out_edges:
            post(dst, message)

    def vote_to_halt(self) -> None:
        """Halt until a message arrives."""
        self.halted = True

    def aggregate(self, name: str, value: Any) -> None:
        """Contribute ``value`` to aggregator ``name`` for the next superstep."""
        worker = self._worker
        worker.partial[name] = worker.aggregators[name].combine(worker.partial[name], value)

    def aggregated(self, name: str) -> Any:
        """Aggregator ``name``'s value from the previous superstep (its zero at first)."""
        return self._worker.aggregated[name]

    def add_edge(self, dst: Any, props: Mapping[str, Any] | None = None) -> None:
        """Add (or replace) the out-edge to ``dst``, from the next superstep on."""
        self._worker.topology.append((self.vertex_id, dst, dict(props or {})))

    def remove_edge(self, dst: Any) -> None:
        """Remove the out-edge to ``dst``, from the next superstep on."""
        self._worker.topology.append((self.vertex_id, dst, None))

    def add_vertex(self, vertex_id: Any, state: Any = None) -> None:
        """Create vertex ``vertex_id`` with ``state`` (active) in the next superstep; no
        effect if it exists then."""
        self._worker.spawn(vertex_id, state)

    def remove_vertex(self) -> None:
        """Remove this vertex (and its out-edges) after this superstep."""
        self._removed = True


class PregelWorker:
    """One partition of a Pregel job (pure; the Ray actor only wraps it)."""

    def __init__(self, part: GraphPartition, program: PregelProgram) -> None:
        self.program = program
        self.index, self.num_parts = part.index, part.num_parts
        self.aggregators = dict(program.aggregators)
        self.aggregated = {k: a.zero for k, a in self.aggregators.items()}
        self.partial: dict[str, Any] = {}
        self._load(part)
        init = program.init or _default_init
        self.states = {vid: init(dict(view)) for vid, view in self.views.items()}
        self.halted: set[Any] = set()
        self._reset_outbox()

    def _load(self, part: GraphPartition) -> None:
        self.views = vertex_views(part)
        self.out_edges = {vid: view["out_edges"] for vid, view in self.views.items()}

    def _reset_outbox(self) -> None:
        self.outbox: list[dict[Any, Any]] = [{} for _ in range(self.num_parts)]
        self.spawned: list[dict[Any, Any]] = [{} for _ in range(self.num_parts)]
        self.topology: list[tuple[Any, Any, dict[str, Any] | None]] = []
        self._parts: dict[Any, int] = {}
        self.sent = 0

    def _part(self, vertex_id: Any) -> int:
        part = self._parts.get(vertex_id)
        if part is None:
            part = self._parts[vertex_id] = stable_hash(vertex_id) % self.num_parts
        return part

    def post(self, dst: Any, message: Any) -> None:
        box = self.outbox[self._part(dst)]
        self.sent += 1
        combiner = self.program.combiner
        if combiner is None:
            box.setdefault(dst, []).append(message)
        elif dst in box:
            box[dst] = combiner(box[dst], message)
        else:
            box[dst] = message

    def spawn(self, vertex_id: Any, state: Any) -> None:
        self.spawned[self._part(vertex_id)].setdefault(vertex_id, state)
        self.sent += 1

    def counts(self) -> tuple[int, int]:
        """``(vertices, edges)`` of this partition."""
        return len(self.states), sum(len(e) for e in self.out_edges.values())

    def superstep(
        self,
        batches: list[dict[str, Any] | None],
        superstep: int,
        previous: list[dict[str, Any]],
    ) -> tuple[dict[str, Any], list[dict[str, Any] | None]]:
        """Run one superstep on the batches sent to this partition in the previous one
        (``previous``: every partition's summary of it); returns a summary and one batch
        per destination partition."""
        program = self.program
        counts, self.aggregated = fold_summaries(self.aggregators, previous)
        self.partial = {k: a.zero for k, a in self.aggregators.items()}
        inbox: dict[Any, list[Any]] = {}
        combiner = program.combiner
        for batch in batches:
            if not batch:
                continue
            for vid, state in batch["spawn"].items():
                if vid not in self.states:
                    self.states[vid] = state
                    self.out_edges[vid] = {}
                    self.views[vid] = {"id": vid, "out_edges": {}}
            for dst, msgs in batch["messages"].items():
                if combiner is None:
                    inbox.setdefault(dst, []).extend(msgs)
                elif dst in inbox:
                    inbox[dst] = [combiner(inbox[dst][0], msgs)]
                else:
                    inbox[dst] = [msgs]
        dropped = sum(len(m) for d, m in inbox.items() if d not in self.states)
        ctx = PregelContext(self, superstep, counts)
        compute = program.compute
        removed = []
        for vid, state in self.states.items():
            messages = inbox.get(vid)
            if messages is None:
                if vid in self.halted:
                    continue
                messages = []
            ctx.vertex_id = vid
            ctx.out_edges = self.out_edges[vid]
            ctx.halted = ctx._removed = False
            self.states[vid] = compute(ctx, messages, state)
            if ctx.halted:
                self.halted.add(vid)
            else:
                self.halted.discard(vid)
            if ctx._removed:
                removed.append(vid)
        for src, dst, props in self.topology:
            if src in self.out_edges:
                if props is None:
                    self.out_edges[src].pop(dst, None)
                else:
                    self.out_edges[src][dst] = props
        for vid in removed:
            for table in (self.states, self.out_edges, self.views):
                table.pop(vid, None)
            self.halted.discard(vid)
        out = [
            {"messages": self.outbox[p], "spawn": self.spawned[p]}
            if self.outbox[p] or self.spawned[p]
            else None
            for p in range(self.num_parts)
        ]
        vertices, edges = self.counts()
        summary = {
            "active": len(self.states) - len(self.halted),
            "sent": self.sent,
            "dropped": dropped,
            "vertices": vertices,
            "edges": edges,
            "aggregates": self.partial,
        }
        self._reset_outbox()
        return summary, out

    def results(self) -> pa.Table:
        """Every vertex's output columns as a table with ``id`` first."""
        output = self.program.output or _default_output
        rows = [{"id": vid, **output(state)} for vid, state in self.states.items()]
        return rows_to_table(rows, ("id",)) if rows else pa.table({"id": pa.array([], pa.int64())})

    def stage(self, part: GraphPartition) -> None:
        """Keep ``part`` (of a newer snapshot) for :meth:`shift`."""
        self.staged = part

    def staged_count(self) -> int:
        """Vertices in the staged partition."""
        return self.staged.vertices.num_rows

    def shift(self, shift: ShiftFunction, vertices: tuple[int, int]) -> int:
        """Move this partition to the staged one: every vertex of it gets
        ``shift(result or None, delta)`` as its state. Returns the vertices shifted."""
        old_views, old_states = self.views, self.states
        self._load(self.staged)
        del self.staged
        self.states = {
            vid: shift(old_states.get(vid), vertex_delta(vid, old_views.get(vid), view, vertices))
            for vid, view in self.views.items()
        }
        self.halted = set()
        self._reset_outbox()
        return len(self.states)


def _default_init(view: dict[str, Any]) -> Any:
    view.pop("out_edges", None)
    return view


def _default_output(state: Any) -> Mapping[str, Any]:
    return state if isinstance(state, Mapping) else {"value": state}


def _fold(aggregators: Mapping[str, Aggregator], partials: Iterable[Mapping[str, Any]]) -> dict:
    values = {k: a.zero for k, a in aggregators.items()}
    for partial in partials:
        for k, v in partial.items():
            values[k] = aggregators[k].combine(values[k], v)
    return values


def fold_summaries(
    aggregators: Mapping[str, Aggregator], summaries: list[dict[str, Any]]
) -> tuple[tuple[int, int], dict[str, Any]]:
    """``((vertices, edges), aggregated values)`` of a superstep from every partition's
    summary of it, folded in partition order (so every worker gets the same values)."""
    counts = (sum(s["vertices"] for s in summaries), sum(s["edges"] for s in summaries))
    return counts, _fold(aggregators, (s["aggregates"] for s in summaries))


class PregelJob:
    """A Pregel job over a snapshot, run superstep by superstep; it can pause (after
    ``run(supersteps=k)``), shift to a newer snapshot and resume.

    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3]}), pa.table({"src": [1, 2], "dst": [2, 3]}))
    >>> def hops(ctx, messages, state):  # hop distance from vertex 1
    ...     best = 0 if ctx.superstep == 0 and ctx.vertex_id == 1 else min(messages, default=None)
    ...     if best is not None and (state is None or best < state):
    ...         ctx.send_to_neighbors(best + 1)
    ...         state = best
    ...     ctx.vote_to_halt()
    ...     return state
    >>> program = PregelProgram(hops, init=lambda view: None, combiner=min)
    >>> with PregelJob(graph, program, num_partitions=2) as job:
    ...     result = job.run()
    >>> result.to_dict(), result.info["supersteps"]
    ({1: 0, 2: 1, 3: 2}, 3)
    """

    def __init__(
        self,
        graph: GraphInput,
        program: PregelProgram | PregelArrays,
        *,
        num_partitions: int = 4,
        executor: Executor = "auto",
        progress: Progress = False,
        window: int | None = None,
    ) -> None:
        if window is not None and window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.program = program
        self.num_partitions = num_partitions
        self.progress = progress
        self.window = window
        started = time.perf_counter()
        direction = "both" if getattr(program, "undirected", False) else "out"
        self.group = start_group(
            graph,
            num_partitions,
            program.worker,
            program,
            executor=executor,
            direction=direction,
            then="counts",
        )
        self.steps: list[dict[str, Any]] = []
        self._restart(self.group.loaded)
        self.setup_seconds = time.perf_counter() - started

    def _restart(self, counts: list[Any] | None = None) -> None:
        """Start a phase at superstep 0 (the job's start, or a resume after a shift);
        ``counts``: every worker's ``counts()`` if known (else asked here)."""
        self.superstep = 0
        self.finished = False
        self.fresh = True  # superstep 0 has no messages
        self.aggregated = _fold(self.program.aggregators, [])
        if counts is None:
            counts = self.group.call("counts")
        self.counts = (sum(c[0] for c in counts), sum(c[1] for c in counts))
        # what superstep 0 reads as "the previous superstep": the counts, no aggregates
        self.previous: list[Any] = [
            {"vertices": self.counts[0], "edges": self.counts[1], "aggregates": {}}
        ]

    def __enter__(self) -> PregelJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the partition workers."""
        self.group.close()

    def run(self, supersteps: int | None = None) -> ModelResult:
        """Run until the job ends (all halted, nothing pending, or ``max_supersteps`` in
        this phase), or pause after ``supersteps`` more supersteps; returns the vertex
        states at that point (``info["finished"]`` says which)."""
        started = time.perf_counter()
        limit = self.program.max_supersteps
        budget = supersteps if supersteps is not None else limit
        report = progress_reporter(self.progress, self.program.name, min(budget, limit))
        try:
            ran = 0
            while not self.finished and ran < budget:
                ran += self._window(min(self._next_window(), budget - ran), report)
        finally:
            report.close()
        table = _sorted(pa.concat_tables(self.group.call("results"), promote_options="permissive"))
        return ModelResult(
            table,
            "pregel",
            self.num_partitions,
            time.perf_counter() - started,
            list(self.steps),
            {
                "supersteps": self.superstep,
                "finished": self.finished,
                "aggregates": dict(self.aggregated),
                "setup_seconds": self.setup_seconds,
            },
        )

    def _next_window(self) -> int:
        """Supersteps of the next window: ``window`` if given, else as many as fit in
        :data:`WINDOW_SECONDS` at the last window's pace (8 at first, at most 256)."""
        if self.window is not None:
            return self.window
        timed = [s["seconds"] for s in self.steps[-1:] if "superstep" in s]
        if not timed:
            return 8
        return max(1, min(256, int(WINDOW_SECONDS / max(timed[0], 1e-6))))

    def _window(self, size: int, report: Any) -> int:
        """Run up to ``size`` supersteps without the driver (the workers exchange their
        messages and summaries directly and all stop at the job's end); returns the
        supersteps run."""
        t = time.perf_counter()
        size = min(size, self.program.max_supersteps - self.superstep)
        steps = self.group.iterate(
            "superstep", self.superstep, size, self.previous, _nothing_pending, fresh=self.fresh
        )
        self.fresh = False
        seconds = (time.perf_counter() - t) / len(steps)
        for summaries in steps:
            self.aggregated = _fold(self.program.aggregators, (s["aggregates"] for s in summaries))
            self.counts = (
                sum(s["vertices"] for s in summaries),
                sum(s["edges"] for s in summaries),
            )
            figures = {
                "step": len(self.steps),
                "superstep": self.superstep,
                "active": sum(s["active"] for s in summaries),
                "messages": sum(s["sent"] for s in summaries),
                "dropped": sum(s["dropped"] for s in summaries),
                "seconds": seconds,
            }
            self.steps.append(figures)
            report(figures)
            self.superstep += 1
            self.finished = _nothing_pending(summaries)
        self.previous = steps[-1]
        self.finished = self.finished or self.superstep >= self.program.max_supersteps
        return len(steps)

    def shift(self, graph: GraphInput, shift: ShiftFunction) -> None:
        """Pause here (a barrier) and move the job to ``graph``, a newer snapshot: every
        vertex of it gets ``shift(result, delta)`` as its state (:mod:`shift`); pending
        messages are dropped and the next :meth:`run` starts again at superstep 0."""
        if not isinstance(self.program, PregelProgram):
            raise TypeError("pause/shift/resume needs the per-vertex form (PregelProgram)")
        started = time.perf_counter()
        self.group.reload("stage", graph)
        counts = (self.counts[0], sum(self.group.call("staged_count")))
        shifted = sum(self.group.call("shift", shift, counts))
        self.steps.append(
            {"step": len(self.steps), "shift": shifted, "seconds": time.perf_counter() - started}
        )
        self._restart()


def _nothing_pending(summaries: list[dict[str, Any]]) -> bool:
    """Every vertex halted and nothing sent in the superstep of these summaries."""
    return sum(s["active"] for s in summaries) == 0 and sum(s["sent"] for s in summaries) == 0


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by(table.column_names[0]) if table.num_rows else table


def pregel(
    graph: GraphInput,
    program: PregelProgram | PregelArrays,
    *,
    num_partitions: int = 4,
    executor: Executor = "auto",
    progress: Progress = False,
    window: int | None = None,
) -> ModelResult:
    """Run ``program`` (per-vertex or array form) on ``graph`` (a
    :class:`~snapshot.Snapshot`, or ``(vertices, edges)`` Arrow tables) to its end; one
    row per vertex (``id`` + output columns), ``info["supersteps"]`` supersteps run.
    ``window``: supersteps run between two calls of the driver (progress is reported
    per window); default: as many as take about :data:`WINDOW_SECONDS`."""
    with PregelJob(
        graph,
        program,
        num_partitions=num_partitions,
        executor=executor,
        progress=progress,
        window=window,
    ) as job:
        return job.run()


mark_module_api(globals(), public=("pregel", "PregelJob", "PregelProgram"))
