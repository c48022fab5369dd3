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
goes to its root post's instance, ``id mod n``; the splitter follows reply chains with a
compiled kernel over the batch's columns and adds the root as column ``key``); each
instance keeps a *timetable* of its posts' and comments' decays and its local top-3
(:mod:`cep.debs.q1kernel`, numba over column tables); the merger combines the local top-3
lists. The query needs no graph history: its state is the present scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from cep.debs.q1kernel import Q1State, comment_roots
from cep.events import format_time
from cep.merger import Entry, TopKMerger
from cep.operator import Context, Operator
from cep.tables import IntMap

__all__ = ["Q1Operator", "Q1Splitter", "q1_merger", "q1_splitter", "render_q1"]

K = 3
_NO_SLOT = "-,-,-,-"


class Q1Operator(Operator):
    """One Query 1 instance: the posts whose id it owns, their timetable, local top-3."""

    def __init__(self) -> None:
        self.state = Q1State()

    def process(self, ctx: Context, batch: pa.RecordBatch, until: int) -> None:
        for key, entries in self.state.run(batch, until):
            ctx.emit(key, tuple(
                ((-score, -ts, -last, pid), pid, (pid, name, score, commenters))
                for score, ts, last, pid, name, commenters in entries
            ))  # fmt: skip

    def stats(self) -> dict[str, Any]:
        return {"live_posts": len(self.state.post_ids)}


class Q1Splitter:
    """Posts by post id; comments by the id of the post their reply chain leads to
    (comments whose chain leads to no post seen before them are dropped). Adds the column
    ``key``: that post id."""

    def __init__(self) -> None:
        self.instances = 1
        self.seen = IntMap()
        self.roots = IntMap()

    def bind(self, instances: int) -> None:
        self.instances = instances

    def split(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        kind, a, c, d = (batch.column(name).to_numpy() for name in ("kind", "a", "c", "d"))
        self.seen.reserve(len(kind))
        self.roots.reserve(len(kind))
        key = np.empty(len(kind), np.int64)
        s, r = self.seen, self.roots
        comment_roots(kind, a, c, d, s.keys, s.vals, s.meta, r.keys, r.vals, r.meta, key)
        keyed = batch.append_column("key", pa.array(key))
        instance = np.where(key >= 0, key % self.instances, -1)
        return [keyed.filter(pa.array(instance == i)) for i in range(self.instances)]


def q1_splitter() -> Q1Splitter:
    """Query 1's splitter."""
    return Q1Splitter()


def render_q1(time: int, best: list[Entry]) -> str:
    """An output line: the time and the three slots."""
    slots = [f"{pid},{user},{score},{commenters}" for _, _, (pid, user, score, commenters) in best]
    slots += [_NO_SLOT] * (K - len(slots))
    return ",".join([format_time(time), *slots])


def q1_merger() -> TopKMerger:
    """Top-3 by ids and order; lines only at input events."""
    return TopKMerger(K, lambda item, _: item, render_q1, time_steps=False)
