"""What every benchmark writes: the machine it ran on, ``<name>.json`` and ``<name>.md``."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

__all__ = ["machine", "write_results"]


def machine() -> dict[str, Any]:
    """CPUs this process may use and the Python version, for the results' header."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpus": len(usable) if usable else os.cpu_count() or 0,
        "python": platform.python_version(),
    }


def write_results(
    out: Path, name: str, result: dict[str, Any], markdown: str, *, show: bool = True
) -> None:
    """Write ``out/<name>.json`` and ``out/<name>.md`` (and print the markdown if ``show``)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"{name}.md").write_text(markdown)
    if show:
        print(markdown)
