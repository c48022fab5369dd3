"""``chronoray snapshot --log-dir`` on a graph that is not running reads its logs in the
command's own process: no Ray, the same tables as the graph gave while it ran."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import ray
from click.testing import CliRunner

import chronoray as cr
from chronoray.cli import main
from chronoray.datasets import collegemsg_path

AT = 1_085_000_000


def test_a_snapshot_of_a_stopped_graph_needs_no_ray(tmp_path: Path) -> None:
    log_dir = tmp_path / "graph"
    with cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(log_dir)) as graph:
        graph.ingest(cr.SnapEdgeSource(collegemsg_path()))
        vertices, edges = graph.snapshot(at=AT).to_pandas()
    assert not ray.is_initialized()
    out = tmp_path / "snap"
    result = CliRunner().invoke(
        main, ["snapshot", "--at", str(AT), "--out", str(out), "--log-dir", str(log_dir)]
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())  # the console wraps lines
    assert "read from the logs: the graph is not running" in said
    assert not ray.is_initialized()
    written = pd.read_parquet(out / "edges.parquet")
    key = ["src", "dst"]
    pd.testing.assert_frame_equal(
        written.sort_values(key).reset_index(drop=True),
        edges.sort_values(key).reset_index(drop=True),
    )
    assert len(pd.read_parquet(out / "vertices.parquet")) == len(vertices) > 1_000
