"""Seeded workload generators, written as GraphTides streams (:mod:`chronoray.tides`).

Every workload is registered in :data:`WORKLOADS` with a default and a tiny size (in
stream events) and writes one file: its graph events in time order with a marker every
1 % of them (``MARKER,m<k>,{"events": n, "ts": t}``: ``n`` events and the time ``t`` of
the last one before it), and a last marker after the final event.

* ``ring``, ``uniform``, ``zipf`` -- the thesis's synthetic actor topologies (ch. 14.2):
  ``n`` actors, ``tokens`` tokens injected at each, each token forwarded ``hops`` times
  to the next id, a uniformly drawn actor or a Zipf-drawn one (exponent 1). The stream
  holds the bootstrap (the actors and the tokens); the size counts the behaviour
  executions the tokens cause (:class:`~bench.workloads.HopVertex`). chronoray only:
  the other systems have no actors.
* ``social`` -- shaped like LDBC SNB's social network: persons joining, friendships by
  preferential attachment (some ended again), posts (a vertex and its author's edge to
  it), likes of recent posts, profile updates (``UPDATE_VERTEX``), over time.
* ``college``, ``bitcoin`` -- the two SNAP files (the shipped CollegeMsg and Bitcoin OTC),
  their first ``size`` lines.
* ``college-copies`` -- CollegeMsg repeated, each copy shifted after the previous one in
  time, up to ``size`` events (>= 10 M for the long curves): a stream that grows while the
  graph stays 1,899 vertices and 20,296 edges.
* ``skewed`` -- :func:`bench.workloads.skewed_stream`: Zipf endpoints, a hub with >= 10 k
  out-edges from 435 k events on.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.tides import Entry, Marker, write_tides
from vertex.records import Update

__all__ = ["WORKLOADS", "Stream", "Workload", "workload"]

MARKERS = 100  # markers per stream (one every 1 % of its events)


@dataclass
class Stream:
    """A written workload: its file, its events, its markers ``(id, events, time)``."""

    workload: str
    path: Path
    size: int
    events: int = 0
    markers: list[tuple[str, int, float]] = field(default_factory=list)

    @property
    def t_last(self) -> float:
        return self.markers[-1][2]

    def time_at(self, fraction: float) -> float:
        """The time of the last event before the marker nearest ``fraction`` of the events."""
        wanted = fraction * self.events
        return min(self.markers, key=lambda m: abs(m[1] - wanted))[2]


@dataclass(frozen=True)
class Workload:
    """A registered generator. ``kind="graph"``: an update stream every system can load;
    ``"actors"``: internal messages between actors (chronoray only)."""

    name: str
    summary: str
    kind: Literal["graph", "actors"]
    default_size: int
    tiny_size: int
    updates: Callable[[int, int], Iterator[Update]]

    def write(self, path: Path, size: int | None = None, seed: int = 7) -> Stream:
        """Write the stream of ``size`` events (default: :attr:`default_size`) to ``path``."""
        size = self.default_size if size is None else size
        stream = Stream(self.name, Path(path), size)
        write_tides(path, _marked(self.updates(size, seed), stream, max(size // MARKERS, 1)))
        return stream


def _marked(updates: Iterator[Update], stream: Stream, every: int) -> Iterator[Entry]:
    count, last = 0, 0.0
    for update in updates:
        yield update
        count, last = count + 1, update.ts
        if count % every == 0:
            yield _marker(stream, count, last)
    if count % every:
        yield _marker(stream, count, last)
    stream.events = count


def _marker(stream: Stream, count: int, ts: float) -> Marker:
    stream.markers.append((f"m{len(stream.markers) + 1}", count, ts))
    return Marker(stream.markers[-1][0], {"events": count, "ts": ts})


# -- actor topologies ------------------------------------------------------------------------


def actor_shape(size: int) -> tuple[int, int, int]:
    """``(actors, tokens per actor, hops per token)`` for about ``size`` executions, the
    thesis's proportions (100 k actors, 10 tokens, 100 hops) scaled down.

    >>> actor_shape(100_000_000), actor_shape(1_000)
    ((100000, 10, 100), (10, 10, 10))
    """
    actors = max(10, min(100_000, size // 1000))
    tokens = 10
    return actors, tokens, max(1, size // (actors * tokens))


def _actors(topology: str) -> Callable[[int, int], Iterator[Update]]:
    def updates(size: int, seed: int) -> Iterator[Update]:
        n, tokens, hops = actor_shape(size)
        for v in range(n):
            yield Update.add_vertex(v, 0)
        for token in range(tokens):
            for v in range(n):
                yield Update.message(
                    v, 1, hops=hops, n=n, topology=topology, token=token, seed=seed
                )

    return updates


# -- social network, LDBC SNB shaped ---------------------------------------------------------

POST_IDS = 1_000_000_000  # posts are vertices too, numbered from here


def social(size: int, seed: int) -> Iterator[Update]:
    """``size`` events of a growing social network (see the module docstring); ids:
    persons from 1, posts from :data:`POST_IDS`. Every removal ends a friendship that
    exists; no self-loop, no repeated friendship."""
    rng = random.Random(seed)
    t = 1_262_304_000.0  # 2010-01-01, SNB's start
    persons: list[int] = []
    friendships: list[tuple[int, int]] = []
    where: dict[tuple[int, int], int] = {}  # friendship -> index in friendships
    ends: list[int] = []  # endpoints of every friendship made: preferential attachment
    posts: list[int] = []
    liked: set[tuple[int, int]] = set()
    emitted = 0
    while emitted < size:
        t += rng.randint(0, 3)
        roll = rng.random()
        if len(persons) < 20 or roll < 0.05:
            persons.append(len(persons) + 1)
            batch = [Update.add_vertex(persons[-1], t, age=rng.randint(18, 80))]
        elif roll < 0.45:
            a = rng.choice(persons)
            b = rng.choice(ends) if ends and rng.random() < 0.7 else rng.choice(persons)
            if a == b or (a, b) in where:
                continue
            where[(a, b)] = len(friendships)
            friendships.append((a, b))
            ends += (a, b)
            batch = [Update.add_edge(a, b, t)]
        elif roll < 0.65:
            posts.append(POST_IDS + len(posts))
            author = rng.choice(ends) if ends else rng.choice(persons)
            batch = [Update.add_vertex(posts[-1], t), Update.add_edge(author, posts[-1], t)]
        elif roll < 0.94:
            if not posts:
                continue
            person, post = (
                rng.choice(persons),
                posts[-1 - int(rng.expovariate(1 / 50)) % len(posts)],
            )
            if (person, post) in liked:
                continue
            liked.add((person, post))
            batch = [Update.add_edge(person, post, t, like=1)]
        elif roll < 0.99:
            batch = [Update.message(rng.choice(persons), t, status=rng.randint(0, 9))]
        else:
            if not friendships:
                continue
            gone = friendships[rng.randrange(len(friendships))]
            last = friendships.pop()
            if last != gone:
                friendships[where[gone]] = last
                where[last] = where[gone]
            del where[gone]
            batch = [Update.remove_edge(*gone, t)]
        yield from batch[: size - emitted]
        emitted += len(batch)


# -- the real data ------------------------------------------------------------------------------


def _college_rows() -> list[tuple[int, int, int]]:
    return [
        (int(s), int(d), int(t))
        for s, d, t in (line.split() for line in collegemsg_path().read_text().splitlines())
    ]


def college(size: int, seed: int) -> Iterator[Update]:
    """The first ``size`` lines of CollegeMsg (at most its 59,835)."""
    for s, d, t in _college_rows()[:size]:
        yield Update.add_edge(s, d, t)


def college_copies(size: int, seed: int) -> Iterator[Update]:
    """CollegeMsg copied back to back in time until ``size`` events."""
    rows = _college_rows()
    span = rows[-1][2] - rows[0][2] + 1
    for k in range(-(-size // len(rows))):
        for s, d, t in rows[: size - k * len(rows)]:
            yield Update.add_edge(s, d, t + k * span)


def bitcoin(size: int, seed: int) -> Iterator[Update]:
    """The first ``size`` lines of Bitcoin OTC (at most its 35,592; its times are in
    order), the rating as the edge's ``weight``."""
    with open(bitcoinotc_path()) as f:
        for _, line in zip(range(size), f, strict=False):
            s, d, r, t = line.rstrip("\n").split(",")
            yield Update.add_edge(int(s), int(d), float(t), weight=int(r))


