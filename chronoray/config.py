"""Configuration: defaults < TOML file < ``CHRONORAY_*`` environment < explicit arguments."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from vertex.annotations import mark_module_api

__all__ = ["Config", "env_name", "load_settings", "read_settings_file"]

_T = TypeVar("_T")
_TABLES = ("gateway", "cep")
"""Tables of a settings file that belong to other settings (``[gateway]``: the gRPC
gateway's; ``[cep]``: the ``chronoray cep`` commands'), not to :class:`Config`."""


def env_name(field_name: str, prefix: str = "CHRONORAY_") -> str:
    """The environment variable that sets ``field_name`` (e.g. ``CHRONORAY_NUM_SHARDS``)."""
    return f"{prefix}{field_name.upper()}"


def read_settings_file(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The TOML settings file ``path`` as a dict (empty without a path)."""
    return {} if path is None else tomllib.loads(Path(path).read_text())


def load_settings(
    cls: type[_T], section: Mapping[str, Any], prefix: str, overrides: Mapping[str, Any]
) -> _T:
    """An instance of the dataclass ``cls``: its defaults, then ``section`` (a table of a
    settings file), then the environment variables ``<prefix><FIELD>``, then
    ``overrides`` whose value is not ``None``. Unknown names are refused."""
    values: dict[str, Any] = dict(section)
    for f in fields(cls):  # type: ignore[arg-type]
        raw = os.environ.get(env_name(f.name, prefix))
        if raw is not None:
            values[f.name] = _parse(f, raw, prefix)
    values.update({k: v for k, v in overrides.items() if v is not None})
    unknown = set(values) - {f.name for f in fields(cls)}  # type: ignore[arg-type]
    if unknown:
        raise ValueError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    return cls(**values)


@dataclass(frozen=True)
class Config:
    """Settings of a graph and of the Ray instance it starts.

    A log directory remembers its ``num_shards``: reopening it with another value is refused.
    """

    num_shards: int = 2
    """Shard workers (Ray actors); vertex ids are hash-partitioned over them."""
    log_dir: str = "chronoray-logs"
    """Directory holding one RocksDB database per shard (``shard-<k>``)."""
    shard_checkpoint_interval: int = 100_000
    """A shard logs its whole state once at least this many behavior executions, and at
    least as many as the state holds vertices and edges, were logged since the last time
    (so checkpoint bytes per event stay bounded); snapshots and recovery replay from the
    nearest such checkpoint instead of from the beginning."""
    sync: bool = False
    """``False``: an acknowledged update survives a process crash (WAL, no fsync);
    ``True``: it also survives a machine crash (fsync per batch, much slower)."""
    batch_size: int = 16_384
    """Most updates per batch a source sends to one shard (each batch costs a shard a Ray
    call, a log block and a RocksDB write, whatever its size: a bulk source wants them
    large)."""
    batch_linger: float = 0.02
    """Most seconds an update waits for its batch to fill (a batch leaves when it holds
    ``batch_size`` updates or when its first update waited this long), so a slow source's
    updates are not held back by a large ``batch_size``. A source that blocks in its read
    sends what it buffered within about 0.2 s on Ray (its watchdog's poll)."""
    max_inflight: int = 2
    """Batches a source may have in flight per shard before it waits (backpressure)."""
    max_pending: int = 200_000
    """Outgoing messages a shard may hold before it stops accepting source batches."""
    storage: str = "local"
    """``"local"``: each shard's log on the disk of the node running it (a restarted shard
    goes back to that node); ``"shared"``: ``log_dir`` is on storage every node mounts
    (a restarted shard may run anywhere)."""
    placement: str = "spread"
    """``"spread"``: shards round-robin over the cluster's alive nodes; ``"pack"``: all on
    the driver's node."""
    ray_address: str | None = None
    """Ray cluster to join (``"auto"``, ``HOST:PORT``, ``ray://...``); ``None``: Ray's own
    ``RAY_ADDRESS`` if set (inside ``ray job submit``), else a new local instance."""
    num_cpus: int = 2
    """CPUs of a local Ray instance."""
    object_store_memory: int = 256 * 1024 * 1024
    """Object store bytes of a local Ray instance."""
    log_store: str = ""
    """The log store each shard writes: empty for RocksDB; ``"module:function"`` names a
    factory ``function(path, sync=...)`` returning a ``shards.logstore.LogStore`` (tests
    inject faults with ``"shards.faults:open_faulty"``)."""
    shard_num_cpus: float = 0.0
    """CPUs each shard actor reserves (0: shards share the node's CPUs with tasks)."""
    spark_executors: int = 1
    """Spark executors (Ray actors started by RayDP) of the graph's Spark session."""
    spark_executor_cores: int = 1
    """Cores of each Spark executor."""
    spark_executor_memory: str = "1g"
    """Heap of each Spark executor (JVM size, e.g. ``"1g"``, ``"512m"``)."""
    spark_shuffle_partitions: int = 4
    """``spark.sql.shuffle.partitions`` of the Spark session."""

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, **overrides: Any) -> Config:
        """Defaults, then the TOML file ``path`` (table ``[chronoray]`` or top level), then
        ``CHRONORAY_*`` variables, then ``overrides`` whose value is not ``None``."""
        data = read_settings_file(path)
        section = data.get("chronoray", {k: v for k, v in data.items() if k not in _TABLES})
        return load_settings(cls, section, "CHRONORAY_", overrides)

    def __post_init__(self) -> None:
        for name in (
            "num_shards",
            "shard_checkpoint_interval",
            "batch_size",
            "max_inflight",
            "spark_executors",
            "spark_executor_cores",
            "spark_shuffle_partitions",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.batch_linger >= 0:
            raise ValueError(f"batch_linger must be >= 0 seconds, got {self.batch_linger}")
        for name, allowed in (("storage", ("local", "shared")), ("placement", ("spread", "pack"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)


def _parse(f: dataclasses.Field[Any], raw: str, prefix: str) -> Any:
    kind = str(f.type)
    name = env_name(f.name, prefix)
    if kind.startswith("bool"):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name}={raw!r} is not a boolean")
    try:
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    return raw


mark_module_api(globals(), public=("Config",))
