"""Spark analyses of snapshots, run from the Ray driver: results as Spark DataFrames,
pandas, Parquet and pictures.

``GraphCluster.analyze`` and ``chronoray analyze`` both go through :func:`run_analysis`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from snapshot.snapshot import Snapshot

__all__ = ["ANALYSES", "AnalysisResult", "run_analysis"]

ANALYSES: dict[str, str] = {
    "pagerank": "PageRank (networkx's definition) per vertex: vertex, pagerank",
    "wcc": "weakly connected components: vertex, component (smallest id in it)",
    "degrees": "in/out degree per vertex, and their distributions",
    "triangles": "triangles per vertex of the undirected simple graph",
    "activity": "activity per time bucket over a window or a series of times",
}
"""Analysis name -> what it computes."""


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

    def describe(self) -> str:
        """Which cut was analysed, in words."""
        return f"{self.name} at {_describe(self.snapshots)}"

    def top(self, k: int = 10) -> Any:
        """The ``k`` rows people look at first (highest rank, largest component...)."""
        table = self.to_pandas()
        if self.name == "pagerank":
            return table.nlargest(k, "pagerank")
        if self.name == "wcc":
            sizes = table.groupby("component").size().rename("vertices").reset_index()
            return sizes.sort_values(["vertices", "component"], ascending=[False, True]).head(k)
        if self.name == "degrees":
            return table.sort_values(["in_degree", "vertex"], ascending=[False, True]).head(k)
        if self.name == "triangles":
            return table.sort_values(["triangles", "vertex"], ascending=[False, True]).head(k)
        return table

    def save(self, out: str | Path) -> list[Path]:
        """Write ``OUT/<name>.parquet`` (and ``OUT/<name>_<extra>.parquet``) and
        ``OUT/<name>.png``; returns the paths written."""
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
    series for ``activity``); ``params`` go to the analysis function (e.g. ``alpha``,
    ``weight``, ``tol`` for PageRank)."""
    import spark_bridge as sb

    if name not in ANALYSES:
        raise ValueError(f"unknown analysis {name!r}; choose from {', '.join(ANALYSES)}")
    series = [snapshots] if isinstance(snapshots, Snapshot) else list(snapshots)
    if name != "activity" and len(series) != 1:
        raise ValueError(f"{name} analyses one snapshot, got {len(series)}")
    started = time.perf_counter()
    info: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if name == "pagerank":
        runs: list[sb.PageRankRun] = []
        frame = sb.pagerank(spark, series[0], run=runs, **params).localCheckpoint()
        info.update(iterations=runs[0].iterations, converged=runs[0].converged)
    elif name == "wcc":
        frame = sb.weakly_connected_components(spark, series[0], **params)
        info["components"] = frame.select("component").distinct().count()
    elif name == "degrees":
        frame = sb.degrees(spark, series[0], **params).localCheckpoint()
        extra["distribution"] = sb.degree_distribution(spark, per_vertex=frame)
    elif name == "triangles":
        frame = sb.triangles(spark, series[0], **params).localCheckpoint()
        info["triangles"] = frame.groupBy().sum("triangles").first()[0] // 3
    else:
        frame = sb.activity(spark, series, **params).localCheckpoint()
    info["vertices"] = frame.count() if name != "activity" else None
    return AnalysisResult(name, frame, series, info, extra, seconds=time.perf_counter() - started)


def _plot(result: AnalysisResult, extras: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = result.to_pandas()
    when = _describe(result.snapshots)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if result.name == "pagerank":
        ranks = table["pagerank"].sort_values(ascending=False).to_numpy()
        ax.loglog(range(1, len(ranks) + 1), ranks, ".", markersize=3)
        ax.set(xlabel="position", ylabel="PageRank", title=f"PageRank by position, {when}")
    elif result.name == "wcc":
        sizes = table.groupby("component").size().value_counts().sort_index()
        ax.loglog(sizes.index, sizes.to_numpy(), "o")
        ax.set(
            xlabel="component size (vertices)",
            ylabel="components",
            title=f"weakly connected components, {when}",
        )
    elif result.name == "degrees":
        dist = extras["distribution"]
        positive = dist[dist["degree"] > 0]
        for column, label in (("in_vertices", "in-degree"), ("out_vertices", "out-degree")):
            kept = positive[positive[column] > 0]
            ax.loglog(kept["degree"], kept[column], "o", markersize=3, label=label)
        ax.set(
            xlabel="degree (distinct neighbours)",
            ylabel="vertices",
            title=f"degree distribution, {when}",
        )
        ax.legend()
    elif result.name == "triangles":
        counts = table["triangles"][table["triangles"] > 0].value_counts().sort_index()
        ax.loglog(counts.index, counts.to_numpy(), "o", markersize=3)
        ax.set(
            xlabel="triangles through the vertex",
            ylabel="vertices",
            title=f"triangles per vertex, {when} ({result.info['triangles']:,} in all)",
        )
    else:
        when_axis = table["time"]
        if when_axis.min() > 1e8:  # Unix seconds (both shipped data sets): show dates
            import pandas as pd

            when_axis = pd.to_datetime(when_axis, unit="s")
            fig.autofmt_xdate()
        for column in ("bucket_messages", "new_edges", "active_vertices"):
            ax.plot(when_axis, table[column], marker="o", label=column.replace("_", " "))
        ax.set(xlabel="end of bucket", ylabel="per bucket", title=f"activity per bucket, {when}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _describe(snapshots: list[Snapshot]) -> str:
    meta = snapshots[-1].meta
    if len(snapshots) > 1:
        return f"{len(snapshots)} cuts, t = {snapshots[0].meta.at:g} .. {meta.at:g}"
    if meta.kind == "time":
        return f"t = {meta.at:g}"
    if meta.kind == "window":
        return f"window {meta.window}"
    return f"cut {meta.cut}"
