"""A driver log file per run of a command.

Ray's and Spark's own driver-side log lines go to a file, not to the terminal
(:func:`chronoray.connect.driver_log_path`, which reads ``CHRONORAY_DRIVER_LOG``). Each
run of ``chronoray`` gets a file of its own, ``<tmp>/chronoray-<uid>/runs/driver-<UTC
time>-<pid>.log``, so runs never mix; the newest :data:`KEPT` are kept, older ones are
deleted when a run starts. A ``CHRONORAY_DRIVER_LOG`` the user set is used as given.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

__all__ = ["KEPT", "begin_run_log", "runs_dir"]

KEPT = 20
"""Driver log files of past runs kept (the newest); older ones are deleted."""
_VARIABLE = "CHRONORAY_DRIVER_LOG"
_named: str | None = None
"""The file this process named (a second command run in one process, as tests do, gets a
new one; a file the user named is kept)."""


def runs_dir() -> Path:
    """Where the per-run driver logs go."""
    return Path(tempfile.gettempdir()) / f"chronoray-{os.getuid()}" / "runs"


def begin_run_log() -> Path:
    """Name this run's driver log file (in ``CHRONORAY_DRIVER_LOG``, which Ray's
    processes started from here inherit) unless the user named one, prune old ones, and
    return it. The file is created only when something is logged."""
    global _named
    given = os.environ.get(_VARIABLE)
    if given and given != _named:
        return Path(given)
    folder = runs_dir()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    stem = f"driver-{stamp}-{os.getpid()}"
    path = folder / f"{stem}.log"
    if str(path) == _named:  # a second command of this process in the same second
        path = folder / f"{stem}-2.log"
    _prune(folder, KEPT - 1)
    os.environ[_VARIABLE] = _named = str(path)
    return path


def _prune(folder: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` driver logs in ``folder``."""
    try:
        logs = sorted(folder.glob("driver-*.log"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in logs[: max(len(logs) - keep, 0)]:
        try:
            old.unlink()
        except OSError:  # another run pruned it first
            pass
