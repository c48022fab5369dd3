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

GraphCEP's solution, as built here: the splitter routes a comment and its likes to
instance ``comment id mod n`` (a partition per comment: the instance drops likes outside
its window) and a friendship only to the instances that know both friends (GraphCEP
broadcasts them; see :class:`~cep.debs.q2kernel.FriendRouter`). Each instance keeps the
graph of persons and its live comments, and each comment's community as likes and
friendships arrive, in one of two stores (``store=``):

* ``"memory"`` (the default): the query needs only the graph's present state, so the
  instance keeps it in column tables updated by a compiled kernel
  (:mod:`cep.debs.q2kernel`): union-find for components, a bounded local search for
  cliques, nothing logged. A lost instance is rebuilt by replaying the input.
* ``"log"``: a chronoray graph (:mod:`cep.debs.community`): ``manipulate_graph`` adds
  likes and friendships and deletes expired comments, every behavior logged to RocksDB
  (history: the graph at any past time, recovery from the log), and ``execute`` reads the
  ranges a live computation records on it. One event at a time through vertex objects:
  far slower.

The merger combines the instances' local top-k.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

import pyarrow as pa

import chronoray as cr
from cep.columns import COMMENT, FRIEND, LIKE
from cep.debs.community import LikedComment, LikerCommunity, Person, comment_vertex
from cep.debs.q2kernel import FriendRouter, Q2State
from cep.events import format_time
from cep.merger import Entry, StepKey, TopKMerger
from cep.operator import Context, EmbeddedGraph, Operator, TopKOperator

__all__ = ["Q2GraphOperator", "Q2Operator", "Q2Splitter", "q2_merger", "q2_splitter", "render_q2"]

Community = Literal["component", "clique"]
Store = Literal["memory", "log"]


def _checked(d_seconds: int, community: str) -> int:
    if d_seconds < 1:
        raise ValueError(f"d must be >= 1 second, got {d_seconds}")
    if community not in ("component", "clique"):
        raise ValueError(f"community must be 'component' or 'clique', got {community!r}")
    return d_seconds * 1000


class Q2Operator(Operator):
    """One Query 2 instance keeping its graph's present state in column tables."""

    def __init__(self, k: int, d_seconds: int, community: Community = "component") -> None:
        self.state = Q2State(k, _checked(d_seconds, community), community == "clique")

    def process(self, ctx: Context, batch: pa.RecordBatch, until: int) -> None:
        for key, entries in self.state.run(batch, until):
            ctx.emit(key, tuple(((-r, text, cid), cid, text) for r, cid, text in entries))

    def stats(self) -> dict[str, Any]:
        return {"live_comments": len(self.state.comment_ids), "likes": int(self.state.meta[3])}


class Q2GraphOperator(TopKOperator):
    """One Query 2 instance holding an embedded chronoray graph (``store="log"``)."""

    def __init__(
        self, k: int, d_seconds: int, community: Community = "component", shards: int = 1
    ) -> None:
        super().__init__(k, low=1, high=3)
        self.window = _checked(d_seconds, community)
        self.shards = shards
        self.comments: dict[str, tuple[str, int]] = {}  # vertex -> (text, comment id)
        self.live: set[str] = set()
        self.expiries: deque[tuple[int, str]] = deque()  # (time, vertex), times increase
        self.expired_steps: list[tuple[StepKey, list[str]]] = []
        self.event_times: dict[int, int] = {}
        self.graph: EmbeddedGraph | None = None
        self.computation = LikerCommunity(community)

    def start(self, ctx: Context) -> None:
        self.graph = ctx.graph([Person, LikedComment], shards=self.shards)
        self.graph.execute(self.computation)  # live before the first like

    def process(self, ctx: Context, batch: pa.RecordBatch, until: int) -> None:
        # one event at a time through the graph's vertex objects: this store's cost
        for row in batch.to_pylist():
            self._advance(row["ts"])
            self._on_event(row)
        self._advance(until)
        self._read_ranges(ctx)

    def _advance(self, time: int) -> None:
        queue = self.expiries
        assert self.graph is not None
        while queue and queue[0][0] <= time:
            t = queue[0][0]
            gone = []
            while queue and queue[0][0] == t:
                gone.append(queue.popleft()[1])
            self.live.difference_update(gone)
            self.graph.manipulate_graph(cr.Update.remove_vertex(v, t) for v in gone)
            self.expired_steps.append(((t, 0, 0), gone))

    def _on_event(self, row: dict[str, Any]) -> None:
        graph = self.graph
        assert graph is not None
        kind, ts, seq = row["kind"], row["ts"], row["seq"]
        if kind == COMMENT:
            v = comment_vertex(row["a"])
            self.comments[v] = (row["text"], row["a"])
            self.live.add(v)
            self.expiries.append((ts + self.window, v))
            created = cr.Update.add_vertex(v, ts, LikedComment.type_name, created=ts)
            graph.manipulate_graph([created])
        elif kind == LIKE:
            v = comment_vertex(row["b"])
            if v not in self.live:
                return
            self.event_times[seq] = ts
            graph.manipulate_graph([cr.Update.add_edge(row["a"], v, ts, kind="like", seq=seq)])
        elif kind == FRIEND and row["a"] != row["b"]:
            self.event_times[seq] = ts
            a, b = row["a"], row["b"]
            graph.manipulate_graph(
                [
                    cr.Update.add_edge(a, b, ts, kind="friend", seq=seq),
                    cr.Update.add_edge(b, a, ts, kind="friend", seq=seq),
                ]
            )

    def _read_ranges(self, ctx: Context) -> None:
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


class Q2Splitter:
    """Comments and their likes to instance ``comment id mod n``; friendships only to the
    instances whose likers they join (:class:`~cep.debs.q2kernel.FriendRouter`)."""

    def __init__(self) -> None:
        self.router: FriendRouter | None = None

    def bind(self, instances: int) -> None:
        self.router = FriendRouter(instances) if instances > 1 else None

    def split(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        return [batch] if self.router is None else self.router.split(batch)


def q2_splitter() -> Q2Splitter:
    """Query 2's splitter."""
    return Q2Splitter()


def render_q2(k: int) -> Any:
    """The line renderer for ``k`` slots."""

    def render(time: int, best: list[Entry]) -> str:
        texts = [text for _, _, text in best] + ["-"] * (k - len(best))
        return ",".join([format_time(time), *texts])

    return render


def q2_merger(k: int) -> TopKMerger:
    """Top-k by texts; lines at input events and at window expiries."""
    return TopKMerger(k, lambda _, text: text, render_q2(k), time_steps=True)
