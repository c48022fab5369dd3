"""Before/after measurements in one run: the same probe against two chronoray trees.

:func:`tree` gives the source tree of a git revision (``git archive`` into a temporary
directory, made once per process) or of this checkout; :func:`measure` runs one task of
:mod:`bench.probe` in a fresh process against a tree and returns its JSON result.
Benchmarks alternate the two trees trial by trial (A B A B ...), so a slow spell of a
shared machine hits both, and report ratios.

The default "before" revision is the last commit before the log format 2 and the lean
execute step (:data:`BEFORE`); pass another with ``--before``, or ``--before none``.

``tree(revision, warm=True)`` (the benchmarks timing ingests on Ray) also compiles the
tree's kernels (numba, cached next to their source) once, by a small ingest in process and
one on Ray (whose shards get read-only arrays: another signature), before anything of it
is measured: a revision's tree is new, and its first measurement would otherwise pay the
compilation (seconds of CPU) that the other tree's warm cache does not.
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
_WARM: set[Path] = set()
_WARM_UP = """
try:
    import numpy as np
    import shards.core
    from shards.local import LocalRuntime
    from vertex.columns import UpdateBatch

    shards.core.TEMPORAL_AFTER = 0
    for ts in (np.arange(1, 65), np.arange(1, 65) / 2):
        rt = LocalRuntime(2)
        ids = np.arange(64)
        rt.ingest([UpdateBatch.edges("w", ids % 7, ids % 5, ts, ids + 1)])
        rt.close()
except Exception:  # a tree from before the compiled kernels (or their column batches)
    pass
"""


def tree(revision: str | None, warm: bool = False) -> Path | None:
    """This checkout (``None``), or the tree of git ``revision`` (``"none"``: no tree),
    removed when the process exits; ``warm``: its kernels compiled first (see the module
    doc)."""
    if revision is None:
        return _warm(ROOT) if warm else ROOT
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
    return _warm(_TREES[revision]) if warm else _TREES[revision]


def _warm(root: Path) -> Path:
    """``root``, its compiled kernels compiled and cached (once per process): in process,
    then by a Ray ingest of CollegeMsg's first 40,000 lines (past the rows a shard runs
    before it makes its columns)."""
    if root in _WARM:
        return root
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", _WARM_UP], env=env, cwd=root, check=True)
    work = Path(tempfile.mkdtemp(prefix="chronoray-warm-"))
    try:
        lines = (ROOT / "chronoray" / "datasets" / "collegemsg.txt").read_text().splitlines()
        part = work / "part.txt"
        part.write_text("\n".join(lines[:40_000]) + "\n")
        measure(root, "ray_ingest", file=str(part), shards=2, workdir=str(work), mid_t=None)
    except RuntimeError:
        pass  # a tree the probe cannot ingest with: its measurement says so itself
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _WARM.add(root)
    return root


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
