"""The oracle: DEBS 2016 Query 1 and Query 2 in one plain process (no Ray, no chronoray).

Written apart from ``cep`` on purpose -- its own event loop, decay heap, lazy top-k heap,
union-find and Bron-Kerbosch clique search -- so that the distributed implementation is
checked against independent code. It shares only the event records and the timestamp
format. Conventions: as stated in ``cep/debs/q1.py`` and ``cep/debs/q2.py``.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator

from cep.events import DAY_MS, Comment, Friendship, Like, Post, format_time


class LazyTop:
    """Top-k by key (smallest first) with a heap whose stale entries are dropped lazily."""

    def __init__(self) -> None:
        self.heap: list[tuple[tuple, Hashable]] = []
        self.key: dict[Hashable, tuple] = {}

    def set(self, item: Hashable, key: tuple) -> None:
        if self.key.get(item) != key:
            self.key[item] = key
            heapq.heappush(self.heap, (key, item))

    def remove(self, item: Hashable) -> None:
        self.key.pop(item, None)

    def top(self, k: int) -> list[Hashable]:
        found: list[tuple[tuple, Hashable]] = []
        while self.heap and len(found) < k:
            key, item = heapq.heappop(self.heap)
            if self.key.get(item) == key and all(i != item for _, i in found):
                found.append((key, item))
        for entry in found:
            heapq.heappush(self.heap, entry)
        if len(self.heap) > 4 * len(self.key) + 1000:
            self.heap = [(key, item) for item, key in self.key.items()]
            heapq.heapify(self.heap)
        return [item for _, item in found]


def reference_q1(events: Iterable[object]) -> Iterator[str]:
    """Query 1's output lines for ``events`` (posts and comments in stream order)."""
    posts: dict[int, dict] = {}
    root_of: dict[int, int] = {}  # comment -> post, for comments counted on a live post
    decays: list[tuple[int, int, int, int, int | None]] = []  # time, tiebreak, post, left, user
    order = itertools.count()
    top = LazyTop()
    last: list[int] = []

    def rank(pid: int) -> None:
        p = posts[pid]
        top.set(pid, (-p["score"], -p["ts"], -p["last"], pid))

    for event in events:
        t = event.ts
        while decays and decays[0][0] <= t:
            when, _, pid, left, user = heapq.heappop(decays)
            p = posts[pid]
            p["score"] -= 1
            if left > 1:
                heapq.heappush(decays, (when + DAY_MS, next(order), pid, left - 1, user))
            elif user is not None:
                p["alive"][user] -= 1
                if p["alive"][user] == 0:
                    del p["alive"][user]
            if p["score"] == 0:
                del posts[pid]
                top.remove(pid)
            else:
                rank(pid)
        if isinstance(event, Post):
            posts[event.post_id] = {
                "ts": t, "user_id": event.user_id, "user": event.user,
                "score": 10, "last": t, "alive": {},
            }  # fmt: skip
            heapq.heappush(decays, (t + DAY_MS, next(order), event.post_id, 10, None))
            rank(event.post_id)
        elif isinstance(event, Comment):
            pid = event.post_id if event.post_id is not None else root_of.get(event.replied)
            if pid is not None and pid in posts:
                root_of[event.comment_id] = pid
                p = posts[pid]
                p["score"] += 10
                p["last"] = t
                user = None if event.user_id == p["user_id"] else event.user_id
                if user is not None:
                    p["alive"][user] = p["alive"].get(user, 0) + 1
                heapq.heappush(decays, (t + DAY_MS, next(order), pid, 10, user))
                rank(pid)
        ids = top.top(3)
        if ids != last:
            last = ids
            slots = []
            for pid in ids:
                p = posts[pid]
                slots.append(f"{pid},{p['user']},{p['score']},{len(p['alive'])}")
            slots += ["-,-,-,-"] * (3 - len(ids))
            yield ",".join([format_time(t), *slots])


class _Dsu:
    def __init__(self) -> None:
        self.up: dict[int, int] = {}
        self.count: dict[int, int] = {}

    def find(self, x: int) -> int:
        while self.up[x] != x:
            x = self.up[x]
        return x

    def add(self, x: int) -> None:
        self.up[x] = x
        self.count[x] = 1

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if self.count[ra] < self.count[rb]:
                ra, rb = rb, ra
            self.up[rb] = ra
            self.count[ra] += self.count[rb]
        return self.count[ra]


def max_clique(vertices: set[int], friends: dict[int, set[int]]) -> int:
    """Bron-Kerbosch with pivoting: the size of a maximum clique among ``vertices``."""
    adj = {v: friends[v] & vertices for v in vertices}
    best = 0

    def expand(size: int, p: set[int], x: set[int]) -> None:
        nonlocal best
        if not p and not x:
            best = max(best, size)
            return
        if size + len(p) <= best:
            return
        pivot = max(p | x, key=lambda w: len(adj[w] & p))
        for v in list(p - adj[pivot]):
            expand(size + 1, p & adj[v], x & adj[v])
            p.discard(v)
            x.add(v)

    expand(0, set(vertices), set())
    return best


def reference_q2(
    events: Iterable[object], k: int, d_seconds: int, community: str = "component"
) -> Iterator[str]:
    """Query 2's output lines for ``events`` (comments, likes, friendships in stream order)."""
    window = d_seconds * 1000
    friends: dict[int, set[int]] = defaultdict(set)
    liked: dict[int, set[int]] = defaultdict(set)  # user -> live comments they like
    comments: dict[int, dict] = {}
    expiries: list[tuple[int, int]] = []
    top = LazyTop()
    last = ["-"] * k

    def texts() -> list[str]:
        found = [comments[c]["text"] for c in top.top(k)]
        return found + ["-"] * (k - len(found))

    def grew(cid: int, size: int) -> None:
        c = comments[cid]
        if size > c["range"]:
            c["range"] = size
            top.set(cid, (-size, c["text"], cid))

    for event in events:
        t = event.ts
        while expiries and expiries[0][0] <= t:
            when = expiries[0][0]
            while expiries and expiries[0][0] == when:
                _, cid = heapq.heappop(expiries)
                for user in comments.pop(cid)["likers"]:
                    liked[user].discard(cid)
                top.remove(cid)
            now = texts()
            if now != last:
                last = now
                yield ",".join([format_time(when), *now])
        if isinstance(event, Comment):
            comments[event.comment_id] = {
                "text": event.text, "likers": set(), "dsu": _Dsu(), "range": 0,
            }  # fmt: skip
            heapq.heappush(expiries, (t + window, event.comment_id))
        elif isinstance(event, Like):
            c = comments.get(event.comment_id)
            user = event.user_id
            if c is not None and user not in c["likers"]:
                likers = c["likers"]
                likers.add(user)
                liked[user].add(event.comment_id)
                if community == "component":
                    c["dsu"].add(user)
                    size = 1
                    for f in friends[user] & likers:
                        size = max(size, c["dsu"].union(user, f))
                    grew(event.comment_id, size)
                else:
                    grew(event.comment_id, 1 + max_clique(friends[user] & likers, friends))
        elif isinstance(event, Friendship):
            a, b = event.user1, event.user2
            if a != b and b not in friends[a]:
                friends[a].add(b)
                friends[b].add(a)
                for cid in liked[a] & liked[b]:
                    c = comments[cid]
                    if community == "component":
                        grew(cid, c["dsu"].union(a, b))
                    else:
                        common = friends[a] & friends[b] & c["likers"]
                        grew(cid, 2 + max_clique(common, friends))
        now = texts()
        if now != last:
            last = now
            yield ",".join([format_time(t), *now])
