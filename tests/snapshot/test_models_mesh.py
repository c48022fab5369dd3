"""The partition actors' direct exchange (``runtime._Mesh``) on its own, in one process
(two meshes, each exchanging in its own thread as two actors would): large messages
both ways at once, a caller without the key turned away, an aborted job's leftovers
skipped."""

from __future__ import annotations

import pickle
import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client

import numpy as np
import pytest

from snapshot.models.runtime import _FRAME, _Mesh

KEY = b"k" * 16


def _both(a: _Mesh, b: _Mesh, to_b, to_a, token: str, step: int):
    """``(what a got, what b got)`` when both exchange at once."""
    got: dict[str, object] = {}
    thread = threading.Thread(
        target=lambda: got.update(b=b.exchange({a.address: to_a}, token, step))
    )
    thread.start()
    got["a"] = a.exchange({b.address: to_b}, token, step)
    thread.join(timeout=60)
    assert not thread.is_alive()
    return got["a"][b.address], got["b"][a.address]


def test_large_messages_both_ways_and_the_connection_kept():
    a, b = _Mesh("127.0.0.1", KEY), _Mesh("127.0.0.1", KEY)
    big = np.arange(3_000_000, dtype=np.int64)  # 24 MB each way: more than a socket buffer
    from_b, from_a = _both(a, b, ("to b", big), ("to a", big + 1), "job", 0)
    assert from_a[0] == "to b" and np.array_equal(from_a[1], big)
    assert from_b[0] == "to a" and np.array_equal(from_b[1], big + 1)
    for step in (1, 2):  # the same connection, later steps
        assert _both(a, b, step, -step, "job", step) == (-step, step)


def test_a_caller_without_the_key_is_turned_away():
    a, b = _Mesh("127.0.0.1", KEY), _Mesh("127.0.0.1", KEY)
    with pytest.raises(AuthenticationError):
        Client(b.address[:2], authkey=b"x" * 16)
    assert _both(a, b, "hello b", "hello a", "job", 0) == ("hello a", "hello b")


def test_an_aborted_jobs_leftovers_are_skipped():
    a, b = _Mesh("127.0.0.1", KEY), _Mesh("127.0.0.1", KEY)
    assert _both(a, b, 1, 2, "old", 0) == (2, 1)
    # job "old" was aborted after b had sent its step 1 (a never took it)
    stale = pickle.dumps(("old", 1, "stale"))
    b._sock(a.address).sendall(_FRAME.pack(len(stale)) + stale)
    assert _both(a, b, "new a", "new b", "new", 0) == ("new b", "new a")
    assert _both(a, b, "again a", "again b", "new", 1) == ("again b", "again a")
