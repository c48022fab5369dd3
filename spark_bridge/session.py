"""One Spark session per process, its executors Ray actors in the same cluster (RayDP).

Facts this module relies on (RayDP 1.6.5, Spark 3.5.7, Ray 2.60, JDK 17), measured here:

* Spark -> Ray (``ray.data.from_spark``) needs ``fault_tolerant_mode=True`` and RayDP's own
  JDK 17 ``--add-opens`` list on the driver *and* on the RayDP app master
  (``spark.ray.raydp_app_master.extraJavaOptions``); without ``java.lang`` there the app
  master's Java actor fails to serialise, Ray kills the executor it owns ("Lost executor",
  "Check failed: objects_valid"); without ``java.math`` on the driver ``from_spark`` fails.
* Ray -> Spark (``Dataset.to_spark``) runs Python in the executor: ``PYSPARK_PYTHON`` must be
  this interpreter.
* ``init_spark`` takes ~10 s: the session is started once and reused; it is stopped at exit.
* The JVM writes its start-up lines and log4j warnings to the standard error it inherits:
  ``log_file`` gives it a file instead, so they stay out of the user's terminal.
* RayDP waits, without end or message, for executors the cluster has no CPUs for: the
  session is sized from the cluster's CPUs first (:func:`executor_plan`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray

__all__ = ["JDK17_JAVA_OPTIONS", "executor_plan", "spark_session", "stderr_to", "stop_spark"]

JDK17_JAVA_OPTIONS = " ".join(
    [
        "-XX:+IgnoreUnrecognizedVMOptions",
        *(
            f"--add-opens=java.base/{package}=ALL-UNNAMED"
            for package in (
                "java.lang",
                "java.lang.invoke",
                "java.io",
                "java.net",
                "java.nio",
                "java.math",
                "java.text",
                "java.util",
                "java.util.concurrent",
                "java.util.concurrent.atomic",
                "sun.nio.ch",
                "sun.nio.cs",
                "sun.security.action",
                "sun.util.calendar",
            )
        ),
        "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    ]
)
"""RayDP's own JDK 17 option list (``raydp/bin/raydp-submit``)."""

_APP_NAME = "chronoray"
_session: Any = None


def executor_plan(executors: int, executor_cores: int, cpus: float) -> tuple[int, int]:
    """``(executors, cores each)`` that fit ``cpus``: the cores of one executor at most
    ``cpus``, then as many of the executors asked for as fit. Raises ``RuntimeError`` if
    not even one executor with one core fits.

    >>> executor_plan(1, 1, 2.0), executor_plan(4, 2, 5.0), executor_plan(2, 4, 2.0)
    ((1, 1), (2, 2), (1, 2))
    """
    if cpus < 1:
        raise RuntimeError(f"the Ray cluster has {cpus:g} CPUs; a Spark executor needs 1")
    cores = max(1, min(executor_cores, int(cpus)))
    return max(1, min(executors, int(cpus // cores))), cores


def spark_session(
    *,
    executors: int = 1,
    executor_cores: int = 1,
    executor_memory: str = "1g",
    shuffle_partitions: int = 4,
    log_file: str | Path | None = None,
) -> Any:
    """The process's Spark session on the current Ray cluster, started on first use.

    Executors are Ray actors (RayDP) placed by Ray anywhere in the cluster; each needs
    ``executor_cores`` free CPUs, and no more executors and cores are asked for than the
    cluster has (:func:`executor_plan`). ``shuffle_partitions`` is the default of a
    shuffle; adaptive execution coalesces a small shuffle's partitions, and the iterative
    analyses size their cached tables from the data. Ray must be initialised already
    (``GraphCluster`` does it; ``GraphCluster.spark()`` asks for its ``Config``'s sizes).
    Later calls return the same session whatever their arguments; :func:`stop_spark` (also
    run at exit) ends it.
    ``log_file``: where the JVM's own output goes (default: this process's stderr).
    """
    global _session
    if _session is not None:
        return _session
    if not ray.is_initialized():
        raise RuntimeError("start Ray first (e.g. create a GraphCluster)")
    import raydp

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # the cluster's CPUs, not the free ones: CPUs held by running tasks come back
    cpus = ray.cluster_resources().get("CPU", 0.0)
    executors, executor_cores = executor_plan(executors, executor_cores, cpus)
    configs = {  # a fresh dict: init_spark changes the one it gets
        "spark.driver.extraJavaOptions": JDK17_JAVA_OPTIONS,
        "spark.executor.extraJavaOptions": JDK17_JAVA_OPTIONS,
        "spark.ray.raydp_app_master.extraJavaOptions": JDK17_JAVA_OPTIONS,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(executors * executor_cores),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    # the JVM starts now and keeps the output it gets (log4j prints to its stdout)
    with stderr_to(log_file, stdout=True):
        _session = raydp.init_spark(
            _APP_NAME,
            num_executors=executors,
            executor_cores=executor_cores,
            executor_memory=executor_memory,
            fault_tolerant_mode=True,
            configs=configs,
        )
    _session.sparkContext.setLogLevel("ERROR")
    atexit.register(stop_spark)
    return _session


@contextlib.contextmanager
def stderr_to(path: str | Path | None, *, stdout: bool = False) -> Iterator[None]:
    """Point file descriptor 2 (and 1 if ``stdout``) at ``path`` (appending) for the block;
    processes started meanwhile keep them."""
    if path is None:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fds = (1, 2) if stdout else (2,)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in fds]
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for fd in fds:
            os.dup2(target, fd)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip(fds, saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(target)


def stop_spark(timeout: float = 30.0) -> None:
    """Stop the session (if any) and wait until RayDP's master actor is gone, so a new
    session can start in the same Ray cluster."""
    global _session
    if _session is None:
        return
    import raydp

    session, _session = _session, None
    if not ray.is_initialized():
        # Ray is gone (and RayDP's actors with it); RayDP would start a new Ray to stop them
        session.stop()
        return
    raydp.stop_spark()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get_actor(f"{_APP_NAME}_SPARK_MASTER")
        except ValueError:
            return
        time.sleep(0.1)