def skewed(size: int, seed: int) -> Iterator[Update]:
    """:func:`bench.workloads.skewed_stream` of ``size`` events (distinct edges scaled
    as 58 k per 600 k events)."""
    from bench.workloads import skewed_stream

    edges = max(size * 58 // 600, 100)
    for s, d, t in skewed_stream(size, max(edges * 21 // 58, 50), edges, seed=seed):
        yield Update.add_edge(int(s), int(d), t)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "ring",
            "ring of actors, tokens to the next id",
            "actors",
            1_000_000,
            2_000,
            _actors("ring"),
        ),
        Workload(
            "uniform",
            "actors, tokens to uniform targets",
            "actors",
            1_000_000,
            2_000,
            _actors("uniform"),
        ),
        Workload(
            "zipf",
            "actors, tokens to Zipf targets (s=1)",
            "actors",
            1_000_000,
            2_000,
            _actors("zipf"),
        ),
        Workload("social", "LDBC-SNB-shaped social network", "graph", 300_000, 3_000, social),
        Workload("college", "CollegeMsg (SNAP), first lines", "graph", 59_835, 2_000, college),
        Workload("bitcoin", "Bitcoin OTC (SNAP), first lines", "graph", 35_592, 2_000, bitcoin),
        Workload(
            "college-copies", "CollegeMsg shifted copies", "graph", 1_000_000, 3_000, college_copies
        ),
        Workload("skewed", "Zipf endpoints, a >= 10 k-edge hub", "graph", 600_000, 3_000, skewed),
    )
}


def workload(name: str) -> Workload:
    """The registered workload ``name``; ``KeyError`` naming the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None


def describe(stream: Stream) -> dict[str, Any]:
    """What the results say about a written stream."""
    return {
        "workload": stream.workload,
        "size": stream.size,
        "events": stream.events,
        "markers": len(stream.markers),
        "t_last": stream.t_last,
    }
