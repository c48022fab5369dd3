"""Readers for the official DEBS 2016 files, merged into one stream by time.

Formats (``|``-separated, one record per line, each file sorted by its time field):

* ``posts.dat``: ``ts|post_id|user_id|post|user``
* ``comments.dat``: ``ts|comment_id|user_id|comment|user|comment_replied|post_commented``
  -- exactly one of the last two is set; the other is ``-1`` (as the call for solutions
  says) or empty (as the published data sets write it)
* ``likes.dat``: ``ts|user_id|comment_id``
* ``friendships.dat``: ``ts|user_id_1|user_id_2``

Timestamps are in the official form (:func:`cep.events.parse_time`), ids non-negative
integers in ASCII digits, texts anything without ``|``.

Bad input follows the rules of chronoray's other sources: a bad line raises
:class:`chronoray.MalformedRecord` naming the file, the 1-based line, the reason and the
raw text -- after every event merged before that file's previous good line was yielded
(other files' events of later times may not be), none after it. With
``on_error="skip"`` it is counted and appended to the ``rejects`` file as
``file<TAB>line<TAB>reason<TAB>text`` (the same format as ``chronoray ingest``'s rejects),
and reading goes on. A line whose time is earlier than the previous good line of the same
file is bad too ("time goes back"): the queries need time order. Blank lines are skipped.

Merging: events are ordered by time; at equal times posts come first, then comments,
likes and friendships, each file in its own line order. The merged position is the
event's sequence number in the queries.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cep.events import Comment, Event, Friendship, Like, Post, parse_time
from chronoray import MalformedRecord
from chronoray.sources import RejectWriter

__all__ = [
    "KINDS",
    "DebsFiles",
    "StreamStats",
    "line_outcome",
    "read_file",
    "read_stream",
    "time_goes_back",
]

KINDS = ("posts", "comments", "likes", "friendships")
"""The four files, in their merge order at equal times."""


@dataclass(frozen=True)
class DebsFiles:
    """Paths of the input files; a query reads only the ones it needs (``None``: absent)."""

    posts: Path | None = None
    comments: Path | None = None
    likes: Path | None = None
    friendships: Path | None = None

    @classmethod
    def in_dir(cls, directory: str | os.PathLike[str]) -> DebsFiles:
        """The four files as named in the official data set, in ``directory``."""
        d = Path(directory)
        return cls(*(d / f"{kind}.dat" for kind in KINDS))

    def only(self, *kinds: str) -> DebsFiles:
        """These files with every kind not in ``kinds`` left out."""
        return DebsFiles(**{k: getattr(self, k) if k in kinds else None for k in KINDS})


@dataclass
class StreamStats:
    """Live counters of one :func:`read_stream`: good events per file and rejected lines."""

    events: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    rejected: int = 0

    @property
    def total(self) -> int:
        """Good events read so far."""
        return sum(self.events.values())


def _id(text: str, what: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{what} is not a non-negative integer: {text!r}")
    return int(text)


def _ref(text: str, what: str) -> int | None:
    return None if text in ("", "-1") else _id(text, what)


def _post(f: list[str]) -> Post:
    return Post(parse_time(f[0]), _id(f[1], "post_id"), _id(f[2], "user_id"), f[3], f[4])


def _comment(f: list[str]) -> Comment:
    replied = _ref(f[5], "comment_replied")
    post = _ref(f[6], "post_commented")
    if (replied is None) == (post is None):
        raise ValueError("exactly one of comment_replied and post_commented must be set")
    return Comment(
        parse_time(f[0]), _id(f[1], "comment_id"), _id(f[2], "user_id"), f[3], f[4], replied, post
    )


def _like(f: list[str]) -> Like:
    return Like(parse_time(f[0]), _id(f[1], "user_id"), _id(f[2], "comment_id"))


def _friendship(f: list[str]) -> Friendship:
    return Friendship(parse_time(f[0]), _id(f[1], "user_id_1"), _id(f[2], "user_id_2"))


_PARSERS: dict[str, tuple[int, str, Callable[[list[str]], Event]]] = {
    "posts": (5, "ts|post_id|user_id|post|user", _post),
    "comments": (7, "ts|comment_id|user_id|comment|user|comment_replied|post_commented", _comment),
    "likes": (3, "ts|user_id|comment_id", _like),
    "friendships": (3, "ts|user_id_1|user_id_2", _friendship),
}


def line_outcome(where: str, lineno: int, line: bytes, kind: str) -> Event | MalformedRecord:
    """The event of one non-blank line (without its newline) of a ``kind`` file, or why it
    is malformed (a :class:`MalformedRecord`, not raised). The one owner of the line rules
    and their messages; time order across lines is the caller's."""
    fields, layout, parse = _PARSERS[kind]
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        shown = line.decode("utf-8", "backslashreplace")
        return MalformedRecord(where, lineno, shown, "not UTF-8 text")
    parts = text.split("|")
    if len(parts) != fields:
        reason = f"expected {fields} |-separated fields {layout}, got {len(parts)}"
        return MalformedRecord(where, lineno, text, reason)
    try:
        return parse(parts)
    except ValueError as exc:
        return MalformedRecord(where, lineno, text, str(exc))


