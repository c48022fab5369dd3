"""The long fuzz campaign (``pytest -m long``): every fuzz test of this folder with the
``long`` profile (random seeds, 2,000 examples each); its statistics say how many inputs
were tried."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.long
def test_fuzz_campaign():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", str(Path(__file__).parent)]
        + ["--hypothesis-show-statistics", "-p", "no:cacheprovider"],
        env=dict(os.environ, CHRONORAY_FUZZ="long"),
        capture_output=True,
        text=True,
        timeout=6 * 3600,
    )
    assert done.returncode == 0, done.stdout[-5000:]
