"""An interrupted ``chronoray ingest`` says in one line that running it again resumes,
and running it again does (issue 24, item 3)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronoray.datasets import collegemsg_path
from chronoray.source_files import SOURCE_FILES

pytestmark = [pytest.mark.ray, pytest.mark.slow]

_CLI = str(Path(sys.executable).parent / "chronoray")
_ROUNDS = 2


def _long_file(path: Path) -> int:
    """CollegeMsg ``_ROUNDS`` times, each round later than the one before (in time order);
    its line count."""
    rows = [line.split() for line in collegemsg_path().read_text().splitlines()]
    span = int(rows[-1][2]) - int(rows[0][2]) + 1
    with path.open("w") as f:
        for k in range(_ROUNDS):
            f.writelines(f"{s} {d} {int(t) + k * span}\n" for s, d, t in rows)
    return len(rows) * _ROUNDS


def test_an_interrupted_ingest_says_how_to_resume_and_resumes(tmp_path):
    data = tmp_path / "long.txt"
    lines = _long_file(data)
    log_dir = tmp_path / "graph"
    command = [_CLI, "ingest", str(data), "--log-dir", str(log_dir)]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (log_dir / SOURCE_FILES).exists():  # claimed: the feeding starts now
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "the ingestion never started"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGINT)
    out, err = first.communicate(timeout=300)
    assert "Traceback" not in err, err
    if first.returncode == 0:  # it had finished already: nothing to resume, nothing lost
        pytest.skip("the ingestion ended before the interrupt arrived")
    assert first.returncode == 1, (out, err)
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(said) == 1 and "run the same command again to resume" in said[0], err

    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    text = " ".join(again.stdout.split())
    found = re.search(r"([\d,]+) updates read .*?: ([\d,]+) new, ([\d,]+) already", text)
    assert found, text
    read, new, already = (int(g.replace(",", "")) for g in found.groups())
    assert read == lines and new + already == lines
    assert "1,899 " in text or "1899" in text  # every vertex: nothing lost
