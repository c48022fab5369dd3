"""Helpers for the CEP tests: write small DEBS files, run a query, read its events."""

from __future__ import annotations

from pathlib import Path

from cep import QUERY_FILES, DebsFiles, read_stream, run_query
from cep.events import DAY_MS, format_time, parse_time

T0 = parse_time("2010-02-01T00:00:00.000+0000")


def at(days: float = 0, hours: float = 0, seconds: float = 0) -> str:
    """The official timestamp ``days``, ``hours``, ``seconds`` after 2010-02-01 00:00."""
    return format_time(T0 + int(days * DAY_MS + hours * 3_600_000 + seconds * 1000))


def write_debs(directory: Path, **lines: list[str]) -> DebsFiles:
    """Write the given files (``posts=[...]``...; the others empty) into ``directory``."""
    for kind in ("posts", "comments", "likes", "friendships"):
        text = "".join(line + "\n" for line in lines.get(kind, []))
        (directory / f"{kind}.dat").write_text(text, encoding="utf-8")
    return DebsFiles.in_dir(directory)


def run(query: str, files: DebsFiles, **options) -> list[str]:
    """Output lines of ``query`` (in-process runtime unless ``runtime=`` says otherwise)."""
    options.setdefault("runtime", "local")
    out: list[str] = []
    run_query(query, files, out.append, **options)
    return out


def events_of(query: str, files: DebsFiles) -> list:
    """The merged events ``query`` reads."""
    return list(read_stream(files.only(*QUERY_FILES[query]))[0])
