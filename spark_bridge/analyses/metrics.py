"""Where a Spark analysis' time goes, from Spark's own bookkeeping (its status store, the
data behind the web UI, kept even with the UI off): jobs, stages and tasks run, and the
executors' run, CPU, deserialisation and GC time and shuffle bytes, summed over stages.

Compare :func:`spark_totals` before and after a run (:func:`spent`) to see how much of the
wall time the executors computed and how much went to scheduling jobs and stages.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["SparkTotals", "spark_totals", "spent"]


@dataclass(frozen=True)
class SparkTotals:
    """Totals over every completed stage of the session (times in milliseconds)."""

    jobs: int = 0
    stages: int = 0
    tasks: int = 0
    executor_run_ms: float = 0.0
    executor_cpu_ms: float = 0.0
    deserialize_ms: float = 0.0
    gc_ms: float = 0.0
    shuffle_read_bytes: int = 0
    shuffle_write_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def spark_totals(spark: Any) -> SparkTotals:
    """The session's totals so far (Spark keeps the last ``spark.ui.retainedStages``
    stages, 1,000 by default: take totals around runs shorter than that)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    stages = store.stageList(None)
    jobs = store.jobsList(None).size()
    totals = {
        "tasks": 0,
        "executor_run_ms": 0.0,
        "executor_cpu_ms": 0.0,
        "deserialize_ms": 0.0,
        "gc_ms": 0.0,
        "shuffle_read_bytes": 0,
        "shuffle_write_bytes": 0,
    }
    completed = 0
    for k in range(stages.size()):
        stage = stages.apply(k)
        if stage.status().toString() != "COMPLETE":
            continue
        completed += 1
        totals["tasks"] += stage.numCompleteTasks()
        totals["executor_run_ms"] += stage.executorRunTime()
        totals["executor_cpu_ms"] += stage.executorCpuTime() / 1e6
        totals["deserialize_ms"] += stage.executorDeserializeTime()
        totals["gc_ms"] += stage.jvmGcTime()
        totals["shuffle_read_bytes"] += stage.shuffleReadBytes()
        totals["shuffle_write_bytes"] += stage.shuffleWriteBytes()
    return SparkTotals(jobs=jobs, stages=completed, **totals)


def spent(before: SparkTotals, after: SparkTotals) -> SparkTotals:
    """What happened between two :func:`spark_totals`."""
    return SparkTotals(
        **{k: getattr(after, k) - getattr(before, k) for k in SparkTotals.__dataclass_fields__}
    )
