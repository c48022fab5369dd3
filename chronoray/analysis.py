"""Analyses of snapshots, run from the Ray driver on one of three engines: vectorized
kernels in this process (``local``), the processing models on Ray actors (``ray``) or Spark
(RayDP) in the same cluster (``spark``); results as Arrow or Spark DataFrames, pandas,
Parquet and pictures.

Every analysis is registered once in :data:`ANALYSES` (name -> :class:`Analysis`: how to
run it on each engine, which rows to show first, how to draw it), as networkx registers
its backends: one name, several implementations, the same columns from each.
``GraphCluster.analyze``, the ``chronoray analyze`` choices and :class:`AnalysisResult` all
read the registry. Unless told (``engine=``), :func:`choose_analysis_engine` picks by the
snapshot's size -- the kernel while the graph fits the driver, the Ray models while it fits
the cluster's memory, Spark (which spills to disk) above; that is the engines' order of
speed at every size measured (``bench/results/analyses.md``, the crossover) -- and the
result says which engine ran and why (``info["engine"]``, ``info["engine_reason"]``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from shards.watermark import show_date
from snapshot.algorithms.csr import graph_size
from snapshot.algorithms.engine import LOCAL_MAX_EDGES, EngineChoice

if TYPE_CHECKING:
    from snapshot.snapshot import Snapshot

__all__ = [
    "ANALYSES",
    "ANALYSIS_NAMES",
    "ENGINES",
    "Analysis",
    "AnalysisResult",
    "choose_analysis_engine",
    "register",
    "run_analysis",
]

Outcome = tuple[Any, dict[str, Any], dict[str, Any]]
"""What an analysis' implementation returns: its frame (Spark DataFrame or Arrow table),
small facts (``info``), companion frames."""

ENGINES = ("local", "ray", "spark")
"""The engines an analysis can run on (``engine="auto"`` chooses among them)."""

RAY_BYTES_PER_EDGE = 200
"""What a Ray model holds per edge, all partitions together (the Arrow pieces, the
partition's index arrays, the messages in flight), with room to spare."""


@dataclass(frozen=True)
class Analysis:
    """One registered analysis.

    ``run(spark, snapshots, params)`` computes it in Spark (``snapshots``: one, or a
    series when ``series``); ``local(snapshots, params)`` with the kernels and
    ``ray(snapshots, params)`` with the processing models (if it has them), with the same
    columns; ``top(table, k)`` picks the rows people look at first; ``plot(ax, table,
    extras, result)`` draws it on a matplotlib axis; ``params`` are the parameters it
    takes, with their types (what the gateway checks a request's parameters against).
    """

    name: str
    description: str
    run: Callable[[Any, list[Any], dict[str, Any]], Outcome]
    top: Callable[[Any, int], Any]
    plot: Callable[[Any, Any, dict[str, Any], AnalysisResult], None]
    series: bool = False
    params: Mapping[str, type] = field(default_factory=dict)
    local: Callable[[list[Any], dict[str, Any]], Outcome] | None = None
    ray: Callable[[list[Any], dict[str, Any]], Outcome] | None = None

    def engines(self) -> list[str]:
        """The engines this analysis runs on."""
        have = {"local": self.local, "ray": self.ray, "spark": self.run}
        return [e for e in ENGINES if have[e] is not None]


ANALYSES: dict[str, Analysis] = {}
"""Analysis name -> :class:`Analysis`, in registration order."""


def register(analysis: Analysis) -> Analysis:
    """Add ``analysis`` to :data:`ANALYSES` (a name is registered once)."""
    if analysis.name in ANALYSES:
        raise ValueError(f"analysis {analysis.name!r} is registered already")
    ANALYSES[analysis.name] = analysis
    return analysis


@dataclass
class AnalysisResult:
    """One analysis of one snapshot (or, for ``activity``, a series of them).

    ``frame`` is the Spark DataFrame (engine ``spark``: still in Spark, keep computing on
    it) or an Arrow table (``local``, ``ray``); ``extra`` holds companion frames (e.g.
    ``degrees``' distribution); ``info`` small facts (PageRank iterations, component and
    triangle totals, ``engine`` and ``engine_reason``); ``snapshots`` the cuts analysed.
    """

    name: str
    frame: Any
    snapshots: list[Snapshot]
    info: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    _pandas: Any = field(default=None, repr=False)

    @property
    def engine(self) -> str:
        """The engine that ran it (``local``, ``ray`` or ``spark``)."""
        return str(self.info.get("engine", "spark"))

    def to_pandas(self) -> Any:
        """``frame`` as pandas (from Spark through the Ray object store; computed once)."""
        if self._pandas is None:
            self._pandas = _as_pandas(self.frame)
        return self._pandas

    def to_arrow(self) -> Any:
        """``frame`` as an Arrow table (from Spark through the Ray object store)."""
        if isinstance(self.frame, pa.Table):
            return self.frame
        return pa.Table.from_pandas(self.to_pandas(), preserve_index=False)

    @property
    def when(self) -> str:
        """Which cut was analysed, in words (its time as an ISO 8601 date when it reads as Unix
        seconds, a window, a clock cut)."""
        return _describe(self.snapshots)

    def describe(self) -> str:
        """The analysis and its cut, in words."""
        return f"{self.name} at {self.when}"

    def top(self, k: int = 10) -> Any:
        """The ``k`` rows people look at first (highest rank, largest component...)."""
        return ANALYSES[self.name].top(self.to_pandas(), k)

    def save(self, out: str | Path) -> list[Path]:
        """Write ``OUT/<name>.parquet`` (and ``OUT/<name>_<extra>.parquet``) and
        ``OUT/<name>.png``; returns the paths written."""
        import pyarrow.parquet as pq

        directory = Path(out)
        directory.mkdir(parents=True, exist_ok=True)
        written = [directory / f"{self.name}.parquet"]
        pq.write_table(self.to_arrow(), written[0])
        extras = {}
        for key, frame in self.extra.items():
            extras[key] = _as_pandas(frame)
            path = directory / f"{self.name}_{key}.parquet"
            extras[key].to_parquet(path, index=False)
            written.append(path)
        written.append(_plot(self, extras, directory / f"{self.name}.png"))
        return written


def _as_pandas(frame: Any) -> Any:
    if isinstance(frame, pa.Table):
        return frame.to_pandas()
    from spark_bridge.convert import to_pandas

    return to_pandas(frame)


def choose_analysis_engine(
    analysis: Analysis, series: list[Any], engine: str, cluster_memory: float | None = None
) -> EngineChoice:
    """The engine for ``analysis`` of ``series``: ``engine`` if given (refused if the
    analysis has no implementation there), else the kernel while the largest snapshot has
    at most :data:`~snapshot.algorithms.engine.LOCAL_MAX_EDGES` edges, the Ray models
    while ``RAY_BYTES_PER_EDGE`` per edge fit half the cluster's memory
    (``cluster_memory`` bytes; default: Ray's figure), Spark above.

    >>> import pyarrow as pa
    >>> tiny = (pa.table({"id": [1]}), pa.table({"src": [1], "dst": [1]}))
    >>> choose_analysis_engine(ANALYSES["wcc"], [tiny], "auto").engine
    'local'
    """
    if engine != "auto":
        if engine not in ENGINES:
            raise ValueError(
                f"engine must be 'auto' or one of {', '.join(ENGINES)}, got {engine!r}"
            )
        if engine not in analysis.engines():
            raise ValueError(
                f"{analysis.name} has no {engine} implementation; it runs on "
                f"{', '.join(analysis.engines())}"
            )
        return EngineChoice(engine, f"asked for (engine={engine!r})")
    edges = max(graph_size(snapshot)[1] for snapshot in series)
    if edges <= LOCAL_MAX_EDGES and analysis.local is not None:
        return EngineChoice(
            "local",
            f"{edges:,} edges <= {LOCAL_MAX_EDGES:,}: the kernel in this process is fastest "
            "at this size (no Spark start, no per-iteration job)",
        )
    if analysis.ray is not None:
        if cluster_memory is None:
            import ray

            cluster_memory = float(ray.cluster_resources().get("memory", 0.0))
        if edges * RAY_BYTES_PER_EDGE <= cluster_memory / 2:
            return EngineChoice(
                "ray",
                f"{edges:,} edges: too many for one process, and they fit the Ray "
                "cluster's memory: the array-form models over the cluster",
            )
    return EngineChoice(
        "spark",
        f"{edges:,} edges: more than one process or the Ray models hold; Spark spreads them "
        "over the cluster and spills to disk",
    )


def run_analysis(
    spark: Any,
    name: str,
    snapshots: Snapshot | Sequence[Snapshot],
    *,
    engine: str = "auto",
    **params: Any,
) -> AnalysisResult:
    """Run analysis ``name`` (one of :data:`ANALYSES`) on ``snapshots`` (one, or a series
    for a series analysis such as ``activity``) on ``engine`` (``auto``: by size, see
    :func:`choose_analysis_engine`); ``params`` go to the analysis function (e.g.
    ``alpha``, ``weight``, ``tol`` for PageRank). ``spark`` is the Spark session, or a
    function that returns it (called only if Spark runs).

    >>> import pyarrow as pa
    >>> graph = (pa.table({"id": [1, 2, 3]}), pa.table({"src": [1, 2], "dst": [2, 1]}))
    >>> result = run_analysis(None, "wcc", [graph])
    >>> result.engine, result.to_pandas().values.tolist(), result.info["components"]
    ('local', [[1, 1], [2, 1], [3, 3]], 2)
    """
    from snapshot.snapshot import Snapshot

    analysis = ANALYSES.get(name)
    if analysis is None:
        raise ValueError(f"unknown analysis {name!r}; choose from {', '.join(ANALYSES)}")
    series = [snapshots] if isinstance(snapshots, Snapshot) else list(snapshots)
    if not analysis.series and len(series) != 1:
        raise ValueError(f"{name} analyses one snapshot, got {len(series)}")
    choice = choose_analysis_engine(analysis, series, engine)
    started = time.perf_counter()
    if choice.engine == "spark":
        session = spark() if callable(spark) else spark
        frame, info, extra = analysis.run(session, series, params)
    else:
        implementation = analysis.local if choice.engine == "local" else analysis.ray
        assert implementation is not None
        frame, info, extra = implementation(series, params)
    if not analysis.series:
        info["vertices"] = frame.num_rows if isinstance(frame, pa.Table) else frame.count()
    info.update(choice.info())
    return AnalysisResult(name, frame, series, info, extra, seconds=time.perf_counter() - started)


def _pagerank(spark: Any, series: list[Any], params: dict[str, Any]) -> Outcome:
    import spark_bridge as sb

    runs: list[sb.PageRankRun] = []
    frame = sb.pagerank(spark, series[0], run=runs, **params).localCheckpoint()
    return frame, {"iterations": runs[0].iterations, "converged": runs[0].converged}, {}


def _wcc(spark: Any, series: list[Any], params: dict[str, Any]) -> Outcome:
    import spark_bridge as sb

    frame = sb.weakly_connected_components(spark, series[0], **params)
    return frame, {"components": frame.select("component").distinct().count()}, {}


def _degrees(spark: Any, series: list[Any], params: dict[str, Any]) -> Outcome:
    import spark_bridge as sb

    frame = sb.degrees(spark, series[0], **params).localCheckpoint()
    return frame, {}, {"distribution": sb.degree_distribution(spark, per_vertex=frame)}


def _triangles(spark: Any, series: list[Any], params: dict[str, Any]) -> Outcome:
    import spark_bridge as sb

    frame = sb.triangles(spark, series[0], **params).localCheckpoint()
    return frame, {"triangles": frame.groupBy().sum("triangles").first()[0] // 3}, {}


def _activity(spark: Any, series: list[Any], params: dict[str, Any]) -> Outcome:
    import spark_bridge as sb

    return sb.activity(spark, series, **params).localCheckpoint(), {}, {}


def _vertex_table(table: pa.Table, **renamed: str) -> pa.Table:
    """A kernel's table with the Spark analyses' column names (``id`` -> ``vertex``)."""
    names = {"id": "vertex", **renamed}
    return table.rename_columns([names.get(c, c) for c in table.column_names])


def _pagerank_kernel(series: list[Any], params: dict[str, Any], engine: str) -> Outcome:
    from snapshot.algorithms import pagerank

    known = {"alpha": "alpha", "tol": "tol", "max_iter": "max_iterations", "weight": "weight"}
    unknown = set(params) - set(known)
    if unknown:
        raise ValueError(f"pagerank takes {', '.join(known)}; got {', '.join(sorted(unknown))}")
    args = {known[k]: v for k, v in params.items() if v is not None}
    result = pagerank(series[0], engine=engine, **args)
    iterations = result.info.get("iterations", result.info.get("supersteps"))
    # the kernel raises unless it converged; a Pregel job may stop at its superstep limit
    last = result.info.get("aggregates", {}).get("change", 0.0)
    info = {"iterations": iterations, "converged": last <= args.get("tol", 1e-10)}
    return _vertex_table(result.table, rank="pagerank"), info, {}


def _wcc_kernel(series: list[Any], params: dict[str, Any], engine: str) -> Outcome:
    import pyarrow.compute as pc

    from snapshot.algorithms import connected_components

    result = connected_components(series[0], engine=engine)
    table = _vertex_table(result.table)
    return table, {"components": len(pc.unique(table["component"]))}, {}


def _degrees_kernel(series: list[Any], params: dict[str, Any]) -> Outcome:
    from snapshot.algorithms import degree_distribution, degrees

    table = _vertex_table(degrees(series[0]).table)
    return table, {}, {"distribution": degree_distribution(series[0]).table}


def _triangles_kernel(series: list[Any], params: dict[str, Any]) -> Outcome:
    import pyarrow.compute as pc

    from snapshot.algorithms import triangles

    table = _vertex_table(triangles(series[0]).table)
    return table, {"triangles": pc.sum(table["triangles"]).as_py() // 3}, {}


def _activity_kernel(series: list[Any], params: dict[str, Any]) -> Outcome:
    from snapshot.algorithms import activity

    return activity(series).table, {}, {}


def _on(engine: str, implementation: Callable[..., Outcome]) -> Callable[..., Outcome]:
    def run(series: list[Any], params: dict[str, Any]) -> Outcome:
        return implementation(series, params, engine)

    return run


def _largest(column: str) -> Callable[[Any, int], Any]:
    def top(table: Any, k: int) -> Any:
        return table.sort_values([column, "vertex"], ascending=[False, True]).head(k)

    return top


def _top_components(table: Any, k: int) -> Any:
    sizes = table.groupby("component").size().rename("vertices").reset_index()
    return sizes.sort_values(["vertices", "component"], ascending=[False, True]).head(k)


def _plot_pagerank(ax: Any, table: Any, extras: dict[str, Any], result: AnalysisResult) -> None:
    ranks = table["pagerank"].sort_values(ascending=False).to_numpy()
    ax.loglog(range(1, len(ranks) + 1), ranks, ".", markersize=3)
    ax.set(xlabel="position", ylabel="PageRank", title=f"PageRank by position, {result.when}")


def _plot_wcc(ax: Any, table: Any, extras: dict[str, Any], result: AnalysisResult) -> None:
    sizes = table.groupby("component").size().value_counts().sort_index()
    ax.loglog(sizes.index, sizes.to_numpy(), "o")
    ax.set(
        xlabel="component size (vertices)",
        ylabel="components",
        title=f"weakly connected components, {result.when}",
    )


def _plot_degrees(ax: Any, table: Any, extras: dict[str, Any], result: AnalysisResult) -> None:
    dist = extras["distribution"]
    positive = dist[dist["degree"] > 0]
    for column, label in (("in_vertices", "in-degree"), ("out_vertices", "out-degree")):
        kept = positive[positive[column] > 0]
        ax.loglog(kept["degree"], kept[column], "o", markersize=3, label=label)
    ax.set(
        xlabel="degree (distinct neighbours)",
        ylabel="vertices",
        title=f"degree distribution, {result.when}",
    )
    ax.legend()


def _plot_triangles(ax: Any, table: Any, extras: dict[str, Any], result: AnalysisResult) -> None:
    counts = table["triangles"][table["triangles"] > 0].value_counts().sort_index()
    ax.loglog(counts.index, counts.to_numpy(), "o", markersize=3)
    ax.set(
        xlabel="triangles through the vertex",
        ylabel="vertices",
        title=f"triangles per vertex, {result.when} ({result.info['triangles']:,} in all)",
    )


def _plot_activity(ax: Any, table: Any, extras: dict[str, Any], result: AnalysisResult) -> None:
    when_axis = table["time"]
    if when_axis.min() > 1e8:  # Unix seconds (both shipped data sets): show dates
        import pandas as pd

        when_axis = pd.to_datetime(when_axis, unit="s")
        ax.figure.autofmt_xdate()
    for column in ("bucket_messages", "new_edges", "active_vertices"):
        ax.plot(when_axis, table[column], marker="o", label=column.replace("_", " "))
    ax.set(xlabel="end of bucket", ylabel="per bucket", title=f"activity per bucket, {result.when}")
    ax.legend()


def _plot(result: AnalysisResult, extras: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ANALYSES[result.name].plot(ax, result.to_pandas(), extras, result)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


register(
    Analysis(
        "pagerank",
        "PageRank (networkx's definition) per vertex: vertex, pagerank",
        _pagerank,
        lambda table, k: table.nlargest(k, "pagerank"),
        _plot_pagerank,
        params={"alpha": float, "weight": str, "tol": float, "max_iter": int},
        local=_on("local", _pagerank_kernel),
        ray=_on("ray", _pagerank_kernel),
    )
)
register(
    Analysis(
        "wcc",
        "weakly connected components: vertex, component (smallest id in it)",
        _wcc,
        _top_components,
        _plot_wcc,
        local=_on("local", _wcc_kernel),
        ray=_on("ray", _wcc_kernel),
    )
)
register(
    Analysis(
        "degrees",
        "in/out degree per vertex, and their distributions",
        _degrees,
        _largest("in_degree"),
        _plot_degrees,
        local=_degrees_kernel,
    )
)
register(
    Analysis(
        "triangles",
        "triangles per vertex of the undirected simple graph",
        _triangles,
        _largest("triangles"),
        _plot_triangles,
        local=_triangles_kernel,
    )
)
register(
    Analysis(
        "activity",
        "activity per time bucket over a window or a series of times",
        _activity,
        lambda table, k: table,
        _plot_activity,
        series=True,
        local=_activity_kernel,
    )
)

ANALYSIS_NAMES: list[str] = list(ANALYSES)
"""The registered names (the CLI's choices)."""


def _describe(snapshots: list[Snapshot]) -> str:
    meta = snapshots[-1].meta
    if len(snapshots) > 1:
        return f"{len(snapshots)} cuts, {show_date(snapshots[0].meta.at)} .. {show_date(meta.at)}"
    if meta.kind == "time":
        return show_date(meta.at)
    if meta.kind == "window":
        return f"window {meta.window}"
    return f"cut {meta.cut}"
