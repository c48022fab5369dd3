"""Joining Ray: which cluster a driver, job or CLI command uses, and where Ray's own log
lines go.

The address is, in order: ``Config.ray_address`` (``CHRONORAY_RAY_ADDRESS``, the CLI's
``--address``), then Ray's own ``RAY_ADDRESS`` (set by ``ray job submit`` for the job's
driver, so a job joins its cluster), else a new private local instance (``num_cpus``,
``object_store_memory`` of the config, no dashboard). An address that answers nothing is
refused with :class:`ClusterUnreachable`, in one line.

Ray's token authentication stays on: a driver joining a cluster sends Ray's token (from
``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or Ray's default ``~/.ray/auth_token``, the
file ``ray start`` writes) whenever one is there and ``RAY_AUTH_MODE`` is not set --
measured with Ray 2.60: a client that has the token file but no ``RAY_AUTH_MODE`` does not
send it and the cluster refuses it.

Ray's driver-side log lines (start-up banners, warnings) are written to a log file
(:func:`driver_log_path`), not to the user's terminal; actors' output is not forwarded
to the driver (``log_to_driver=False``): it stays in Ray's session logs.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
from pathlib import Path

import ray

from chronoray.config import Config
from chronoray.errors import ClusterUnreachable
from vertex.annotations import mark_module_api

__all__ = [
    "LOCAL_SYSTEM_CONFIG",
    "NAMESPACE",
    "ClusterUnreachable",
    "cluster_address",
    "driver_log_path",
    "ensure_ray",
    "quiet_ray_logs",
]

NAMESPACE = "chronoray"
"""The Ray namespace of chronoray's drivers and of graphs that are not named."""

LOCAL_SYSTEM_CONFIG: dict[str, int] = {"idle_worker_killing_time_threshold_ms": 300_000}
"""Ray settings of a local instance chronoray starts. A snapshot on Ray builds its parts in
tasks (one per shard, next to its log); Ray kills a task worker idle for one second (its
default) once more workers run than CPUs, which the graph's actors always are, so each
snapshot started fresh worker processes (~1 s of CPU each, importing Ray and chronoray).
Kept five minutes, the next snapshots reuse them. On a cluster of your own, the same is
``ray start --system-config='{"idle_worker_killing_time_threshold_ms": 300000}'``."""


def cluster_address(config: Config) -> str | None:
    """The Ray address to join (``None``: start a local instance)."""
    return config.ray_address or os.environ.get("RAY_ADDRESS") or None


def driver_log_path() -> Path:
    """The file that gets Ray's and Spark's driver-side log lines
    (``CHRONORAY_DRIVER_LOG``, default ``<tmp>/chronoray-<uid>/driver.log``)."""
    given = os.environ.get("CHRONORAY_DRIVER_LOG")
    if given:
        return Path(given)
    return Path(tempfile.gettempdir()) / f"chronoray-{os.getuid()}" / "driver.log"


def quiet_ray_logs(data: bool = False) -> None:
    """Send the terminal handlers of Ray's loggers (``ray``, ``ray.data``, ...) to the
    driver log file instead. Ray Data sets up its loggers when it is first imported (Spark
    analyses use it): ``data=True`` imports it first. Calling it twice changes nothing."""
    if data:
        import ray.data  # noqa: F401  (its loggers exist from here on)

    path = driver_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger) or not name.startswith(("ray", "raydp")):
            continue
        terminal = [h for h in logger.handlers if _to_terminal(h)]
        for handler in terminal:
            logger.removeHandler(handler)
        if terminal and not any(
            getattr(h, "baseFilename", None) == str(path) for h in logger.handlers
        ):
            handler = logging.FileHandler(path)
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            logger.addHandler(handler)


def _to_terminal(handler: logging.Handler) -> bool:
    stream = getattr(handler, "stream", None)
    return not isinstance(handler, logging.FileHandler) and stream in (sys.stderr, sys.stdout)


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse at once an address ``HOST:PORT`` where nothing listens (Ray itself retries
    for minutes); ``auto`` and ``ray://`` addresses are left to Ray."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto" or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ClusterUnreachable(f"no Ray cluster reachable at {address!r}: {exc}") from None


def _send_token_if_any() -> None:
    # Ray's own rule for local clusters, applied to joining one too; it reloads Ray's cached
    # settings, which setting RAY_AUTH_MODE after `import ray` would not do
    from ray._private.authentication.authentication_token_setup import (
        maybe_enable_token_auth_if_token_available,
    )

    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def ensure_ray(config: Config) -> None:
    """Join the cluster :func:`cluster_address` names, or start a local instance, unless
    Ray is initialised already in this process."""
    if ray.is_initialized():
        return
    quiet_ray_logs()
    address = cluster_address(config)
    if address is None:
        ray.init(
            address="local",  # a new instance, even if a `ray start` cluster is around
            num_cpus=config.num_cpus,
            object_store_memory=config.object_store_memory,
            include_dashboard=False,
            namespace=NAMESPACE,
            log_to_driver=False,
            _system_config=LOCAL_SYSTEM_CONFIG,
        )
        return
    _check_reachable(address)
    _send_token_if_any()
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterUnreachable(f"no Ray cluster reachable at {address!r}: {first}") from None


mark_module_api(globals())
