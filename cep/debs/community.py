"""Query 2's graph: persons, liked comments and a live computation of each comment's range.

The graph of one instance (vertex classes :class:`Person` and :class:`LikedComment`):

* a friendship ``{u, v}`` is two edges ``u -> v`` and ``v -> u`` (``kind="friend"``);
* a like of comment ``c`` by ``u`` is an edge ``u -> c`` (``kind="like"``), owned by ``u``,
  so the comment's incoming edges are its likers;
* a comment leaving the window is deleted; its likers' edges to it are dropped with it.

Edges carry the sequence number (``seq``) of the input event that made them.

:class:`LikerCommunity` is a live computation on that graph. A person keeps the set of
comments it likes. When a person gains a like edge it sends the comment its friends; when
it gains a friend edge it tells every comment it likes. A comment keeps its likers'
community -- a union-find of the likers (``"component"``: the largest connected component,
the official definition) or the friendships among them (``"clique"``: the maximum clique,
GraphCEP's) -- and records ``(seq, comment, range)`` whenever its range grows. Ranges only
grow while a comment lives (likes and friendships are only added), so a new maximum clique
contains the new liker (or both new friends): the search starts there and only looks for
a clique one larger than the current best (GraphCEP's Algorithm 1, pruned by size).

Exactness: the operator applies each update only once the graph is idle after the previous
one (:class:`cep.operator.EmbeddedGraph`), so every message an event caused is handled
before the next event's, and the recorded ranges are those after each event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import chronoray as cr

__all__ = ["LikedComment", "LikerCommunity", "Person", "comment_vertex", "grow_clique"]


class Person(cr.Vertex):
    """A user: friend and like edges (the default class for vertices made by an edge)."""

    type_name: ClassVar[str] = "Person"


class LikedComment(cr.Vertex):
    """A comment in the window (state: ``created``, its time); its likers point to it."""

    type_name: ClassVar[str] = "LikedComment"


def comment_vertex(comment_id: int) -> str:
    """The vertex id of comment ``comment_id`` (persons use their integer user ids)."""
    return f"c{comment_id}"


class _Components:
    """Union-find over a comment's likers; ``best`` is the largest component's size."""

    __slots__ = ("parent", "size", "best")

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.size: dict[int, int] = {}
        self.best = 0

    def __contains__(self, person: int) -> bool:
        return person in self.parent

    def add(self, person: int, friends: list[int]) -> None:
        self.parent[person] = person
        self.size[person] = 1
        self.best = max(self.best, 1)
        for friend in friends:
            if friend in self.parent:
                self.join(person, friend)

    def _root(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(self, a: int, b: int) -> None:
        ra, rb = self._root(a), self._root(b)
        if ra == rb:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size.pop(rb)
        self.best = max(self.best, self.size[ra])


def grow_clique(adj: Mapping[int, set[int]], size: int, candidates: set[int], best: int) -> int:
    """``max(best, the largest clique made of the current clique -- ``size`` members -- and
    some of ``candidates``)``, where every candidate is adjacent to the whole current clique.

    >>> adj = {1: {2, 3}, 2: {1, 3}, 3: {1, 2, 4}, 4: {3}}
    >>> grow_clique(adj, 1, adj[1], 0), grow_clique(adj, 1, adj[4], 2)
    (3, 2)
    """
    best = max(best, size)
    # a member of a clique larger than ``best`` has at least ``best`` neighbours
    candidates = {c for c in candidates if len(adj[c]) >= best}
    for v in sorted(candidates, key=lambda c: (-len(adj[c]), c)):
        if size + len(candidates) <= best:
            break
        best = grow_clique(adj, size + 1, candidates & adj[v], best)
        candidates.discard(v)
    return best


class _Cliques:
    """The friendships among a comment's likers; ``best`` is the maximum clique's size."""

    __slots__ = ("adj", "best")

    def __init__(self) -> None:
        self.adj: dict[int, set[int]] = {}
        self.best = 0

    def __contains__(self, person: int) -> bool:
        return person in self.adj

    def add(self, person: int, friends: list[int]) -> None:
        adj = self.adj
        mine = adj[person] = {f for f in friends if f in adj}
        for f in mine:
            adj[f].add(person)
        self.best = grow_clique(adj, 1, mine, max(self.best, 1))

    def join(self, a: int, b: int) -> None:
        adj = self.adj
        if b in adj[a]:
            return
        adj[a].add(b)
        adj[b].add(a)
        self.best = grow_clique(adj, 2, adj[a] & adj[b], max(self.best, 2))


class LikerCommunity(cr.Computation):
    """Each live comment's range, recorded as it grows (see the module doc).

    ``result()`` hands over the ``(seq, comment vertex, range)`` records made since the
    previous call, in ``seq`` order (each shard's record list is drained): an operator
    reads them once per batch. Start it before the first like reaches the graph.
    """

    def __init__(self, community: Literal["component", "clique"] = "component") -> None:
        if community not in ("component", "clique"):
            raise ValueError(f"community must be 'component' or 'clique', got {community!r}")
        super().__init__(vertex_types=[Person.type_name, LikedComment.type_name])
        self.community = community

    def new_aggregate(self) -> list[tuple[int, str, int]]:
        return []

    def on_activate(self, ctx: Any) -> None:
        if ctx.vertex.type_name == Person.type_name:
            # activation comes with the execution that created the person: its edges so
            # far are new ones
            ctx.state = set()
            edges = ctx.vertex.out_edges
            self._person_gained(ctx, edges, list(edges))
        else:
            ctx.state = _Components() if self.community == "component" else _Cliques()

    def on_change(self, ctx: Any, change: Any) -> None:
        if ctx.vertex.type_name == Person.type_name:
            ctx.state.difference_update(change.removed_out)
            self._person_gained(ctx, change.out_edges, change.added_out)

    def _person_gained(self, ctx: Any, edges: Mapping[Any, Any], added: Any) -> None:
        liked: set[str] = ctx.state
        for dst in added:
            props = edges[dst]
            if props["kind"] == "like":
                liked.add(dst)
                friends = [f for f, p in edges.items() if p["kind"] == "friend"]
                ctx.send(dst, ("like", ctx.vertex_id, props["seq"], friends))
            else:
                for comment in liked:
                    ctx.send(comment, ("friend", ctx.vertex_id, dst, props["seq"]))

    def on_message(self, ctx: Any, msg: Any) -> None:
        community = ctx.state
        before = community.best
        if msg[0] == "like":
            _, person, seq, friends = msg
            community.add(person, friends)
        else:
            _, person, friend, seq = msg
            if friend not in community:
                return
            community.join(person, friend)
        if community.best != before:
            ctx.aggregate.append((seq, ctx.vertex_id, community.best))

    def summarize(self, aggregate: Any, values: Mapping[Any, Any]) -> list[tuple[int, str, int]]:
        drained = list(aggregate)
        aggregate.clear()
        return drained

    def combine(self, parts: list[Any]) -> list[tuple[int, str, int]]:
        return sorted((r for part in parts for r in part), key=lambda r: (r[0], r[1]))

    def value(self, state: Any) -> Any:
        return None if isinstance(state, set) else state.best
