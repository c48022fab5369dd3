"""``chronoray snapshot --log-dir`` on a graph that is not running reads its logs in the
command's own process: no Ray (not even imported), no pandas, the same tables as the graph
gave while it ran."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

import chronoray as cr
from chronoray.datasets import collegemsg_path

AT = 1_085_000_000


_CLI = """
import sys
import ray
from click.testing import CliRunner
from chronoray.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
print(result.stdout)
print("ray started:", ray.is_initialized())
sys.exit(result.exit_code)
"""


def test_a_snapshot_of_a_stopped_graph_needs_no_ray(tmp_path: Path) -> None:
    log_dir = tmp_path / "graph"
    with cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(log_dir)) as graph:
        graph.ingest(cr.SnapEdgeSource(collegemsg_path()))
        vertices, edges = graph.snapshot(at=AT).to_pandas()
    out = tmp_path / "snap"
    argv = ["snapshot", "--at", str(AT), "--out", str(out), "--log-dir", str(log_dir)]
    result = subprocess.run(  # a fresh process: this one may run Ray for other tests
        [sys.executable, "-c", _CLI, *argv], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    said = " ".join(result.stdout.split())  # the console wraps lines
    assert "read from the logs: the graph is not running" in said
    assert "ray started: False" in said
    written = pd.read_parquet(out / "edges.parquet")
    key = ["src", "dst"]
    pd.testing.assert_frame_equal(
        written.sort_values(key).reset_index(drop=True),
        edges.sort_values(key).reset_index(drop=True),
    )
    assert len(pd.read_parquet(out / "vertices.parquet")) == len(vertices) > 1_000


_IMPORTS = """
import sys
from click.testing import CliRunner
from chronoray.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
print(result.stdout)
print("imported:", [name for name in ("ray", "pandas") if name in sys.modules])
sys.exit(result.exit_code)
"""


def test_a_snapshot_of_a_stopped_graph_imports_neither_ray_nor_pandas(tmp_path: Path) -> None:
    log_dir = tmp_path / "graph"
    with cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(log_dir)) as graph:
        graph.ingest(cr.SnapEdgeSource(collegemsg_path()))
        snap = graph.snapshot(at=AT)
        vertices, edges = snap.vertices(), snap.edges()
    out = tmp_path / "snap"
    argv = ["snapshot", "--at", str(AT), "--out", str(out), "--log-dir", str(log_dir)]
    result = subprocess.run(
        [sys.executable, "-c", _IMPORTS, *argv], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    said = " ".join(result.stdout.split())
    assert "read from the logs: the graph is not running" in said
    assert "imported: []" in said
    # the same tables, column types and row order included, as the running graph's
    assert pq.read_table(out / "vertices.parquet").equals(vertices)
    assert pq.read_table(out / "edges.parquet").equals(edges)
