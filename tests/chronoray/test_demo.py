"""``chronoray demo`` (what ``./run demo`` runs) end to end in the test process: Ray, the
shard actors, a live computation, a Spark PageRank (so this file is one of the
``SPARK_FILES`` of the root ``conftest.py``: it runs on the worker that holds the Spark
session)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_demo_writes_summary_and_png(ray_session, tmp_path):
    from click.testing import CliRunner

    from chronoray.cli import main

    out = tmp_path / "demo"
    result = CliRunner().invoke(main, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "20,296" in result.output and "yes" in result.output
    assert "time travel" in result.output and "NO" not in result.output
    assert "live degree histogram equals networkx: yes" in result.output
    for picture in ("degree_distribution.png", "growth.png"):
        png = Path(out / picture).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
