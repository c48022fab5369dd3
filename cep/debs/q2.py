"""DEBS 2016 Query 2 on the CEP layer: the top-k comments by their likers' community.

Semantics (the official call, with the conventions fixed where published solutions differ):

* A comment counts from its own time ``t`` for ``d`` seconds: during ``[t, t + d)``. Likes
  at a time outside that (or of comments never seen) are ignored; a repeated like counts
  once. Friendships are undirected, kept forever, and count whenever they were made.
* A comment's *range* is, among the users who liked it, the size of the largest connected
  component of the friendship graph they induce (``community="component"``, the official
  text, the default) or of its maximum clique (``community="clique"``, as GraphCEP and
  others compute it).
* Listed: the comments with range >= 1 (at least one like), by range descending, then
  comment text ascending in code-point order (then comment id, which the output does not
  show), padded with ``-`` to ``k`` slots: ``ts,text_1,...,text_k``.
* A line is written whenever the k texts change: at an input event's time when that event
  changed them, and at ``t + d`` when comments leaving the window did (all comments that
  leave at one time together, before the input events of that same time). Nothing is
  written after the end of the input.

GraphCEP's solution, as built here: a predicate-based splitter opens a partition per
comment (closed at ``t + d``) on instance ``id mod n``; likes go to their comment's
partition; friendships are broadcast to every instance. Each instance holds a chronoray
graph of persons and its live comments (:mod:`cep.debs.community`): ``manipulate_graph``
adds likes and friendships and deletes expired comments, and ``execute`` reads the ranges
a live computation records on it. The merger combines the instances' local top-k.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

from cep.debs.community import LikedComment, LikerCommunity, Person, comment_vertex
from cep.events import Comment, Friendship, Like, format_time
from cep.merger import Entry, StepKey, TopKMerger
from cep.operator import Context, EmbeddedGraph, TopKOperator
from cep.splitter import Broadcast, ByKind, Partition, PredicateSplitter
from vertex import Update

__all__ = ["Q2Operator", "q2_merger", "q2_splitter", "render_q2"]

Community = Literal["component", "clique"]


class Q2Operator(TopKOperator):
    """One Query 2 instance: its comments' partitions and an embedded chronoray graph."""

    def __init__(
        self, k: int, d_seconds: int, community: Community = "component", shards: int = 1
    ) -> None:
        super().__init__(k, low=1, high=3)
        if d_seconds < 1:
            raise ValueError(f"d must be >= 1 second, got {d_seconds}")
        self.window = d_seconds * 1000
        self.community = community
        self.shards = shards
        self.comments: dict[str, tuple[str, int]] = {}  # vertex -> (text, comment id)
        self.expiries: deque[tuple[int, str]] = deque()  # (time, vertex), times increase
        self.expired_steps: list[tuple[StepKey, list[str]]] = []
        self.event_times: dict[int, int] = {}
        self.graph: EmbeddedGraph | None = None
        self.computation = LikerCommunity(community)

    def start(self, ctx: Context) -> None:
        self.graph = ctx.graph([Person, LikedComment], shards=self.shards)
        self.graph.execute(self.computation)  # live before the first like

    def advance(self, ctx: Context, time: int) -> None:
        queue = self.expiries
        assert self.graph is not None
        while queue and queue[0][0] <= time:
            t = queue[0][0]
            gone = []
            while queue and queue[0][0] == t:
                gone.append(queue.popleft()[1])
            self.graph.manipulate_graph(Update.remove_vertex(v, t) for v in gone)
            self.expired_steps.append(((t, 0, 0), gone))

    def on_event(self, ctx: Context, seq: int, event: Any, partitions: tuple[Any, ...]) -> None:
        graph = self.graph
        assert graph is not None
        if isinstance(event, Comment):
            v = comment_vertex(event.comment_id)
            self.comments[v] = (event.text, event.comment_id)
            self.expiries.append((event.ts + self.window, v))
            graph.manipulate_graph(
                [Update.add_vertex(v, event.ts, LikedComment.type_name, created=event.ts)]
            )
        elif isinstance(event, Like):
            v = comment_vertex(event.comment_id)
            if v not in self.comments:  # the splitter only routes likes of live comments
                return
            self.event_times[seq] = event.ts
            graph.manipulate_graph(
                [Update.add_edge(event.user_id, v, event.ts, kind="like", seq=seq)]
            )
        elif isinstance(event, Friendship) and event.user1 != event.user2:
            self.event_times[seq] = event.ts
            a, b = event.user1, event.user2
            graph.manipulate_graph(
                [
                    Update.add_edge(a, b, event.ts, kind="friend", seq=seq),
                    Update.add_edge(b, a, event.ts, kind="friend", seq=seq),
                ]
            )

    def end_batch(self, ctx: Context) -> None:
        assert self.graph is not None
        changes = self.graph.execute(self.computation)
        steps: list[tuple[StepKey, int, Any]] = [(key, 0, gone) for key, gone in self.expired_steps]
        steps += [((self.event_times[seq], 1, seq), 1, (v, r)) for seq, v, r in changes]
        steps.sort(key=lambda s: s[0])  # stable: one step's changes keep their order
        ranking = self.ranking
        for i, (key, kind, what) in enumerate(steps):
            if kind == 0:
                for v in what:
                    ranking.remove(v)
                    del self.comments[v]
            else:
                v, r = what
                text, cid = self.comments[v]
                ranking.set(v, (-r, text, cid), text)
            if i + 1 == len(steps) or steps[i + 1][0] != key:
                self.report(ctx, key)
        self.expired_steps = []
        self.event_times = {}

    def stats(self) -> dict[str, Any]:
        graph = self.graph
        return {"live_comments": len(self.comments), "graph_updates": graph.updates if graph else 0}


def q2_splitter(d_seconds: int) -> ByKind:
    """A partition per comment, open for ``d`` seconds; likes to their comment's
    partition; friendships to every instance."""
    window = d_seconds * 1000

    def closes(partition: Partition, event: Any) -> bool:
        return event[0] >= partition.opened_by.ts + window

    def opens(event: Any) -> int | None:
        return event.comment_id if isinstance(event, Comment) else None

    comments = PredicateSplitter(opens, closes, member=lambda e: e.comment_id)
    return ByKind({Comment: comments, Like: comments, Friendship: Broadcast()})


def render_q2(k: int) -> Any:
    """The line renderer for ``k`` slots."""

    def render(time: int, best: list[Entry]) -> str:
        texts = [text for _, _, text in best] + ["-"] * (k - len(best))
        return ",".join([format_time(time), *texts])

    return render


def q2_merger(k: int) -> TopKMerger:
    """Top-k by texts; lines at input events and at window expiries."""
    return TopKMerger(k, lambda _, text: text, render_q2(k), time_steps=True)
