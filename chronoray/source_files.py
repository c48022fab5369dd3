"""Which file each file source of a graph was read from: ``LOG_DIR/source-files.json``.

A file source's ids are ``(name, line number)`` and a shard applies each id once, so a
*different* file ingested under a name already used would be skipped line by line as
resends -- a silent wrong answer. Before a file source feeds the graph,
:func:`claim_file` compares the file with the one recorded under its name
(:class:`~chronoray.sources.FileFingerprint`) through the lines the graph applied of
that name, and refuses other content with :class:`~chronoray.errors.SourceMismatch`
naming both files. Guarantees:

* The record is written *before* anything is sent, so an interrupted ingestion is
  checked when it is resumed.
* The same file, a file that grew (lines appended), or a file whose lines after what the
  graph applied changed (a malformed line fixed) is accepted and recorded anew; so is
  any file under a name of which nothing was applied.
* A sorted file (``--sort``) feeds in time order, so its offsets do not follow its lines:
  it must start with the whole file recorded before.
* Concurrent claims on one log directory are serialised by a lock file next to it.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronoray.errors import SourceMismatch
from chronoray.sources import FileFingerprint, SortedSource, Source

__all__ = ["SOURCE_FILES", "FileClaim", "check_files", "claim_file", "recorded_files"]

SOURCE_FILES = "source-files.json"


@dataclass(frozen=True, slots=True)
class FileClaim:
    """What :func:`claim_file` found: the file now (``fingerprint``), the one recorded
    under the name before (``previous``, ``None`` if none) and the highest offset of the
    name a shard had applied (``applied``: ``0`` for a new source)."""

    source: str
    fingerprint: FileFingerprint
    previous: FileFingerprint | None
    applied: int

    @property
    def same_file(self) -> bool:
        """Whether the file is byte for byte the one recorded."""
        return self.previous is not None and self.previous.sha256 == self.fingerprint.sha256

    def describe(self) -> str | None:
        """A note for people when the file is not simply new or the same, else ``None``."""
        if self.previous is None or self.applied == 0 or self.same_file:
            return None
        before = self.previous
        if self.fingerprint.lines > before.lines and self.applied >= before.lines:
            return (
                f"{self.source}: the file grew from {before.lines:,} to "
                f"{self.fingerprint.lines:,} lines since it was ingested; lines after "
                f"{self.applied:,} are new"
            )
        return (
            f"{self.source}: the file changed after line {self.applied:,} (what the graph "
            f"applied of it is unchanged) since it was ingested from {before.path}"
        )


def recorded_files(log_dir: str | os.PathLike[str]) -> dict[str, FileFingerprint]:
    """Per source name, the file recorded for it in ``log_dir`` (empty if none)."""
    try:
        data = json.loads((Path(log_dir) / SOURCE_FILES).read_text())
    except (OSError, ValueError):
        return {}
    return {name: FileFingerprint.from_dict(fp) for name, fp in dict(data).items()}


def claim_file(
    log_dir: str | os.PathLike[str], source: Source, applied: int, *, sorted_file: bool = False
) -> FileClaim | None:
    """Check that file ``source`` may feed the graph in ``log_dir`` under its name, given
    the highest offset of that name a shard applied (``applied``), and record it there
    (``sorted_file``: it is fed sorted by time, as a :class:`SortedSource` is).

    Returns ``None`` for a source that is not a file. Raises
    :class:`~chronoray.errors.SourceMismatch` (naming both files, nothing recorded) if the
    file holds other records than the file recorded under the name, in the lines the graph
    applied of it."""
    path = getattr(source, "path", None)
    if not isinstance(path, Path):
        return None
    with _locked(Path(log_dir)):
        files = recorded_files(log_dir)
        previous = files.get(source.name)
        marks = previous.mark_lines() if previous is not None else []
        current = FileFingerprint.of(path, at=marks)
        if previous is not None and applied > 0:
            sorted_file = sorted_file or isinstance(source, SortedSource)
            through = previous.lines if sorted_file else min(applied, previous.lines)
            if not current.agrees(previous, through):
                raise SourceMismatch(_mismatch(source.name, previous, current, through))
        files[source.name] = current
        _write(Path(log_dir), files)
    return FileClaim(source.name, current, previous, applied)


def check_files(graph: Any, sources: Sequence[Source], *, sorted_files: bool = False) -> list[str]:
    """:func:`claim_file` for each of ``sources`` about to feed ``graph`` (a
    :class:`~chronoray.graph.GraphCluster`), given what its shards applied of each name;
    returns notes for people (a file that grew or changed after what was applied). A graph
    whose log directory is not on this machine cannot be checked: a note says so."""
    from chronoray.manifest import Manifest
    from shards.coordinator import source_channel

    log_dir = Path(graph.log_dir)
    files = [s for s in sources if isinstance(getattr(s, "path", None), Path)]
    if not files:
        return []
    if not Manifest.exists(log_dir):
        unchecked = "not checked against the file ingested before under this name"
        return [f"{s.name}: {unchecked} ({log_dir} is not on this machine)" for s in files]
    shards = graph.stats().shards
    notes: list[str] = []
    for source in files:
        channel = source_channel(source.name)
        applied = max((s.applied.get(channel, 0) for s in shards), default=0)
        claim = claim_file(log_dir, source, applied, sorted_file=sorted_files)
        note = claim.describe() if claim is not None else None
        if note is not None:
            notes.append(note)
    return notes


def _mismatch(name: str, before: FileFingerprint, now: FileFingerprint, through: int) -> str:
    return (
        f"source {name!r} was ingested from {before.describe()}; {now.describe()} holds other "
        f"records in its first {through:,} lines, which the graph would skip as resends: "
        f"ingest it as a new source with --source NAME (name= in Python)"
    )


@contextmanager
def _locked(log_dir: Path) -> Iterator[None]:
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / (SOURCE_FILES + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write(log_dir: Path, files: dict[str, FileFingerprint]) -> None:
    tmp = log_dir / (SOURCE_FILES + ".tmp")
    data = {name: fp.as_dict() for name, fp in sorted(files.items())}
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(log_dir / SOURCE_FILES)
