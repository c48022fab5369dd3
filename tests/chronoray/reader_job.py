"""A second driver, run as a ``ray job submit`` job by test_cluster_jobs.py while another
job ingests: it attaches to the named graph, subscribes before ingestion starts (it writes
``argv[3]`` once subscribed), takes a time snapshot at ``argv[2]`` while the other driver
is still feeding, and at the end checks the notifications against the graph. Prints one
``RESULT {...}`` line."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import chronoray as cr


def main(name: str, at: float, ready: str, edges: int) -> None:
    g = cr.GraphCluster.attach(name)
    sub = g.subscribe(buffer=200_000)  # no item missed while it snapshots
    lagged = 0
    Path(ready).write_text("subscribed")
    last_out: dict[int, int] = {}
    snapshot = None
    refusals = 0
    while True:
        for item in sub.poll(timeout=0.2):
            if isinstance(item, cr.Lagged):
                lagged += item.missed
            elif item.state is not None:
                last_out[item.vertex] = item.state["out_degree"]
        if snapshot is None and g.stats().edges > 0:  # the other driver's source has begun
            try:
                snapshot = g.snapshot(at=at, timeout=5)
            except cr.SnapshotNotReady:
                refusals += 1  # the ingesting driver has not read past `at` yet
        if snapshot is not None and g.stats().edges == edges:
            break
        time.sleep(0.05)
    g.wait_idle()
    for item in sub.drain():
        if isinstance(item, cr.Lagged):
            lagged += item.missed
        elif item.state is not None:
            last_out[item.vertex] = item.state["out_degree"]
    sub.close()
    pairs = snapshot.edges().to_pydict()
    degrees = {v: o for v, (o, _) in g.degrees().items()}
    result = {
        "refusals": refusals,
        "lagged": lagged,
        "snapshot_pairs": [
            [s, d, c] for s, d, c in zip(pairs["src"], pairs["dst"], pairs["count"], strict=True)
        ],
        "notified_out_degrees_equal": last_out == degrees,
        "notified_vertices": len(last_out),
    }
    g.close()
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
