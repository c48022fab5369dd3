"""Conformance suite of :class:`shards.logstore.LogStore` (in the style of Akka's JournalSpec).

Subclass :class:`LogStoreSpec`, set ``__test__ = True`` and implement :meth:`open_store`
and :meth:`fresh_location` (and :meth:`destroy_location` if a location needs cleaning up).
Every test runs against a fresh location; stores opened through :meth:`LogStoreSpec.open`
are closed after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shards.logstore import (
    MAX_SEQ,
    LogBatch,
    LogError,
    LogLockedError,
    LogName,
    LogStore,
    SequenceError,
)

E, C, K = LogName.EVENTS, LogName.COMMANDS, LogName.CLOCKS


def val(log: LogName, seq: int) -> bytes:
    """A distinct value per (log, seq), of varying length."""
    return f"{log.value}:{seq}:".encode() + bytes(seq % 7)


def batch_of(entries: dict[LogName, list[int]], **meta: bytes) -> LogBatch:
    batch = LogBatch()
    for log, seqs in entries.items():
        for seq in seqs:
            batch.add(log, seq, val(log, seq))
    for key, value in meta.items():
        batch.put_meta(key, value)
    return batch


def dump(store: LogStore) -> dict[str, Any]:
    """Everything observable of a store through the protocol (for small stores)."""
    out: dict[str, Any] = {}
    for log in LogName:
        out[log.value] = list(store.scan(log))
        out[f"{log.value}-rev"] = list(store.scan(log, reverse=True))
        out[f"{log.value}-last"] = store.last_seq(log)
        last = store.last_seq(log)
        out[f"{log.value}-floor"] = [store.floor(log, s) for s in range(0, last + 2)]
    return out


class LogStoreSpec:
    """Shared tests of every :class:`LogStore` implementation."""

    __test__ = False

    # -- hooks -------------------------------------------------------------------------------

    def open_store(self, where: Any) -> LogStore:
        """Open (as the writer) the store at ``where``."""
        raise NotImplementedError

    def fresh_location(self, tmp_path: Path) -> Any:
        """A location no store has used yet."""
        raise NotImplementedError

    def destroy_location(self, where: Any) -> None:
        """Drop what a test left at ``where`` (all its stores are closed by then)."""

    # -- fixtures ----------------------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def _location(self, tmp_path: Path) -> Iterator[None]:
        self._opened: list[LogStore] = []
        self.where = self.fresh_location(tmp_path)
        yield
        for store in self._opened:
            store.close()
        self.destroy_location(self.where)

    def open(self, where: Any = None) -> LogStore:
        store = self.open_store(self.where if where is None else where)
        self._opened.append(store)
        return store

    def reopen(self, store: LogStore) -> LogStore:
        store.close()
        return self.open()

    # -- tests -------------------------------------------------------------------------------

    def test_empty_store(self) -> None:
        store = self.open()
        assert isinstance(store, LogStore)
        assert not store.closed
        for log in LogName:
            assert store.last_seq(log) == 0
            assert list(store.scan(log)) == []
            assert list(store.scan(log, reverse=True)) == []
            assert list(store.scan(log, 1, 100)) == []
            assert store.floor(log, 0) is None
            assert store.floor(log, 1) is None
            assert store.floor(log, MAX_SEQ) is None
        assert store.get_meta("anything") is None

    def test_append_then_scan_in_order(self) -> None:
        store = self.open()
        store.append(batch_of({E: [1, 2, 3]}))
        store.append(batch_of({E: [5, 9]}))  # gaps are allowed
        store.append(batch_of({E: [10]}))
        expected = [(s, val(E, s)) for s in (1, 2, 3, 5, 9, 10)]
        assert list(store.scan(E)) == expected
        assert list(store.scan(E, reverse=True)) == expected[::-1]
        assert store.last_seq(E) == 10
        assert all(type(s) is int and type(v) is bytes for s, v in store.scan(E))

    def test_empty_value_and_bytes_like_values(self) -> None:
        store = self.open()
        batch = LogBatch()
        batch.add(E, 1, b"")
        batch.add(E, 2, bytearray(b"ba"))
        batch.add(E, 3, memoryview(b"mv"))
        store.append(batch)
        assert list(store.scan(E)) == [(1, b""), (2, b"ba"), (3, b"mv")]
        assert store.floor(E, 1) == (1, b"")

    def test_scan_bounds(self) -> None:
        store = self.open()
        seqs = list(range(2, 41, 2))
        store.append(batch_of({E: seqs}))
        points: list[int | None] = [None, -5, 0, 1, 2, 3, 20, 21, 39, 40, 41, 100, MAX_SEQ + 9]
        for start in points:
            for end in points:
                for reverse in (False, True):
                    want = [
                        (s, val(E, s))
                        for s in seqs
                        if (start is None or s >= start) and (end is None or s < end)
                    ]
                    if reverse:
                        want.reverse()
                    got = list(store.scan(E, start, end, reverse=reverse))
                    assert got == want, (start, end, reverse)
        assert list(store.scan(E, 10, 10)) == []
        assert list(store.scan(E, 30, 10)) == []
        assert list(store.scan(E, 30, 10, reverse=True)) == []
        assert list(store.scan(E, start=41)) == []
        assert list(store.scan(E, end=2)) == []
        assert list(store.scan(E, end=3)) == [(2, val(E, 2))]

    def test_scan_keywords_and_partial_consumption(self) -> None:
        store = self.open()
        store.append(batch_of({E: list(range(1, 2001))}))
        it = store.scan(E, start=500, end=1500)
        assert [next(it)[0] for _ in range(3)] == [500, 501, 502]
        rev = store.scan(E, end=1500, reverse=True)
        assert next(rev)[0] == 1499
        assert [s for s, _ in store.scan(E, 1, 2001)] == list(range(1, 2001))
        assert [s for s, _ in store.scan(E, reverse=True)] == list(range(2000, 0, -1))

    def test_scan_upper_bound_is_fixed_when_called(self) -> None:
        store = self.open()
        store.append(batch_of({E: [1, 2, 3]}))
        forward = store.scan(E)
        backward = store.scan(E, reverse=True)
        assert next(forward)[0] == 1
        store.append(batch_of({E: [4, 5]}))
        assert [s for s, _ in forward] == [2, 3]
        assert [s for s, _ in backward] == [3, 2, 1]
        assert [s for s, _ in store.scan(E)] == [1, 2, 3, 4, 5]

    def test_floor(self) -> None:
        store = self.open()
        seqs = [3, 4, 10, 11, 30]
        store.append(batch_of({K: seqs}))
        for probe in range(-2, 40):
            below = [s for s in seqs if s <= probe]
            want = (below[-1], val(K, below[-1])) if below else None
            assert store.floor(K, probe) == want, probe
        assert store.floor(K, MAX_SEQ) == (30, val(K, 30))
        assert store.floor(K, MAX_SEQ + 10) == (30, val(K, 30))
        assert store.floor(E, 100) is None

    def test_logs_are_independent(self) -> None:
        store = self.open()
        store.append(batch_of({E: [1, 2, 3], C: [10, 11]}))
        assert (store.last_seq(E), store.last_seq(C), store.last_seq(K)) == (3, 11, 0)
        store.append(batch_of({E: [4], K: [1]}))  # 4 < 11 is fine: seqs are per log
        assert list(store.scan(E)) == [(s, val(E, s)) for s in (1, 2, 3, 4)]
        assert list(store.scan(C)) == [(s, val(C, s)) for s in (10, 11)]
        assert list(store.scan(K)) == [(1, val(K, 1))]
        assert store.floor(C, 9) is None and store.floor(E, 9) == (4, val(E, 4))
        with pytest.raises(SequenceError):
            store.append(batch_of({C: [11]}))
        store.append(batch_of({C: [12]}))

    def test_batch_len_counts_entries_only(self) -> None:
        batch = batch_of({E: [1, 2], C: [1]}, a=b"1", b=b"2")
        assert len(batch) == 3
        assert len(LogBatch()) == 0
        batch.add(LogName("clocks"), 1, b"x")
        assert batch.entries[K] == [(1, b"x")] and len(batch) == 4

    @pytest.mark.parametrize(
        "bad",
        [
            pytest.param([4, 5, 5], id="duplicate"),
            pytest.param([4, 6, 5], id="decreasing"),
            pytest.param([0], id="zero"),
            pytest.param([-1], id="negative"),
            pytest.param([3], id="equal-to-last"),
            pytest.param([2, 4], id="below-last"),
            pytest.param([4, MAX_SEQ + 1], id="too-large"),
        ],
    )
    def test_batch_with_a_bad_seq_writes_nothing(self, bad: list[int]) -> None:
        store = self.open()
        store.append(batch_of({E: [1, 2, 3], C: [1]}, kept=b"old"))
        before = dump(store)
        batch = batch_of({C: [2, 3], K: [1, 2]}, kept=b"new", fresh=b"x")
        for seq in bad:
            batch.add(E, seq, b"bad")
        batch.add(C, 4, b"after")  # entries after the bad one in other logs too
        with pytest.raises(SequenceError):
            store.append(batch)
        assert dump(store) == before
        assert store.get_meta("kept") == b"old"
        assert store.get_meta("fresh") is None
        store.append(batch_of({E: [4], C: [2], K: [1]}))  # the store still works
        assert store.last_seq(E) == 4 and store.last_seq(C) == 2 and store.last_seq(K) == 1
        store = self.reopen(store)
        assert store.get_meta("fresh") is None and store.last_seq(E) == 4

    def test_non_int_seq_is_refused(self) -> None:
        store = self.open()
        batch = LogBatch()
        batch.add(E, 1.0, b"x")  # type: ignore[arg-type]
        with pytest.raises(SequenceError):
            store.append(batch)
        assert store.last_seq(E) == 0

    def test_max_seq_is_accepted(self) -> None:
        store = self.open()
        store.append(batch_of({E: [1, MAX_SEQ]}))
        assert store.last_seq(E) == MAX_SEQ
        assert list(store.scan(E, reverse=True))[0][0] == MAX_SEQ
        assert store.floor(E, MAX_SEQ - 1) == (1, val(E, 1))
        with pytest.raises(SequenceError):
            store.append(batch_of({E: [MAX_SEQ]}))

    def test_sequence_is_never_reset(self) -> None:
        store = self.open()
        store.append(batch_of({E: [1, 2, 3], K: [7]}))
        store = self.reopen(store)
        assert store.last_seq(E) == 3 and store.last_seq(K) == 7 and store.last_seq(C) == 0
        for old in (1, 3):
            with pytest.raises(SequenceError):
                store.append(batch_of({E: [old]}))
        with pytest.raises(SequenceError):
            store.append(batch_of({K: [7]}))
        store.append(batch_of({E: [4]}))
        store = self.reopen(store)
        assert store.last_seq(E) == 4
        assert [s for s, _ in store.scan(E)] == [1, 2, 3, 4]

    def test_reopen_gives_identical_view(self) -> None:
        store = self.open()
        store.append(batch_of({E: [1, 2], C: [1, 2, 3], K: [2]}, manifest=b"m", cursor=b"c1"))
        store.append(batch_of({E: [3, 8], K: [5]}, cursor=b"c2"))
        store.append(batch_of({C: [9]}))
        before = dump(store)
        meta = (store.get_meta("manifest"), store.get_meta("cursor"))
        store = self.reopen(store)
        assert dump(store) == before
        assert (store.get_meta("manifest"), store.get_meta("cursor")) == meta == (b"m", b"c2")

    def test_one_owner_at_a_time(self) -> None:
        first = self.open()
        first.append(batch_of({E: [1]}))
        with pytest.raises(LogLockedError):
            self.open()
        assert isinstance(LogLockedError("x"), LogError)
        first.append(batch_of({E: [2]}))  # the holder is unaffected
        first.close()
        second = self.open()
        assert [s for s, _ in second.scan(E)] == [1, 2]
        with pytest.raises(LogLockedError):
            self.open()

    def test_abandoned_scan_does_not_keep_the_store_open(self) -> None:
        store = self.open()
        store.append(batch_of({E: list(range(1, 5001))}))
        forward = store.scan(E)
        backward = store.scan(E, reverse=True)
        assert next(forward)[0] == 1 and next(backward)[0] == 5000
        store.close()
        again = self.open()
        assert again.last_seq(E) == 5000
        del forward, backward

    def test_close_is_idempotent_and_final(self) -> None:
        store = self.open()
        store.append(batch_of({E: [1]}, k=b"v"))
        store.close()
        assert store.closed
        store.close()
        assert store.closed
        with pytest.raises(LogError):
            store.append(batch_of({E: [2]}))
        with pytest.raises(LogError):
            store.last_seq(E)
        with pytest.raises(LogError):
            list(store.scan(E))
        with pytest.raises(LogError):
            store.floor(E, 1)
        with pytest.raises(LogError):
            store.get_meta("k")
        again = self.open()
        assert again.last_seq(E) == 1 and again.get_meta("k") == b"v"

    def test_large_batch_roundtrip(self) -> None:
        store = self.open()
        n = 50_000
        batch = LogBatch()
        for seq in range(1, n + 1):
            batch.add(E, seq, seq.to_bytes(4, "big") * (1 + seq % 5))
        batch.add(K, n, b"clock")
        batch.put_meta("cursor", b"n")
        assert len(batch) == n + 1
        store.append(batch)
        assert store.last_seq(E) == n
        entries = list(store.scan(E))
        assert len(entries) == n
        assert [s for s, _ in entries] == list(range(1, n + 1))
        assert all(v == s.to_bytes(4, "big") * (1 + s % 5) for s, v in entries)
        assert [s for s, _ in store.scan(E, reverse=True)] == list(range(n, 0, -1))
        assert [s for s, _ in store.scan(E, 25_000, 25_010)] == list(range(25_000, 25_010))
        assert store.floor(K, n - 1) is None and store.floor(K, n) == (n, b"clock")
        store = self.reopen(store)
        assert store.last_seq(E) == n
        assert sum(1 for _ in store.scan(E)) == n

    def test_meta(self) -> None:
        store = self.open()
        store.append(batch_of({}, cursor=b"1", manifest=b"m"))
        assert store.get_meta("cursor") == b"1" and store.get_meta("manifest") == b"m"
        assert all(store.last_seq(log) == 0 for log in LogName)  # meta-only batch
        store.append(batch_of({E: [1]}, cursor=b"2"))
        assert store.get_meta("cursor") == b"2" and store.get_meta("manifest") == b"m"
        batch = batch_of({})
        batch.put_meta("cursor", b"3")
        batch.put_meta("cursor", b"4")  # the last value in a batch wins
        batch.put_meta("ünïcode key", b"")
        store.append(batch)
        store.append(LogBatch())  # an empty batch is a no-op
        assert store.get_meta("cursor") == b"4"
        assert store.get_meta("ünïcode key") == b""
        assert store.get_meta("Cursor") is None
        store = self.reopen(store)
        assert store.get_meta("cursor") == b"4" and store.get_meta("manifest") == b"m"
        assert store.get_meta("ünïcode key") == b""
