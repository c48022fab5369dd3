"""The distributed queries equal the oracle line for line on generated streams.

Streams of several seeds and sizes over 16 days: ties in times, scores and texts, reply
chains, posts dying, comments expiring, likes after expiry. In process (fast) and on Ray
with 1 and 4 instances, each Query 2 instance's graph on 1 or 4 shards.
"""

from __future__ import annotations

import pytest
from cep_helpers import events_of, run
from reference import reference_q1, reference_q2

from cep import DebsFiles, generate


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    made = {}
    for seed, size in [(1, 3000), (2, 6000), (3, 1500)]:
        d = tmp_path_factory.mktemp(f"stream-{seed}")
        generate(d, events=size, seed=seed, days=16)
        made[seed] = DebsFiles.in_dir(d)
    return made


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("instances", [1, 4])
def test_q1_equals_the_oracle(streams, seed, instances):
    files = streams[seed]
    expected = list(reference_q1(events_of("q1", files)))
    assert len(expected) > 20
    assert run("q1", files, instances=instances, batch_size=97) == expected


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("community", ["component", "clique"])
@pytest.mark.parametrize("instances,shards", [(1, 1), (4, 4), (4, 1)])
def test_q2_equals_the_oracle(streams, seed, community, instances, shards):
    files = streams[seed]
    expected = list(reference_q2(events_of("q2", files), 3, 7200, community))
    got = run("q2", files, k=3, d=7200, community=community, instances=instances, shards=shards)
    assert len(expected) > 100 and got == expected


@pytest.mark.ray
@pytest.mark.parametrize("instances,shards", [(1, 1), (4, 4)])
def test_on_ray_both_queries_equal_the_oracle(ray_session, streams, instances, shards):
    files = streams[3]
    q1 = run("q1", files, runtime="ray", instances=instances, batch_size=200)
    assert q1 == list(reference_q1(events_of("q1", files)))
    q2 = run("q2", files, runtime="ray", k=2, d=3 * 3600, instances=instances, shards=shards,
             community="clique", batch_size=200)  # fmt: skip
    assert q2 == list(reference_q2(events_of("q2", files), 2, 3 * 3600, "clique"))
