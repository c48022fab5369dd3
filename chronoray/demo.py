"""The README's main job: a real temporal graph through the live event-sourced runtime."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rich.columns import Columns
from rich.console import Console
from rich.table import Table

from chronoray.graph import GraphCluster
from chronoray.sources import SnapEdgeSource
from chronoray.testing import (
    EdgeOracle,
    edge_oracle,
    oracle_graph,
    pair_counts,
    pair_counts_between,
)
from ephemeral.algorithms import DegreeHistogram, LivePageRank
from ephemeral.live import LiveComputation

__all__ = ["run_demo", "plot_degree_distribution", "plot_growth", "show_live_results"]


def run_demo(data: Path, out: Path, shards: int, console: Console) -> dict[str, object]:
    """Ingest ``data`` (a SNAP edge list) into ``shards`` shard actors with logs under
    ``out/logs``, check the graph against the file, print a summary, draw the degree
    distribution (``out/degree_distribution.png``), then travel back in time: snapshots
    at past times, checked against the file, and their growth (``out/growth.png``).
    A live degree histogram and live PageRank run during ingestion; their results are
    shown and checked against networkx. Last, PageRank in Spark of the graph at a past
    time, checked against networkx (``out/spark/pagerank.parquet`` and ``.png``)."""
    out.mkdir(parents=True, exist_ok=True)
    oracle = edge_oracle(data, "snap")  # the file read independently of chronoray
    with GraphCluster(log_dir=str(out / "logs"), num_shards=shards) as graph:
        live = [graph.start_computation(DegreeHistogram()), graph.start_computation(LivePageRank())]
        report = graph.ingest(SnapEdgeSource(data), progress=True)
        stats = graph.stats()
        edges = {(s, d): p["count"] for s, d, p in graph.edges()}
        degrees = graph.degrees()
        matches = edges == dict(pair_counts(oracle))
        _print_summary(console, data, out, shards, report, stats, matches)
        _print_top(console, edges, degrees)
        live_ok = show_live_results(console, live, oracle)
        picture = plot_degree_distribution(degrees, out / "degree_distribution.png", data.name)
        console.print(f"degree distribution drawn to {picture}")
        growth = _time_travel(graph, oracle, out, data.name, console)
        spark = _spark_pagerank(graph, oracle, growth[len(growth) // 2]["time"], out, console)
    if not matches or not all(g["as_in_file"] for g in growth):
        raise SystemExit("the graph does not match the file")
    if spark["max_difference"] >= 1e-6:
        raise SystemExit("Spark's PageRank differs from networkx's")
    if not live_ok:
        raise SystemExit("the live computations do not match networkx")
    return {
        "vertices": stats.vertices,
        "edges": stats.edges,
        "matches": matches,
        "growth": growth,
        "live_matches": live_ok,
        "spark_pagerank": spark,
    }


def show_live_results(console: Console, live: list[LiveComputation], oracle: EdgeOracle) -> bool:
    """Print what the live computations (a degree histogram and PageRank, running since
    before ingestion) hold now, next to networkx on the file's graph; stops them.
    Returns whether both agree (histogram exactly, PageRank within its error bound)."""
    import networkx as nx

    hist, pagerank = live
    g = oracle_graph(oracle)
    result = hist.result()
    expected_out = dict(sorted(Counter(d for _, d in g.out_degree()).items()))
    expected_in = dict(sorted(Counter(d for _, d in g.in_degree()).items()))
    hist_ok = result["out"] == expected_out and result["in"] == expected_in
    ranks = pagerank.values()
    exact = nx.pagerank(g, tol=1e-12)
    l1 = sum(abs(ranks.get(v, 0.0) - p) for v, p in exact.items())
    bound = pagerank.computation.error_bound
    ranked = Table(title="live PageRank (never logged)")
    for column in ("vertex", "live", "networkx"):
        ranked.add_column(column, justify="right")
    for vertex, rank in sorted(ranks.items(), key=lambda kv: -kv[1])[:5]:
        ranked.add_row(str(vertex), f"{rank:.6f}", f"{exact[vertex]:.6f}")
    binned = Table(title="live out-degree histogram")
    for column in ("out-degree", "vertices (live)", "networkx"):
        binned.add_column(column, justify="right")
    for degree, count in list(result["out"].items())[:5]:
        binned.add_row(str(degree), str(count), str(expected_out.get(degree, 0)))
    console.print(Columns([ranked, binned]))
    console.print(
        f"live degree histogram equals networkx: {'yes' if hist_ok else 'NO'}; "
        f"live PageRank L1 distance to networkx {l1:.1e} (bound {bound:.1e}): "
        f"{'yes' if l1 <= bound else 'NO'}"
    )
    for computation in live:
        computation.stop()
    return hist_ok and l1 <= bound


def _print_summary(
    console: Console, data: Path, out: Path, shards: int, report: Any, stats: Any, matches: bool
) -> None:
    table = Table(title=f"{data.name} on {shards} shards (logs in {out / 'logs'})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in (
        ("updates ingested", f"{report.updates:,}"),
        ("ingest time", f"{report.seconds:.2f} s"),
        ("updates / s", f"{report.rate:,.0f}"),
        ("vertices", f"{stats.vertices:,}"),
        ("edges (distinct pairs)", f"{stats.edges:,}"),
        ("behavior executions logged", f"{sum(s.worker_clock for s in stats.shards):,}"),
        ("per-pair counts equal the file", "yes" if matches else "NO"),
    ):
        table.add_row(name, value)
    console.print(table)


def _print_top(
    console: Console, edges: dict[tuple[int, int], int], degrees: dict[object, tuple[int, int]]
) -> None:
    top = Table(title="most active senders")
    for column in ("vertex", "out-degree", "in-degree", "messages sent"):
        top.add_column(column, justify="right")
    sent: Counter[object] = Counter()
    for (src, _), count in edges.items():
        sent[src] += count
    for vid, count in sent.most_common(5):
        out_deg, in_deg = degrees[vid]
        top.add_row(str(vid), str(out_deg), str(in_deg), str(count))
    console.print(top)


def _time_travel(
    graph: GraphCluster, oracle: EdgeOracle, out: Path, name: str, console: Console
) -> list[dict[str, float]]:
    """Snapshots at past times, checked against the file: a table and a growth plot."""
    times = [ts for events in oracle.values() for ts, _ in events]
    first, last = min(times), max(times)
    points = [first + (last - first) * i / 12 for i in range(1, 13)]
    table = Table(title="time travel: the graph as it was (rebuilt from the logs)")
    for column in ("time (UTC)", "vertices", "edges", "messages", "as in file", "rebuilt in"):
        table.add_column(column, justify="right")
    growth = []
    with console.status("rebuilding past snapshots..."):
        for t in points:
            snap = graph.snapshot(at=t)
            edges = (
                snap.edges().to_pydict() if snap.meta.edges else {"src": [], "dst": [], "count": []}
            )
            counts = dict(
                zip(zip(edges["src"], edges["dst"], strict=True), edges["count"], strict=True)
            )
            growth.append(
                {
                    "time": t,
                    "vertices": snap.meta.vertices,
                    "edges": snap.meta.edges,
                    "messages": sum(counts.values()),
                    "seconds": snap.meta.build_seconds,
                    "as_in_file": counts == pair_counts_between(oracle, t),
                }
            )
    for row in growth[2::3]:
        table.add_row(
            _utc(row["time"]),
            f"{row['vertices']:,}",
            f"{row['edges']:,}",
            f"{row['messages']:,}",
            "yes" if row["as_in_file"] else "NO",
            f"{row['seconds']:.2f} s",
        )
    console.print(table)
    picture = plot_growth(growth, out / "growth.png", name)
    console.print(f"growth over time drawn to {picture}")
    return growth


def _spark_pagerank(
    graph: GraphCluster, oracle: EdgeOracle, t: float, out: Path, console: Console
) -> dict[str, Any]:
    """PageRank in Spark (RayDP executors in this Ray cluster) on the snapshot at the past
    time ``t``, checked against networkx on the same cut read from the file."""
    import networkx as nx

    with console.status(f"Spark: PageRank of the graph at {_utc(t)} (Spark starts in ~10 s)..."):
        # tol 1e-8 (L1 change per iteration) bounds every rank's error by 6e-8, well
        # inside the 1e-6 the demo checks against networkx, in ~30 fewer iterations than
        # the analysis's default 1e-10 (each a Spark job of ~0.2 s)
        result = graph.analyze("pagerank", at=t, engine="spark", tol=1e-8)
        paths = result.save(out / "spark")
        ranks = result.to_pandas()
    expected = nx.pagerank(oracle_graph(oracle, t), tol=1e-12, max_iter=1000)
    got = dict(zip(ranks["vertex"], ranks["pagerank"], strict=True))
    difference = max(abs(got.get(v, 0.0) - r) for v, r in expected.items())
    if set(got) != set(expected):
        difference = float("inf")
    table = Table(title=f"Spark PageRank of the graph at {_utc(t)} ({len(got):,} vertices)")
    for column in ("vertex", "PageRank", "networkx"):
        table.add_column(column, justify="right")
    for row in result.top(10).itertuples(index=False):
        table.add_row(str(row.vertex), f"{row.pagerank:.6f}", f"{expected[row.vertex]:.6f}")
    console.print(table)
    console.print(
        f"{result.info['iterations']} iterations in {result.seconds:.1f} s; largest difference "
        f"from networkx {difference:.1e}; wrote {', '.join(str(p) for p in paths)}"
    )
    return {"time": t, "max_difference": difference, "seconds": result.seconds}


def _utc(t: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%d %H:%M")


def plot_growth(growth: list[dict[str, float]], path: Path, title: str) -> Path:
    """Vertices, edges and messages of past snapshots over time, as a PNG."""
    import datetime

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    when = [datetime.datetime.fromtimestamp(g["time"], datetime.UTC) for g in growth]
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for key in ("vertices", "edges", "messages"):
        ax.plot(when, [g[key] for g in growth], marker="o", markersize=3, label=key)
    ax.set_yscale("log")
    ax.set_ylabel("count (snapshot at that time)")
    ax.set_title(f"{title}: the graph at 12 past times")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_degree_distribution(
    degrees: dict[object, tuple[int, int]], path: Path, title: str
) -> Path:
    """Log-log in- and out-degree distributions as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for index, label in ((0, "out-degree"), (1, "in-degree")):
        counts = Counter(d[index] for d in degrees.values() if d[index] > 0)
        xs = sorted(counts)
        ax.loglog(xs, [counts[x] for x in xs], "o", markersize=3, alpha=0.7, label=label)
    ax.set_xlabel("degree (distinct neighbours)")
    ax.set_ylabel("vertices")
    ax.set_title(f"{title}: degree distribution ({len(degrees):,} vertices)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