def time_goes_back(where: str, lineno: int, line: bytes) -> MalformedRecord:
    """The record of a line whose time is before the previous good line's."""
    text = line.decode("utf-8")
    reason = f"time goes back: {text.split('|', 1)[0]} is before the previous line's time"
    return MalformedRecord(where, lineno, text, reason)


def read_file(
    path: str | os.PathLike[str], kind: str
) -> Iterator[tuple[int, Event | MalformedRecord]]:
    """``(line, outcome)`` for every non-blank line of the ``kind`` file at ``path``: the
    event, or a :class:`MalformedRecord` instance (not raised; reading goes on)."""
    if kind not in _PARSERS:
        raise ValueError(f"unknown DEBS file kind {kind!r}; expected one of {', '.join(KINDS)}")
    where = os.fspath(path)
    last = None
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            outcome = line_outcome(where, lineno, line, kind)
            if isinstance(outcome, MalformedRecord):
                yield lineno, outcome
                continue
            if last is not None and outcome.ts < last:
                yield lineno, time_goes_back(where, lineno, line)
                continue
            last = outcome.ts
            yield lineno, outcome


def read_stream(
    files: DebsFiles,
    on_error: Literal["raise", "skip"] = "raise",
    rejects: str | os.PathLike[str] | None = None,
) -> tuple[Iterator[Event], StreamStats]:
    """The events of ``files`` merged by time (see the module doc for the order and the
    bad-input rules), and counters updated as the iterator advances."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    for kind in KINDS:
        path = getattr(files, kind)
        if path is not None and not Path(path).is_file():
            raise FileNotFoundError(f"{kind} file not found: {path}")
    stats = StreamStats()
    writer = RejectWriter(rejects) if rejects is not None and on_error == "skip" else None
    return _merged(files, on_error == "skip", writer, stats), stats


def _merged(
    files: DebsFiles, skip: bool, rejects: RejectWriter | None, stats: StreamStats
) -> Iterator[Event]:
    def tagged(rank: int, kind: str, path: Path) -> Iterator[tuple[int, int, int, Event]]:
        for lineno, outcome in read_file(path, kind):
            if isinstance(outcome, MalformedRecord):
                if not skip:
                    raise outcome
                stats.rejected += 1
                if rejects is not None:
                    rejects.write(outcome)
                continue
            stats.events[kind] += 1
            yield outcome.ts, rank, lineno, outcome

    streams = [
        tagged(rank, kind, getattr(files, kind))
        for rank, kind in enumerate(KINDS)
        if getattr(files, kind) is not None
    ]
    try:
        for *_, event in heapq.merge(*streams):
            yield event
    finally:
        if rejects is not None:
            rejects.close()
