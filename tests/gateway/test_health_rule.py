"""The gateway's health rule: a shard busy for a look or two is still serving; a shard
silent for the patience, or on a node that is gone, is not."""

from __future__ import annotations

from chronoray.gateway.server import _PATIENCE, _serving


def _silent(shard: int, node_alive: bool = True) -> dict[str, object]:
    return {"shard": shard, "node": "n", "node_alive": node_alive, "answering": False}


def test_a_busy_shard_is_serving_until_the_patience_runs_out():
    since: dict[int, float] = {}
    assert _serving([_silent(1)], since, 100.0)
    assert _serving([_silent(1)], since, 100.0 + _PATIENCE - 0.1)
    assert not _serving([_silent(1)], since, 100.0 + _PATIENCE)
    assert _serving([], since, 200.0) and since == {}  # it answered: forgiven
    assert _serving([_silent(1)], since, 201.0)  # a new silence starts a new count


def test_a_shard_on_a_lost_node_is_not_serving_at_once():
    since: dict[int, float] = {}
    assert not _serving([_silent(0, node_alive=False), _silent(1)], since, 0.0)
    assert since == {0: 0.0, 1: 0.0}  # shard 1's silence is counted from this look too
