"""A real Ray head (``ray start --head`` on loopback, own ports and temp dir, token auth on)
and chronoray driven only through ``ray job submit``, as docs/cluster.md does:
start a named graph, ingest into it from one job while a second job subscribes and
snapshots, read its stats from a third, stop it. Plus the one-line errors (a driver on the
same cluster, ``chronoray --address``: what they check is the same without a job each)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronoray.datasets import collegemsg_path
from chronoray.testing import RayHead, pair_counts, pair_counts_between

pytestmark = [pytest.mark.slow]

_READER = Path(__file__).with_name("reader_job.py")


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (result.stdout + result.stderr).splitlines() if "error:" in ln]
    assert lines, result.stdout + result.stderr
    return lines[-1].strip()


def _cli(head: RayHead, *args: str) -> subprocess.CompletedProcess[str]:
    """``chronoray --address HEAD ARGS``: a driver of the head's cluster, not a job."""
    chronoray = str(Path(sys.executable).parent / "chronoray")
    return head.run(chronoray, "--address", head.address, *args)


def test_named_graph_through_ray_job_submit(tmp_path, college):
    lines = collegemsg_path().read_text().splitlines()
    at = float(lines[30000].split()[2])
    ready = tmp_path / "reader-ready"
    with RayHead() as head:
        started = head.submit(
            "chronoray", "start", "college", "--shards", "2", "--log-dir", str(tmp_path / "logs")
        )
        assert started.returncode == 0, started.stdout + started.stderr
        assert "graph college started: 2 shards" in started.stdout

        again = _cli(head, "start", "college", "--log-dir", str(tmp_path / "other"))
        assert again.returncode != 0
        assert _error_line(again).endswith(
            "error: a graph named 'college' is running already (chronoray stop college)"
        )

        # two drivers at once: the reader subscribes first, then the ingest job feeds
        reader = subprocess.Popen(
            [
                "ray",
                "job",
                "submit",
                "--address",
                head.dashboard,
                "--",
                sys.executable,
                str(_READER),
                "college",
                str(at),
                str(ready),
                "20296",
            ],
            env=head.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 300
        while not ready.exists():
            assert reader.poll() is None, reader.stdout.read() if reader.stdout else ""
            assert time.monotonic() < deadline, "the reader job never subscribed"
            time.sleep(0.2)
        ingested = head.submit("chronoray", "ingest", "--graph", "college", str(collegemsg_path()))
        assert ingested.returncode == 0, ingested.stdout + ingested.stderr
        assert "59,835 updates read" in ingested.stdout
        out, _ = reader.communicate(timeout=600)
        assert reader.returncode == 0, out
        result = json.loads(re.search(r"^RESULT (.*)$", out, re.M).group(1))
        snapshot = {(s, d): c for s, d, c in result["snapshot_pairs"]}
        assert snapshot == pair_counts_between(college, at)
        assert result["lagged"] == 0
        assert result["notified_out_degrees_equal"] and result["notified_vertices"] == 1899

        stats = head.submit("chronoray", "stats", "--graph", "college", "--json")
        assert stats.returncode == 0, stats.stdout + stats.stderr
        found = json.loads(re.search(r"^\{\n.*?^\}$", stats.stdout, re.M | re.S).group(0))
        assert (found["vertices"], found["edges"]) == (1899, 20296)
        assert sum(s["worker_clock"] >= 0 for s in found["shards"]) == 2
        assert sum(pair_counts(college).values()) == 59835

        in_use = _cli(head, "start", "other", "--log-dir", str(tmp_path / "logs"))
        assert _error_line(in_use).startswith("error: log directory")
        assert "is in use by graph 'college'" in _error_line(in_use)

        stopped = head.submit("chronoray", "stop", "college")
        assert stopped.returncode == 0 and "stopped graph college" in stopped.stdout
        gone = _cli(head, "stats", "--graph", "college")
        assert gone.returncode != 0
        assert (
            _error_line(gone)
            == "error: no graph named 'college' in the Ray cluster (running: none)"
        )


def test_unreachable_address_is_one_line(tmp_path):
    free = RayHead()  # only for a free port and the environment; never started
    result = subprocess.run(
        [str(Path(sys.executable).parent / "chronoray"), "--address", free.address, "ls"],
        capture_output=True,
        text=True,
        env=free.env,
        timeout=300,
    )
    assert result.returncode == 1
    assert _error_line(result).startswith(f"error: no Ray cluster reachable at '{free.address}'")
