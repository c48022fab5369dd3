"""Fault injection for tests and chaos runs: disk trouble, and (see :func:`run_chaos`)
processes killed at seeded random moments while a graph is fed.

Disk trouble is real: :func:`small_disk` mounts a tmpfs of a few megabytes (root only;
:class:`DiskTroubleUnavailable` says precisely why not otherwise), :func:`fill_disk` fills
it until the kernel answers ``ENOSPC``, :func:`read_only` bind-mounts a directory onto
itself read-only. Linux refuses to make a mount read-only while a file on it is open for
writing ("mount point is busy"), so a running shard's own log directory cannot be made
read-only under it; that case is a failing write, which :mod:`shards.faults` injects.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "DiskTroubleUnavailable",
    "fill_disk",
    "read_only",
    "small_disk",
]


class DiskTroubleUnavailable(RuntimeError):
    """This machine does not let the test make the disk trouble (not root, no mount)."""


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise DiskTroubleUnavailable(f"mount {' '.join(args)} failed: {done.stderr.strip()}")


def _umount(path: Path) -> None:
    # lazy: a process of the test (a Ray worker, a RocksDB handle) may still hold a file
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def small_disk(path: str | os.PathLike[str], size_mb: int = 32) -> Iterator[Path]:
    """A fresh tmpfs of ``size_mb`` MB mounted at ``path`` (created) for the ``with``
    block. :class:`DiskTroubleUnavailable` if this process may not mount."""
    mount_point = Path(path)
    mount_point.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        raise DiskTroubleUnavailable("mounting a small tmpfs needs root")
    _mount("-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(mount_point))
    try:
        yield mount_point
    finally:
        _umount(mount_point)


def fill_disk(path: str | os.PathLike[str], chunk: int = 1 << 20) -> Path:
    """Write the file ``path`` until its file system is full (``ENOSPC``); returns it.
    Removing the file frees the space again."""
    filler = Path(path)
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            try:
                os.write(fd, b"\0" * chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if chunk == 1:
                    return filler
                chunk = max(1, chunk // 16)  # fill the last pages too
    finally:
        os.close(fd)


@contextlib.contextmanager
def read_only(path: str | os.PathLike[str]) -> Iterator[Path]:
    """``path`` (a directory) bind-mounted onto itself read-only for the ``with`` block:
    even root gets ``EROFS`` writing under it. :class:`DiskTroubleUnavailable` if this
    process may not mount, or a file under ``path`` is open for writing."""
    directory = Path(path)
    if os.geteuid() != 0:
        raise DiskTroubleUnavailable("a read-only bind mount needs root")
    _mount("--bind", str(directory), str(directory))
    try:
        _mount("-o", "remount,bind,ro", str(directory))
        yield directory
    finally:
        _umount(directory)
