"""The CEP layer's parts: the two-tier ranking against a plain sort, splitters, step order."""

from __future__ import annotations

import random

import pytest

from cep import Broadcast, ByKind, KeySplitter, PredicateSplitter, Ranking
from cep.merger import Report, merge_steps


@pytest.mark.parametrize("seed", range(5))
def test_ranking_top_k_equals_a_full_sort(seed):
    rng = random.Random(seed)
    ranking, truth = Ranking(low=3, high=6), {}
    for _ in range(3000):
        item = rng.randrange(60)
        if rng.random() < 0.2:
            ranking.remove(item)
            truth.pop(item, None)
        else:
            key = (-rng.randrange(0, 40), rng.randrange(3), item)
            ranking.set(item, key, str(item))
            truth[item] = key
        k = rng.randrange(1, 6)
        expected = sorted((key, item) for item, key in truth.items())[:k]
        assert [(key, item) for key, item, _ in ranking.top(k)] == expected


def test_splitters_route_consistently():
    key = KeySplitter(lambda e: e[1], ranges=[10, 20])
    windows = PredicateSplitter(
        opens=lambda e: e[1] if e[0] == "open" else None,
        closes=lambda p, e: e[2] >= p.opened_by[2] + 5,
    )  # no member: an event belongs to every open partition
    split = ByKind({tuple: windows}, default=None)
    split.bind(2)
    key.bind(3)
    assert [key.route(("x", v))[0][0] for v in (3, 10, 19, 25)] == [0, 1, 1, 2]
    assert split.route(("open", 1, 0)) == [(1, (1,))]
    assert split.route(("open", 2, 3)) == [(0, (2,)), (1, (1,))]
    assert split.route(("data", 0, 6)) == [(0, (2,))]  # partition 1 closed at time 5
    assert split.route(["not a tuple"]) == []
    broadcast = Broadcast()
    broadcast.bind(2)
    assert broadcast.route(None) == [(0, ()), (1, ())]


def test_steps_come_in_time_then_phase_then_sequence_order():
    events = [(5, 1, 1), (7, 1, 2)]
    reports = [[Report((5, 0, 0), ()), Report((7, 1, 2), ())], [Report((5, 0, 0), ())]]
    steps = [(key, [i for i, _ in group]) for key, group in merge_steps(events, reports)]
    assert steps == [((5, 0, 0), [0, 1]), ((5, 1, 1), []), ((7, 1, 2), [0])]
