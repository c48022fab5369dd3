"""The CEP layer's parts: the two-tier ranking against a plain sort, splitters, step order,
the column tables of the kernels."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from cep import Broadcast, ByKind, KeySplitter, PredicateSplitter, Ranking
from cep.merger import Report, TopKMerger
from cep.tables import IntMap, StringPool, map_delete, map_get, map_put


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


def test_row_splitters_split_batches_by_rows():
    split = KeySplitter(lambda row: row["a"] if row["a"] >= 0 else None)
    split.bind(3)
    batch = pa.RecordBatch.from_pydict({"a": [4, -1, 5, 7], "b": [0, 1, 2, 3]})
    parts = split.split(batch)
    assert [p.column("b").to_pylist() for p in parts] == [[], [0, 3], [2]]


def test_steps_come_in_time_then_phase_then_sequence_order():
    def entry(item, score):
        return ((-score, item), item, str(item))

    merger = TopKMerger(2, lambda item, _: item, lambda t, best: f"{t}:{[e[1] for e in best]}",
                        time_steps=False)  # fmt: skip
    ts, seq = np.array([5, 5, 7, 9]), np.array([1, 2, 3, 4])
    reports = [
        [Report((5, 1, 1), (entry("a", 3),)), Report((7, 0, 0), (entry("a", 1),))],
        [Report((5, 1, 2), (entry("b", 2),)), Report((7, 0, 0), (entry("b", 2),))],
    ]
    # the decay at 7 reorders a and b: shown at the next event (seq 3, time 7), caused by it
    assert merger.merge(reports, ts, seq) == [(1, "5:['a']"), (2, "5:['a', 'b']"),
                                              (3, "7:['b', 'a']")]  # fmt: skip


def test_int_map_and_string_pool():
    m, truth = IntMap(4), {}
    rng = random.Random(1)
    for _ in range(20):
        m.reserve(100)
        for _ in range(100):
            key = rng.randrange(300)
            if rng.random() < 0.3:
                map_delete(m.keys, m.vals, m.meta, key)
                truth.pop(key, None)
            else:
                map_put(m.keys, m.vals, m.meta, key, key * 7)
                truth[key] = key * 7
        assert len(m) == len(truth)
        assert all(map_get(m.keys, m.vals, k) == truth.get(k, -1) for k in range(300))
    pool = StringPool()
    pool.extend(pa.array(["x", "héllo", "", "z" * 3000]).slice(1))
    pool.extend(pa.array(["", ""]))
    assert [pool.get(i) for i in range(pool.count)] == ["héllo", "", "z" * 3000, "", ""]


def test_cep_imports_nothing_of_shards():
    """cep sits on chronoray's public API: no import of the shard layer (``shards.*``)."""
    import ast
    from pathlib import Path

    import cep

    found = []
    for path in Path(cep.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "shards"]
    assert found == []
