"""Where a Spark analysis' time goes, from Spark's own status tracker: the jobs, stages and
tasks a run scheduled (``SparkContext.statusTracker``, a public API that works with the UI
off).

:func:`counting_jobs` runs a function under a job group of its own and returns what Spark
scheduled for it; divided by the iterations, it says how many jobs and tasks an iteration
costs, and wall time divided by jobs what each costs in scheduling and execution.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["SparkWork", "counting_jobs"]

_groups = itertools.count()


@dataclass(frozen=True)
class SparkWork:
    """What Spark scheduled for one run."""

    jobs: int
    stages: int
    tasks: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def counting_jobs(spark: Any, run: Callable[[], Any]) -> tuple[Any, SparkWork]:
    """``(run(), what Spark scheduled for it)``; the run gets a job group of its own."""
    context = spark.sparkContext
    group = f"chronoray-counted-{next(_groups)}"
    context.setJobGroup(group, "counted run")
    try:
        result = run()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    tracker = context.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
    stage_ids = {s for job in jobs if job is not None for s in job.stageIds}
    stages = [tracker.getStageInfo(s) for s in stage_ids]
    tasks = sum(stage.numTasks for stage in stages if stage is not None)
    return result, SparkWork(len(jobs), len(stage_ids), tasks)
