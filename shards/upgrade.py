"""Converting a shard's log of format 2, 3, 4 or 5 to format 6 in place (``chronoray
upgrade-log``).

Every value of format 3 is a value of format 4, every value of format 4 one of format 5,
and every value of format 5 one of format 6 (format 4 only adds ``commands`` runs logged
as columns, format 5 ``events`` entries logged as columns, format 6 ``commands`` runs
merged from several channels, see :mod:`shards.codec`): a log of format 3, 4 or 5 gets
the manifest of format 6 in one atomic write, nothing else changes (a shard that writes
to it does the same first). Format 3 stores every value of format 2 unchanged, followed
by its CRC-32; :func:`upgrade_shard_log` converts one shard's RocksDB log of format 2:

1. it opens the log as its one writer (a running graph holds it: refused with
   :class:`~shards.logstore.LogLockedError`, nothing done) and checks it is of format 2;
2. it writes every value of every column family, framed, to a new store beside it
   (``<path>.v3-new``), after checking each one decodes as format 2 -- a value that does
   not is refused with :class:`~shards.logstore.LogCorrupted` naming it, and the log is
   left as it was;
3. it verifies the new store: the same keys in every family, each value's payload byte
   for byte the old value, its checksum right, the manifest of format 6;
4. it swaps the directories: the old log is renamed ``<path>.v2-old``, the new one takes
   its place, the old one is deleted.

It is never half-converted: until the swap, ``path`` holds the whole log of format 2;
after it, the whole verified log of format 6. A run stopped between the two renames
(``path`` missing) is finished or undone by the next run, from a marker the verification
leaves in the new store. Converting a log of format 6 does nothing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocksdict import AccessType, Options, Rdict

from shards.codec import (
    CHECKPOINTS_KEY,
    CURSOR_KEY,
    FORMAT_VERSION,
    MANIFEST_KEY,
    READABLE_VERSIONS,
    SCHEMA_KEY,
    UPGRADABLE_VERSION,
    LogFormatError,
    Manifest,
    decode_checkpoint,
    decode_checkpoint_list,
    decode_commands,
    decode_cursor,
    decode_events,
    decode_header,
    decode_schema,
    encode_manifest,
    frame_value,
    manifest_batch,
    read_manifest_value,
    value_payload,
)
from shards.logstore import LogBatch, LogCorrupted, LogLockedError, LogName, RocksLogStore
from vertex.annotations import mark_module_api

__all__ = ["UpgradeResult", "upgrade_shard_log"]

_NEW = ".v3-new"
_OLD = ".v2-old"
_VERIFIED = "UPGRADE-VERIFIED"  # in the new store once it is verified: the swap may finish
_BATCH_BYTES = 4 * 1024 * 1024

# How a value of each family is checked to decode (format 2's payload = format 3's).
_CHECKS: dict[LogName, Callable[[int, bytes], Any]] = {
    LogName.EVENTS: lambda key, data: list(decode_events(data).messages()),
    LogName.COMMANDS: lambda key, data: decode_commands(data),
    LogName.CLOCKS: decode_header,
    LogName.CHECKPOINTS: lambda key, data: decode_checkpoint(data),
}
_META_CHECKS: dict[str, Callable[[bytes], Any]] = {
    CURSOR_KEY: decode_cursor,
    SCHEMA_KEY: decode_schema,
    CHECKPOINTS_KEY: decode_checkpoint_list,
}


@dataclass
class UpgradeResult:
    """What :func:`upgrade_shard_log` did: ``converted`` is ``False`` for a log already of
    format 6; ``entries`` counts the values per column family, ``bytes`` their size in
    format 2 (payloads), ``resumed`` says an earlier stopped run was finished or undone."""

    path: str
    converted: bool
    shard: int
    num_shards: int
    entries: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    resumed: str | None = None


def upgrade_shard_log(path: str | os.PathLike[str]) -> UpgradeResult:
    """Convert the shard log at ``path`` from format 2, 3, 4 or 5 to format 6 in place (see the
    module doc). Raises :class:`~shards.logstore.LogLockedError` if a graph has it open,
    :class:`~shards.codec.LogFormatError` if it is of another format (or no log),
    :class:`~shards.logstore.LogCorrupted` if a value of it does not decode; in each case
    the log is left as it was."""
    target = Path(path)
    new, old = _beside(target, _NEW), _beside(target, _OLD)
    resumed = _resume(target, new, old)
    if not target.is_dir():
        raise LogFormatError(
            f"no shard log at {target} (a log kept on another node is converted on that node)"
        )
    try:
        source = RocksLogStore(target, create=False)
    except LogLockedError as exc:
        raise LogLockedError(f"{exc} -- stop the graph, then convert its logs") from exc
    try:
        raw = source.get_meta(MANIFEST_KEY)
        if raw is None:
            raise LogFormatError(f"{target} holds no chronoray log (no manifest)")
        found = read_manifest_value(raw, str(target))
        if found.format == FORMAT_VERSION:
            return UpgradeResult(str(target), False, found.shard, found.num_shards, resumed=resumed)
        if found.format in READABLE_VERSIONS:
            source.append(manifest_batch(found._replace(format=FORMAT_VERSION)))
            return UpgradeResult(str(target), True, found.shard, found.num_shards, resumed=resumed)
        if found.format != UPGRADABLE_VERSION:
            raise LogFormatError(
                f"{target} holds a log in format {found.format}; upgrade-log converts format "
                f"{UPGRADABLE_VERSION} only (re-ingest the data into a new log directory)"
            )
        result = UpgradeResult(str(target), True, found.shard, found.num_shards, resumed=resumed)
        meta = _meta_values(target, source)
        shutil.rmtree(new, ignore_errors=True)
        _copy(source, new, meta, found, result)
        _verify(source, new, meta, found)
    except BaseException:
        source.close()
        shutil.rmtree(new, ignore_errors=True)
        raise
    source.close()
    _swap(target, new, old)
    return result


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _resume(target: Path, new: Path, old: Path) -> str | None:
    """Finish or undo a run stopped during its swap; drop what a stopped run left."""
    if not target.exists() and old.is_dir():
        if (new / _VERIFIED).exists():
            os.replace(new, target)
            _sync_dir(target.parent)
            (target / _VERIFIED).unlink()
            shutil.rmtree(old)
            return "finished the conversion a stopped run had verified"
        os.replace(old, target)
        _sync_dir(target.parent)
        shutil.rmtree(new, ignore_errors=True)
        return "undid the swap of a stopped run (the log is of format 2 again)"
    if target.is_dir() and (target / _VERIFIED).exists():  # stopped after the second rename
        (target / _VERIFIED).unlink()
        shutil.rmtree(old, ignore_errors=True)
        return "deleted the format-2 log a stopped run had replaced"
    if new.exists():
        shutil.rmtree(new)
    return None


def _meta_values(target: Path, source: RocksLogStore) -> dict[str, bytes]:
    """Every meta value of the log; a key this chronoray does not know is refused (its
    value would be carried over without a check)."""
    families = {name: Options(raw_mode=True) for name in (*RocksLogStore._LOGS, "meta")}
    db = Rdict(
        str(target),
        Options(raw_mode=True),
        column_families=families,
        access_type=AccessType.read_only(error_if_log_file_exist=False),
    )
    try:
        family = db.get_column_family("meta")
        try:
            keys = [k.decode("utf-8") for k in family.keys() if isinstance(k, bytes)]
        finally:
            family.close()
    finally:
        db.close()
    unknown = sorted(set(keys) - {MANIFEST_KEY, *_META_CHECKS})
    if unknown:
        raise LogFormatError(f"{target}: meta keys {unknown} unknown to format 2: not converted")
    values = {}
    for key in keys:
        value = source.get_meta(key)
        assert value is not None
        values[key] = value
    return values


def _copy(
    source: RocksLogStore,
    new: Path,
    meta: dict[str, bytes],
    found: Manifest,
    result: UpgradeResult,
) -> None:
    """Every value checked and framed into the new store ``new``."""
    where = str(source.path)
    out = RocksLogStore(new)
    try:
        for log in LogName:
            batch, size, count = LogBatch(), 0, 0
            check = _CHECKS[log]
            for key, value in source.scan(log):
                framed = frame_value(value)
                try:
                    check(key, framed)
                except LogCorrupted as exc:
                    raise exc.at(where, key, shard=found.shard) from exc
                batch.add(log, key, framed)
                size += len(framed)
                count += 1
                result.bytes += len(value)
                if size >= _BATCH_BYTES:
                    out.append(batch)
                    batch, size = LogBatch(), 0
            out.append(batch)
            result.entries[log.value] = count
        last = LogBatch()
        for name, value in meta.items():
            if name == MANIFEST_KEY:
                manifest = Manifest(FORMAT_VERSION, found.shard, found.num_shards)
                last.put_meta(name, encode_manifest(manifest))
                continue
            framed = frame_value(value)
            try:
                _META_CHECKS[name](framed)
            except LogCorrupted as exc:
                raise exc.at(where, shard=found.shard) from exc
            last.put_meta(name, framed)
            result.bytes += len(value)
        result.entries["meta"] = len(meta)
        out.append(last)
    finally:
        out.close()


def _verify(source: RocksLogStore, new: Path, meta: dict[str, bytes], found: Manifest) -> None:
    """The new store holds every value of the old one, framed; then it is marked verified."""
    check = RocksLogStore(new, read_only=True)
    try:
        for log in LogName:
            olds, news = source.scan(log), check.scan(log)
            for (old_key, value), (new_key, framed) in zip(olds, news, strict=True):
                payload = value_payload(framed, log.value, new_key)
                if old_key != new_key or payload != value:
                    raise LogCorrupted(
                        "differs from the log it was converted from", log.value, new_key, str(new)
                    )
            if check.last_seq(log) != source.last_seq(log):
                raise LogCorrupted(f"last key {check.last_seq(log)}", log.value, None, str(new))
        for name, value in meta.items():
            stored = check.get_meta(name)
            if stored is None:
                raise LogCorrupted("missing after the conversion", "meta", name, str(new))
            if name == MANIFEST_KEY:
                got = read_manifest_value(stored, str(new))
                if got != Manifest(FORMAT_VERSION, found.shard, found.num_shards):
                    raise LogCorrupted(f"manifest {got}", "meta", name, str(new))
            elif value_payload(stored, "meta", name) != value:
                raise LogCorrupted(
                    "differs from the log it was converted from", "meta", name, str(new)
                )
    finally:
        check.close()
    marker = new / _VERIFIED
    with open(marker, "wb") as f:
        os.fsync(f.fileno())
    _sync_dir(new)


def _swap(target: Path, new: Path, old: Path) -> None:
    """``target`` -> ``old``, ``new`` -> ``target`` (each rename atomic and synced), then
    the old log deleted."""
    os.replace(target, old)
    _sync_dir(target.parent)
    os.replace(new, target)
    _sync_dir(target.parent)
    (target / _VERIFIED).unlink()
    shutil.rmtree(old)


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


mark_module_api(globals())
