"""chronoray, through its public API only: ``GraphCluster.ingest`` of the GraphTides
file (the stream itself, not the Parquet: its own source), ``snapshot(at=T)``, its
PageRank and components on the snapshot (``cr.algorithms``, on the engine they pick by
the snapshot's size, as a user gets them; the notes say which), and -- asked with
``"spark": true`` -- the same two as Spark analyses through RayDP (``g.analyze``)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import chronoray as cr
from bench.report import rss_bytes
from bench.systems.common import run


def start(shared: dict[str, Any]) -> None:
    raw = shared["params"].raw
    shared["dir"] = Path(tempfile.mkdtemp(prefix="chronoray-compare-"))
    shared["graph"] = cr.GraphCluster(
        num_shards=raw.get("shards", 2), log_dir=str(shared["dir"] / "logs")
    )
    shared["versions"]["chronoray"] = cr.__version__


def ingest(shared: dict[str, Any]) -> None:
    raw = shared["params"].raw
    report = shared["graph"].ingest(cr.GraphTidesSource(raw["tides"]))
    shared["notes"] = {"updates": report.updates}


def view(shared: dict[str, Any]) -> None:
    snap = shared["graph"].snapshot(at=shared["params"].raw["at_time"])
    vertices, edges = snap.vertices(), snap.edges()
    shared["snapshot"] = snap
    shared["edges"] = (edges["src"].to_pylist(), edges["dst"].to_pylist())
    shared["notes"]["snapshot_vertices"] = vertices.num_rows


def pagerank(shared: dict[str, Any]) -> None:
    ranks = cr.algorithms.pagerank(shared["snapshot"], tol=shared["params"].tol)
    shared["ranks"] = ranks.to_dict("rank")
    shared["notes"]["pagerank_engine"] = ranks.info.get("engine")


def components(shared: dict[str, Any]) -> None:
    result = cr.algorithms.connected_components(shared["snapshot"])
    shared["components"] = result.to_dict("component")
    shared["notes"]["components_engine"] = result.info.get("engine")


def shard_memory(shared: dict[str, Any]) -> None:
    """The shard processes' resident memory, where chronoray keeps the graph."""
    import ray

    pids = ray.get([shard.pid.remote() for shard in shared["graph"].shards])
    shared["notes"]["shard_rss_bytes"] = sum(rss_bytes(pid) for pid in pids)


def spark_session(shared: dict[str, Any]) -> None:
    shared["graph"].spark()


def spark_pagerank(shared: dict[str, Any]) -> None:
    at, tol = shared["params"].raw["at_time"], shared["params"].tol
    frame = shared["graph"].analyze("pagerank", at=at, tol=tol).to_pandas()
    shared["spark_ranks"] = dict(zip(frame["vertex"], frame["pagerank"], strict=True))


def spark_components(shared: dict[str, Any]) -> None:
    frame = shared["graph"].analyze("wcc", at=shared["params"].raw["at_time"]).to_pandas()
    components = dict(zip(frame["vertex"], frame["component"], strict=True))
    shared["more_answers"] = {"chronoray-spark": (shared["spark_ranks"], components)}


def stop(shared: dict[str, Any]) -> None:
    shared["graph"].close()
    shutil.rmtree(shared["dir"], ignore_errors=True)


if __name__ == "__main__":
    import json
    import sys

    # the first snapshot and the first analyses also start Ray workers: timed apart
    phases = [
        ("start", start),
        ("ingest", ingest),
        ("view at T (cold)", view),
        ("pagerank (cold)", pagerank),
        ("components (cold)", components),
        ("view at T", view),
        ("pagerank", pagerank),
        ("components", components),
        ("memory", shard_memory),
    ]
    if json.loads(sys.argv[1]).get("spark"):
        phases += [
            ("spark session", spark_session),
            ("spark pagerank", spark_pagerank),
            ("spark components", spark_components),
        ]
    run("chronoray", [*phases, ("stop", stop)])
