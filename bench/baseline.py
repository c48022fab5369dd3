"""Before/after measurements in one run: the same probe against two chronoray trees.

:func:`tree` gives the source tree of a git revision (``git archive`` into a temporary
directory, made once per process) or of this checkout; :func:`measure` runs one task of
:mod:`bench.probe` in a fresh process against a tree and returns its JSON result.
Benchmarks alternate the two trees trial by trial (A B A B ...), so a slow spell of a
shared machine hits both, and report ratios.

The default "before" revision is the last commit before the log format 2 and the lean
execute step (:data:`BEFORE`); pass another with ``--before``, or ``--before none``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["BEFORE", "ROOT", "measure", "tree"]

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "f9a5f0e"  # format 1: one pickle per entry, per-vertex checkpoints every 64 executions
_TREES: dict[str, Path] = {}


def tree(revision: str | None) -> Path | None:
    """This checkout (``None``), or the tree of git ``revision`` (``"none"``: no tree),
    removed when the process exits."""
    if revision is None:
        return ROOT
    if revision == "none":
        return None
    if revision not in _TREES:
        where = Path(tempfile.mkdtemp(prefix=f"chronoray-{revision}-"))
        atexit.register(shutil.rmtree, where, True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
        _TREES[revision] = where
    return _TREES[revision]


def measure(root: Path, task: str, timeout: float = 1800, **params: Any) -> dict[str, Any]:
    """Run ``bench/probe.py TASK`` of this checkout with ``root`` as the code measured."""
    script = Path(tempfile.mkdtemp(prefix="chronoray-probe-")) / "probe.py"
    shutil.copy(Path(__file__).with_name("probe.py"), script)  # not next to any tree
    env = {**os.environ, "PYTHONPATH": str(root)}
    try:
        out = subprocess.run(
            [sys.executable, str(script), task, json.dumps(params)],
            capture_output=True,
            text=True,
            cwd=root,
            env=env,
            timeout=timeout,
        )
    finally:
        shutil.rmtree(script.parent, ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(f"probe {task} on {root} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
