"""The other systems' environments: one virtual environment per system under
``bench/.envs/<system>/`` (git-ignored), made by the runner from the package index with
exact pins, so each system runs with its own dependencies, never chronoray's.

:func:`python_of` says where a system's interpreter is (``None`` if its environment is
not made); :func:`ensure` makes it (once: a stamp file records the pins it was made with).
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

__all__ = ["ENVS", "SYSTEMS", "ensure", "python_of"]

ENVS = Path(__file__).resolve().parent / ".envs"

SYSTEMS: dict[str, list[str]] = {
    # pyarrow everywhere: every system reads the same Parquet input
    "raphtory": ["raphtory==0.17.0", "pyarrow==26.0.1", "pandas==2.3.3"],
    "networkx": ["networkx==3.6.1", "scipy==1.17.1", "numpy==2.4.6", "pyarrow==26.0.1"],
    "spark": ["pyspark==3.5.7", "pyarrow==26.0.1", "pandas==2.3.3", "numpy==2.4.6"],
}
"""Each system's packages, pinned (pyspark as chronoray's own pin, for JDK 17)."""


def _stamp(system: str) -> Path:
    return ENVS / system / ".pins"


def python_of(system: str) -> Path | None:
    """The interpreter of ``system``'s environment, if it was made with today's pins."""
    stamp = _stamp(system)
    python = ENVS / system / "bin" / "python"
    if python.exists() and stamp.exists() and stamp.read_text() == " ".join(SYSTEMS[system]):
        return python
    return None


def ensure(system: str, log: Path | None = None) -> Path:
    """Make ``system``'s environment if needed (a venv, then ``pip install`` of its pins;
    output to ``log``) and return its interpreter. Raises ``RuntimeError`` naming the
    log if the installation fails."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; known: {', '.join(SYSTEMS)}")
    found = python_of(system)
    if found is not None:
        return found
    where = ENVS / system
    venv.EnvBuilder(clear=True, with_pip=True).create(where)
    log = log or where.with_suffix(".log")
    with open(log, "w") as out:
        done = subprocess.run(
            [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", *SYSTEMS[system]],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    if done.returncode != 0:
        raise RuntimeError(f"installing {system} failed (pip exit {done.returncode}); see {log}")
    _stamp(system).write_text(" ".join(SYSTEMS[system]))
    return where / "bin" / "python"


if __name__ == "__main__":  # python -m bench.envs [SYSTEM ...]: make them
    for name in sys.argv[1:] or list(SYSTEMS):
        print(name, ensure(name))
