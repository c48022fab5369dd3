"""Spark analyses of snapshots, run from the Ray driver: results as Spark DataFrames,
pandas, Parquet and pictures.

Every analysis is registered once in :data:`ANALYSES` (name -> :class:`Analysis`: how to
run it, which rows to show first, how to draw it). ``GraphCluster.analyze``, the
``chronoray analyze`` choices and :class:`AnalysisResult` all read the registry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from snapshot.snapshot import Snapshot

__all__ = ["ANALYSES", "ANALYSIS_NAMES", "Analysis", "AnalysisResult", "register", "run_analysis"]

Outcome = tuple[Any, dict[str, Any], dict[str, Any]]
"""What an analysis' ``run`` returns: its frame, small facts (``info``), companion frames."""


@dataclass(frozen=True)
class Analysis:
    """One registered analysis.

    ``run(spark, snapshots, params)`` computes it (``snapshots``: one, or a series when
    ``series``); ``top(table, k)`` picks the rows people look at first; ``plot(ax, table,
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

    ``frame`` is the Spark DataFrame (still in Spark: keep computing on it); ``extra``
    holds companion frames (e.g. ``degrees``' distribution); ``info`` small facts (PageRank
    iterations, component and triangle totals); ``snapshots`` the cuts analysed.
    """

    name: str
    frame: Any
    snapshots: list[Snapshot]
    info: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    _pandas: Any = field(default=None, repr=False)

    def to_pandas(self) -> Any:
        """``frame`` as pandas (Spark -> Ray object store -> pandas; computed once)."""
        if self._pandas is None:
            from spark_bridge.convert import to_pandas

            self._pandas = to_pandas(self.frame)
        return self._pandas

    def to_arrow(self) -> Any:
        """``frame`` as an Arrow table (through the Ray object store)."""
        import pyarrow as pa

        return pa.Table.from_pandas(self.to_pandas(), preserve_index=False)

    @property
    def when(self) -> str:
        """Which cut was analysed, in words (``t = ...``, a window, a clock cut)."""
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

        from spark_bridge.convert import to_pandas

        directory = Path(out)
        directory.mkdir(parents=True, exist_ok=True)
        written = [directory / f"{self.name}.parquet"]
        pq.write_table(self.to_arrow(), written[0])
        extras = {}
        for key, frame in self.extra.items():
            extras[key] = to_pandas(frame)
            path = directory / f"{self.name}_{key}.parquet"
            extras[key].to_parquet(path, index=False)
            written.append(path)
        written.append(_plot(self, extras, directory / f"{self.name}.png"))
        return written


def run_analysis(
    spark: Any, name: str, snapshots: Snapshot | Sequence[Snapshot], **params: Any
) -> AnalysisResult:
    """Run analysis ``name`` (one of :data:`ANALYSES`) in Spark on ``snapshots`` (one, or a
    series for a series analysis such as ``activity``); ``params`` go to the analysis
    function (e.g. ``alpha``, ``weight``, ``tol`` for PageRank)."""
    from snapshot.snapshot import Snapshot

    analysis = ANALYSES.get(name)
    if analysis is None:
        raise ValueError(f"unknown analysis {name!r}; choose from {', '.join(ANALYSES)}")
    series = [snapshots] if isinstance(snapshots, Snapshot) else list(snapshots)
    if not analysis.series and len(series) != 1:
        raise ValueError(f"{name} analyses one snapshot, got {len(series)}")
    started = time.perf_counter()
    frame, info, extra = analysis.run(spark, series, params)
    if not analysis.series:
        info["vertices"] = frame.count()
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
    )
)
register(
    Analysis(
        "wcc",
        "weakly connected components: vertex, component (smallest id in it)",
        _wcc,
        _top_components,
        _plot_wcc,
        params={"max_iter": int},
    )
)
register(
    Analysis(
        "degrees",
        "in/out degree per vertex, and their distributions",
        _degrees,
        _largest("in_degree"),
        _plot_degrees,
    )
)
register(
    Analysis(
        "triangles",
        "triangles per vertex of the undirected simple graph",
        _triangles,
        _largest("triangles"),
        _plot_triangles,
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
    )
)

ANALYSIS_NAMES: list[str] = list(ANALYSES)
"""The registered names (the CLI's choices)."""


def _describe(snapshots: list[Snapshot]) -> str:
    meta = snapshots[-1].meta
    if len(snapshots) > 1:
        return f"{len(snapshots)} cuts, t = {snapshots[0].meta.at:g} .. {meta.at:g}"
    if meta.kind == "time":
        return f"t = {meta.at:g}"
    if meta.kind == "window":
        return f"window {meta.window}"
    return f"cut {meta.cut}"
