"""The partition actors' direct exchange (``runtime._Mesh``) on its own, in one process
(two meshes, each exchanging in its own thread as two actors would): large messages
both ways at once, a caller without the key turned away, an aborted job's leftovers
skipped."""

from __future__ import annotations

import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client

import numpy as np
import pytest

from snapshot.models.runtime import _frame, _Mesh

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
    stale = b"".join(_frame(b"old", 1, ("stale", np.arange(5))))
    b._sock(a.address).sendall(stale)
    assert _both(a, b, "new a", "new b", "new", 0) == ("new b", "new a")
    assert _both(a, b, "again a", "again b", "new", 1) == ("again b", "again a")


def test_arrays_travel_as_raw_bytes_and_stay_the_receivers():
    """Arrays of several dtypes (contiguous ones out of band, a strided one and an
    object one inside the pickle) arrive equal; received arrays are writable and are
    not overwritten by later steps (the receive buffer is reused)."""
    a, b = _Mesh("127.0.0.1", KEY), _Mesh("127.0.0.1", KEY)
    grid = np.arange(24, dtype=np.float32).reshape(4, 6)
    payload = (
        {"sent": 3},
        (np.arange(5, dtype=np.int64), np.linspace(0, 1, 5), grid[:, ::2]),
        np.array([b"x", b"yz"]),
        np.array(["a", None], dtype=object),
        np.zeros(0),
    )
    kept = []
    for step in range(3):
        got, _ = _both(a, b, "ack", payload, "job", step)
        assert got[0] == {"sent": 3} and got[1][2].dtype == np.float32
        for mine, theirs in zip(got[1] + got[2:], payload[1] + payload[2:], strict=True):
            assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
        got[1][0][:] = -1  # writable
        kept.append(got[1][0])
    assert all((k == -1).all() for k in kept)
    # two frames in one write: the second stays in the buffer for the next step
    b._sock(a.address).sendall(b"".join(b"".join(_frame(b"job", s, -s)) for s in (3, 4)))
    assert a.exchange({b.address: "to b"}, "job", 3) == {b.address: -3}
    assert a.exchange({b.address: "to b"}, "job", 4) == {b.address: -4}
    assert b.exchange({a.address: "x"}, "job", 3) == {a.address: "to b"}
