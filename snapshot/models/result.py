"""What a processing model returns, and how it reports progress."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import shards.progress as shards_progress
from shards.progress import Reporter

__all__ = ["ModelResult", "Progress", "kernel_result", "progress_reporter"]

Progress = shards_progress.Progress
"""``False``: quiet; ``True``: a rich progress bar; a callable: called with a dict of
figures (``step``, ``seconds`` and the model's own counters) after every step."""


@dataclass
class ModelResult:
    """A model's output table (one row per vertex, or per key) and run figures.

    ``table`` is sorted by its first column (``id`` or ``key``). ``steps`` holds one dict
    of figures per superstep/iteration/phase, ``seconds`` the wall time of the run.
    """

    table: pa.Table
    model: str
    num_partitions: int
    seconds: float = 0.0
    steps: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        engine = f", engine {self.info['engine']}" if "engine" in self.info else ""
        return (
            f"ModelResult({self.model}: {self.table.num_rows:,} rows, {len(self.steps)} steps, "
            f"{self.num_partitions} partitions, {self.seconds:.2f} s{engine})"
        )

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame."""
        return self.table.to_pandas()

    def to_dict(self, column: str | None = None) -> dict[Any, Any]:
        """First column -> ``column`` (default: the second column).

        >>> ModelResult(pa.table({"id": [1, 2], "rank": [0.5, 0.5]}), "x", 1).to_dict()
        {1: 0.5, 2: 0.5}
        """
        names = self.table.column_names
        column = column or names[1]
        return dict(
            zip(self.table[names[0]].to_pylist(), self.table[column].to_pylist(), strict=True)
        )

    def save_parquet(self, path: str | Path) -> Path:
        """Write the table to ``path`` (a ``.parquet`` file; parent folders are created)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.table, out)
        return out


def kernel_result(table: pa.Table, started: float, info: dict[str, Any]) -> ModelResult:
    """The result of a vectorized kernel (model ``"kernel"``, one partition: this
    process) that started at ``time.perf_counter()`` value ``started``."""
    return ModelResult(table, "kernel", 1, time.perf_counter() - started, [], info)


def _figures_text(figures: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in figures.items()
        if k != "step" and not isinstance(v, dict | list)
    )


def progress_reporter(progress: Progress, name: str, total: int | None) -> Reporter:
    """A reporter to call with each step's figures, then ``close()`` (the bar of
    :mod:`shards.progress`, positioned at the step)."""
    return shards_progress.progress_reporter(
        progress,
        name,
        total,
        unit="steps",
        completed=lambda figures: figures["step"] + 1,
        describe=_figures_text,
    )
