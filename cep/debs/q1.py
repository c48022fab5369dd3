"""DEBS 2016 Query 1 on the CEP layer: the top-3 posts by decaying score.

Semantics (the official call, with the conventions fixed where published solutions differ):

* A post starts with 10 points; every comment related to it -- a direct reply, or a reply
  whose chain of replies leads back to it -- adds a component of 10 points. Each component
  loses 1 point every 24 hours after its own creation (at exactly ``ts + k * 24 h``) and
  never goes below 0. A post's score is the sum.
* A post whose score reaches 0 (at its last component's 10th decay: 10 days after its
  newest activity) is dead for good: later comments to it, and replies to those, are
  ignored. So are comments whose chain does not lead to a post seen in the stream.
* Commenters: the distinct users, other than the post's author, with a related comment
  that is still alive (score > 0).
* Order: score descending, then post time descending, then the time of the last related
  comment descending (the post's own time if none), then post id ascending.
* Output: one line per input event whose processing changes the ids or order of the top-3
  (a line is not written when only a score or commenter count changed):
  ``ts,id,user,score,commenters`` for each of the three slots, ``-,-,-,-`` for an empty one,
  ``ts`` the event's time in the official form. Time-driven changes (decays, deaths)
  between two events are applied when time reaches them and show in the line of the next
  event (at equal times: before the event). Nothing is written after the end of the input.

GraphCEP's solution, as built here: the splitter is key-based on the post id (a comment
goes to its root post's instance, ``id mod n``); each instance keeps a *timetable* of its
posts' and comments' decays (a FIFO of next-decay times, each entry re-queued 24 h later
until its 10 decays are done -- GraphCEP's time-of-day list) and its local top-3 in a
two-tier ranking; the merger combines the local top-3 lists.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from cep.events import DAY_MS, Comment, Post, format_time
from cep.merger import Entry, TopKMerger
from cep.operator import Context, TopKOperator
from cep.splitter import ByKind, KeySplitter

__all__ = ["Q1Operator", "q1_merger", "q1_splitter", "render_q1"]

K = 3
_NO_SLOT = "-,-,-,-"


class _Post:
    __slots__ = ("post_id", "ts", "user_id", "user", "score", "last", "commenters")

    def __init__(self, post: Post) -> None:
        self.post_id = post.post_id
        self.ts = post.ts
        self.user_id = post.user_id
        self.user = post.user
        self.score = 10
        self.last = post.ts
        self.commenters: dict[int, int] = {}  # user -> live comments on this post


class Q1Operator(TopKOperator):
    """One Query 1 instance: the posts whose id it owns, their timetable, local top-3."""

    def __init__(self) -> None:
        super().__init__(K, low=20, high=40)  # GraphCEP's threshold margins
        self.posts: dict[int, _Post] = {}
        # [next decay time, post id, decays left, commenter or None]; times increase
        self.timetable: deque[list[Any]] = deque()
        self.ignored = 0
        self.deaths = 0

    def _rank(self, post: _Post) -> None:
        self.ranking.set(
            post.post_id,
            (-post.score, -post.ts, -post.last, post.post_id),
            (post.post_id, post.user, post.score, len(post.commenters)),
        )

    def advance(self, ctx: Context, time: int) -> None:
        table = self.timetable
        while table and table[0][0] <= time:
            t = table[0][0]
            while table and table[0][0] == t:
                self._decay(table.popleft())
            self.report(ctx, (t, 0, 0))

    def _decay(self, entry: list[Any]) -> None:
        _, post_id, left, commenter = entry
        post = self.posts[post_id]  # a post outlives its entries: its score is their sum
        post.score -= 1
        if left > 1:
            entry[0] += DAY_MS
            entry[2] = left - 1
            self.timetable.append(entry)
        elif commenter is not None:
            count = post.commenters[commenter] - 1
            if count:
                post.commenters[commenter] = count
            else:
                del post.commenters[commenter]
        if post.score == 0:
            del self.posts[post_id]
            self.ranking.remove(post_id)
            self.deaths += 1
        else:
            self._rank(post)

    def on_event(self, ctx: Context, seq: int, event: Any, partitions: tuple[Any, ...]) -> None:
        if isinstance(event, Post):
            post = self.posts[event.post_id] = _Post(event)
            self.timetable.append([event.ts + DAY_MS, event.post_id, 10, None])
        else:
            post = self.posts.get(partitions[0])
            if post is None:  # dead, or never seen
                self.ignored += 1
                return
            post.score += 10
            post.last = event.ts
            commenter = event.user_id if event.user_id != post.user_id else None
            if commenter is not None:
                post.commenters[commenter] = post.commenters.get(commenter, 0) + 1
            self.timetable.append([event.ts + DAY_MS, post.post_id, 10, commenter])
        self._rank(post)
        self.report(ctx, (event.ts, 1, seq))

    def stats(self) -> dict[str, Any]:
        return {"live_posts": len(self.posts), "deaths": self.deaths, "ignored": self.ignored}


def q1_splitter() -> ByKind:
    """Posts by post id; comments by the id of the post their reply chain leads to
    (comments whose chain leads nowhere known are dropped)."""
    roots: dict[int, int] = {}

    def comment_root(c: Comment) -> int | None:
        root = c.post_id if c.post_id is not None else roots.get(c.replied)  # type: ignore[arg-type]
        if root is not None:
            roots[c.comment_id] = root
        return root

    return ByKind({Post: KeySplitter(lambda p: p.post_id), Comment: KeySplitter(comment_root)})


def render_q1(time: int, best: list[Entry]) -> str:
    """An output line: the time and the three slots."""
    slots = [f"{pid},{user},{score},{commenters}" for _, _, (pid, user, score, commenters) in best]
    slots += [_NO_SLOT] * (K - len(slots))
    return ",".join([format_time(time), *slots])


def q1_merger() -> TopKMerger:
    """Top-3 by ids and order; lines only at input events."""
    return TopKMerger(K, lambda item, _: item, render_q1, time_steps=False)
