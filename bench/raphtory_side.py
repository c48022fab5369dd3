"""Raphtory's side of ``bench.analyses`` (run by another Python that has Raphtory, in a
subprocess; imports nothing of chronoray).

Loads a SNAP temporal edge list (``SRC DST TS``) into a Raphtory graph once, then times
``view = g.before(T + 1)`` plus PageRank, weakly connected components and single-source
shortest paths on the view (median of ``--trials``), and prints one JSON object with the
seconds and the PageRank scores (for the error against networkx). With ``--load-only``
it times the load alone (median of ``--trials`` loads, ``bench.ingest --raphtory``).

    /tmp/raphtory-venv/bin/python bench/raphtory_side.py FILE --at T --source V
    /tmp/raphtory-venv/bin/python bench/raphtory_side.py FILE --load-only --trials 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--at", type=float)
    parser.add_argument("--source", type=int)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--load-only", action="store_true", help="Time the load alone.")
    args = parser.parse_args()

    import raphtory
    from raphtory import algorithms

    if args.load_only:
        loads = [_load(args.path) for _ in range(args.trials)]
        graph = loads[-1][0]
        seconds = statistics.median(load for _, load in loads)
        print(
            json.dumps(
                {
                    "version": raphtory.__version__,
                    "load_seconds": seconds,
                    "edges": graph.count_edges(),
                }
            )
        )
        return
    if args.at is None or args.source is None:
        parser.error("--at and --source are required (unless --load-only)")
    graph, load = _load(args.path)
    end = int(args.at) + 1

    def timed(run):  # type: ignore[no-untyped-def]
        seconds, result = [], None
        for _ in range(args.trials):
            t = time.perf_counter()
            result = run()
            seconds.append(time.perf_counter() - t)
        return statistics.median(seconds), result

    pagerank_seconds, ranks = timed(
        lambda: algorithms.pagerank(graph.before(end), iter_count=1000, max_diff=1e-10)
    )
    wcc_seconds, _ = timed(lambda: algorithms.weakly_connected_components(graph.before(end)))
    bfs_seconds, _ = timed(
        lambda: algorithms.single_source_shortest_path(graph.before(end), args.source)
    )
    view = graph.before(end)
    print(
        json.dumps(
            {
                "version": raphtory.__version__,
                "load_seconds": load,
                "vertices": view.count_nodes(),
                "edges": view.count_edges(),
                "pagerank_seconds": pagerank_seconds,
                "wcc_seconds": wcc_seconds,
                "bfs_seconds": bfs_seconds,
                "ranks": {str(k.name): float(v["pagerank_score"]) for k, v in ranks.items()},
            }
        )
    )


def _load(path: str):  # type: ignore[no-untyped-def]
    """The file read by pyarrow's CSV reader and bulk-loaded into a new Raphtory graph;
    the graph and the seconds both took."""
    import pyarrow.csv as csv
    import raphtory

    started = time.perf_counter()
    table = csv.read_csv(
        path,
        read_options=csv.ReadOptions(column_names=["src", "dst", "ts"]),
        parse_options=csv.ParseOptions(delimiter=" "),
    )
    graph = raphtory.Graph()
    graph.load_edges(data=table, time="ts", src="src", dst="dst")  # prints a progress bar
    return graph, time.perf_counter() - started


if __name__ == "__main__":
    main()
