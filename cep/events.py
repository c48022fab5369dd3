"""DEBS 2016 events and the official timestamp form.

Times are integers: milliseconds since 1970-01-01 UTC. The files and the query outputs
write them in the official ISO-8601 form ``2010-02-01T05:12:32.921+0000``: date, ``T``,
time with exactly three fraction digits, and a ``+hhmm``/``-hhmm`` offset. Parsing accepts
any offset and converts to UTC; formatting always writes UTC as ``+0000``.

>>> ms = parse_time("2010-02-01T05:12:32.921+0000")
>>> ms
1265001152921
>>> format_time(ms)
'2010-02-01T05:12:32.921+0000'
>>> format_time(parse_time("2010-02-01T07:12:32.921+0200"))
'2010-02-01T05:12:32.921+0000'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple

__all__ = [
    "DAY_MS",
    "Comment",
    "Event",
    "Friendship",
    "Like",
    "Post",
    "format_time",
    "parse_time",
]

DAY_MS = 86_400_000
"""24 hours in milliseconds: the decay step of Query 1."""

_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})([+-])(\d{2})(\d{2})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_time(text: str) -> int:
    """Milliseconds since the epoch (UTC) of an official timestamp; ``ValueError`` if
    ``text`` is not exactly of the form ``YYYY-MM-DDTHH:MM:SS.mmm+hhmm`` or not a real
    date and time."""
    m = _TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"not a timestamp of the form YYYY-MM-DDTHH:MM:SS.mmm+hhmm: {text!r}")
    year, month, day, hour, minute, second, millis, sign, off_h, off_m = m.groups()
    h, mi, s, oh, om = int(hour), int(minute), int(second), int(off_h), int(off_m)
    if h > 23 or mi > 59 or s > 59 or oh > 23 or om > 59:
        raise ValueError(f"not a valid time of day or UTC offset: {text!r}")
    try:
        midnight = _day_ms(int(year), int(month), int(day))
    except ValueError as exc:
        raise ValueError(f"not a valid date ({exc}): {text!r}") from None
    offset = (oh * 60 + om) * 60_000
    local = midnight + ((h * 60 + mi) * 60 + s) * 1000 + int(millis)
    return local - offset if sign == "+" else local + offset


@lru_cache(maxsize=4096)
def _day_ms(year: int, month: int, day: int) -> int:
    # a stream holds few distinct days: the calendar arithmetic runs once per day
    return (datetime(year, month, day, tzinfo=UTC) - _EPOCH) // timedelta(milliseconds=1)


def format_time(ms: int) -> str:
    """The official form of ``ms`` (UTC, ``+0000``)."""
    when = _EPOCH + timedelta(milliseconds=ms)
    return f"{when:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}+0000"


class Post(NamedTuple):
    """``posts.dat``: a post by ``user_id`` (named ``user``) with content ``text``."""

    ts: int
    post_id: int
    user_id: int
    text: str
    user: str


class Comment(NamedTuple):
    """``comments.dat``: a comment on post ``post_id`` or a reply to comment ``replied``
    (exactly one of them is set, the other is ``None``)."""

    ts: int
    comment_id: int
    user_id: int
    text: str
    user: str
    replied: int | None
    post_id: int | None


class Like(NamedTuple):
    """``likes.dat``: ``user_id`` likes comment ``comment_id``."""

    ts: int
    user_id: int
    comment_id: int


class Friendship(NamedTuple):
    """``friendships.dat``: ``user1`` and ``user2`` become friends (undirected)."""

    ts: int
    user1: int
    user2: int


Event = Post | Comment | Like | Friendship
"""Anything in the merged stream; every kind has its time ``ts`` (ms, UTC) first.
Events are named tuples: cheap to build, to pickle and to ship to operator instances."""
