"""A seeded generator of DEBS-2016-shaped streams (the four official files).

The shape follows what makes the queries work hard:

* **Reply chains** of several depths: a comment replies to a recent post or to a recent
  comment (whose root is found by following the chain), now and then to a post or comment
  long gone (dead posts, expired comments) or to an id that never appeared.
* **Skewed likes**: recent and popular comments get most likes, mostly from the comment
  author's circle of friends, so likers form communities of several sizes; some likes
  repeat, some reach comments that left the window.
* **Growing friendships**: users live in circles; friendships appear all along the
  stream, mostly inside a circle, sometimes across, some repeated.
* **Several days**, so that Query 1's daily decay and deaths and Query 2's window expiries
  matter, and **ties**: many timestamps fall on whole seconds (equal times across and
  within files), texts come from a small vocabulary (equal texts), scores collide.

The same ``seed`` and parameters always give byte-identical files.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> counts = generate(d, events=2000, seed=7, days=5)
>>> sorted(counts), sum(counts.values())
(['comments', 'friendships', 'likes', 'posts'], 2000)
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from cep.events import DAY_MS, format_time, parse_time

__all__ = ["generate", "DEFAULT_MIX"]

DEFAULT_MIX = {"posts": 0.15, "comments": 0.45, "likes": 0.30, "friendships": 0.10}
"""Share of each file in the stream (roughly the official data set's)."""

_START = parse_time("2010-02-01T00:00:00.000+0000")
_FIRST = ("Anna", "Chong", "Karl", "Yahya", "Paul", "Alim", "Jun", "Maria", "Ivan", "Lena")
_LAST = ("Fischer", "Liu", "Becker", "Chen", "Abdallahi", "Guliyev", "Zhang", "Silva")
_PHRASES = (
    "LOL",
    "thanks",
    "great",
    "ok",
    "no way",
    "I love strawberries",
    "what a day!",
    "well done",
    "About Sergei Eisenstein, his films",
    "About Ho Chi Minh, the early years",
    "duh",
    "right",
)


def _user_name(uid: int) -> str:
    return f"{_FIRST[uid % len(_FIRST)]} {_LAST[(uid // len(_FIRST)) % len(_LAST)]}"


class _Stream:
    """Draws one event at a time; keeps just the recent past it needs."""

    def __init__(self, rng: random.Random, users: int, circle: int) -> None:
        self.rng = rng
        self.users = users
        self.circle = circle
        self.posts: list[int] = []  # ids of posts, in time order
        self.comments: list[tuple[int, int]] = []  # (comment id, author), in time order
        self.next_id = 1

    def _member(self, uid: int) -> int:
        base = (uid // self.circle) * self.circle
        return min(self.users - 1, base + self.rng.randrange(self.circle))

    def _recent(self, items: list, scale: float) -> int:
        """An index into ``items``, most likely one of the last ones (``scale``: typical age)."""
        back = int(self.rng.expovariate(1.0 / scale))
        if self.rng.random() < 0.03:  # now and then something long gone
            back = self.rng.randrange(len(items))
        return max(0, len(items) - 1 - back)

    def post(self, t: str) -> str:
        pid, self.next_id = self.next_id, self.next_id + 1
        uid = self.rng.randrange(self.users)
        self.posts.append(pid)
        return f"{t}|{pid}|{uid}|post {pid}|{_user_name(uid)}"

    def comment(self, t: str) -> str | None:
        if not self.posts:
            return None
        rng = self.rng
        cid, self.next_id = self.next_id, self.next_id + 1
        uid = rng.randrange(self.users)
        text = rng.choice(_PHRASES) if rng.random() < 0.7 else f"comment {cid}"
        roll = rng.random()
        if roll < 0.45 or not self.comments:
            replied, post = "", str(self.posts[self._recent(self.posts, 40)])
        elif roll < 0.99:
            replied, post = str(self.comments[self._recent(self.comments, 30)][0]), ""
        else:
            replied, post = str(self.next_id + 10_000_000), ""  # a parent that never appears
        self.comments.append((cid, uid))
        return f"{t}|{cid}|{uid}|{text}|{_user_name(uid)}|{replied}|{post}"

    def like(self, t: str) -> str | None:
        if not self.comments:
            return None
        cid, author = self.comments[self._recent(self.comments, 25)]
        liker = self._member(author) if self.rng.random() < 0.85 else self.rng.randrange(self.users)
        return f"{t}|{liker}|{cid}"

    def friendship(self, t: str) -> str:
        a = self.rng.randrange(self.users)
        b = self._member(a) if self.rng.random() < 0.8 else self.rng.randrange(self.users)
        return f"{t}|{a}|{b}"


def generate(
    out_dir: str | os.PathLike[str],
    *,
    events: int,
    seed: int = 0,
    days: float = 12.0,
    users: int | None = None,
    circle: int = 12,
    mix: dict[str, float] | None = None,
) -> dict[str, int]:
    """Write ``posts.dat``, ``comments.dat``, ``likes.dat`` and ``friendships.dat`` with
    ``events`` lines in total, spread over ``days`` from 2010-02-01, into ``out_dir``.

    ``users`` defaults to ``max(40, events // 30)``, in circles of ``circle`` users;
    ``mix`` gives each file's share (default :data:`DEFAULT_MIX`). Returns the line count
    per file. The first friendships come before the first post, so the social graph
    exists when the first likes arrive.
    """
    if events < 1:
        raise ValueError(f"events must be >= 1, got {events}")
    rng = random.Random(seed)
    shares = mix or DEFAULT_MIX
    kinds = list(shares)
    weights = [shares[k] for k in kinds]
    stream = _Stream(rng, users or max(40, events // 30), circle)
    draw = {
        "posts": stream.post,
        "comments": stream.comment,
        "likes": stream.like,
        "friendships": stream.friendship,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {k: open(out / f"{k}.dat", "w", encoding="utf-8", newline="\n") for k in draw}
    counts = dict.fromkeys(draw, 0)
    gap = days * DAY_MS / events
    now = float(_START)
    last = _START
    try:
        written = 0
        while written < events:
            roll = rng.random()
            if roll >= 0.15:  # else a burst: the same time as the previous event
                now += rng.expovariate(1.0 / gap)
            ms = int(now)
            if roll < 0.45:  # whole seconds: more equal times within and across files
                ms -= ms % 1000
            last = max(ms, last)  # rounding down must not go back in time
            t = format_time(last)
            kind = "friendships" if written < 5 else rng.choices(kinds, weights)[0]
            line = draw[kind](t)
            if line is None:
                continue
            files[kind].write(line + "\n")
            counts[kind] += 1
            written += 1
    finally:
        for f in files.values():
            f.close()
    return counts
