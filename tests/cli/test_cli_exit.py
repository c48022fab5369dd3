"""A Ctrl-C while Ray shuts down at exit says so in one line, never a traceback (issue 24,
item 3)."""

from __future__ import annotations

import subprocess
import sys

# Ray's shutdown is an atexit callback registered before the command runs; this one stands
# for it and is interrupted the way a Ctrl-C would interrupt it
_SCRIPT = """
import atexit, os, signal
atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))
from chronoray.cli import main
main(["stats", "--log-dir", "/no/such/graph"])
"""


def test_an_interrupt_during_shutdown_is_one_line():
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("Error: ") and "/no/such/graph" in lines[0]
    assert lines[1:] == ["chronoray: shutting down Ray, a moment"]
