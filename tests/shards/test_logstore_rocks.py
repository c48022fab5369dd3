"""The LogStore conformance suite against :class:`shards.logstore.RocksLogStore`, plus what
only a real RocksDB database has: a lock across processes, read-only and secondary readers,
a plain ``rocksdict`` reader, and fsync'ed writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from log_spec import LogStoreSpec, batch_of, val
from rocksdict import AccessType, Options, Rdict

from shards.logstore import (
    LogBatch,
    LogError,
    LogLockedError,
    LogName,
    RocksLogStore,
    decode_seq,
    encode_seq,
)

E, C, K = LogName.EVENTS, LogName.COMMANDS, LogName.CLOCKS
ROOT = Path(__file__).resolve().parents[2]

LOCK_PROBE = """
import sys
from shards.logstore import LogLockedError, RocksLogStore
try:
    store = RocksLogStore(sys.argv[1])
except LogLockedError as exc:
    print(exc)
    sys.exit(3)
except BaseException as exc:
    print(repr(exc))
    sys.exit(4)
store.close()
sys.exit(0)
"""


def probe_lock(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", LOCK_PROBE, str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


class TestRocksLogStore(LogStoreSpec):
    __test__ = True

    def open_store(self, where: Path) -> RocksLogStore:
        return RocksLogStore(where)

    def fresh_location(self, tmp_path: Path) -> Path:
        return tmp_path / "shard-0"

    def test_lock_error_names_the_path(self) -> None:
        self.open()
        with pytest.raises(LogLockedError, match=str(self.where)):
            self.open()

    def test_lock_is_held_against_another_process(self) -> None:
        store = self.open()
        locked = probe_lock(self.where)
        assert locked.returncode == 3, locked.stdout + locked.stderr
        assert str(self.where) in locked.stdout
        store.close()
        free = probe_lock(self.where)
        assert free.returncode == 0, free.stdout + free.stderr

    def test_read_only_handle_sees_the_writer_and_refuses_appends(self) -> None:
        writer = self.open()
        writer.append(batch_of({E: [1, 2, 3], K: [3]}, cursor=b"c"))
        reader = RocksLogStore(self.where, read_only=True)
        try:
            assert reader.read_only and not writer.read_only
            assert list(reader.scan(E)) == list(writer.scan(E))
            assert reader.last_seq(E) == 3 and reader.floor(K, 10) == (3, val(K, 3))
            assert reader.get_meta("cursor") == b"c"
            with pytest.raises(LogError) as refused:
                reader.append(batch_of({E: [4]}))
            assert not isinstance(refused.value, LogLockedError)
            with pytest.raises(LogError):
                reader.catch_up()
        finally:
            reader.close()
        writer.append(batch_of({E: [4]}))  # the writer is unaffected
        assert writer.last_seq(E) == 4

    def test_read_only_of_a_missing_store_fails(self, tmp_path: Path) -> None:
        with pytest.raises(LogError):
            RocksLogStore(tmp_path / "nothing", read_only=True)
        assert not (tmp_path / "nothing").exists()

    def test_secondary_follows_the_writer_after_catch_up(self, tmp_path: Path) -> None:
        writer = self.open()
        writer.append(batch_of({E: [1, 2, 3]}))
        secondary = RocksLogStore.open_secondary(self.where, tmp_path / "secondary")
        try:
            assert secondary.read_only
            assert secondary.last_seq(E) == 3
            writer.append(batch_of({E: [4, 5, 6], C: [1]}, cursor=b"after"))
            secondary.catch_up()
            assert secondary.last_seq(E) == 6 and secondary.last_seq(C) == 1
            assert list(secondary.scan(E)) == list(writer.scan(E))
            assert secondary.get_meta("cursor") == b"after"
            with pytest.raises(LogError):
                secondary.append(batch_of({E: [7]}))
        finally:
            secondary.close()
        writer.catch_up()  # a no-op on the writer

    def test_plain_rocksdict_reader(self) -> None:
        writer = self.open()
        seqs = [1, 2, 3, 255, 256, 257, 65_536, 10**12]  # byte order must equal seq order
        writer.append(batch_of({E: seqs, C: [1]}, manifest=b"m"))
        assert set(Rdict.list_cf(str(self.where))) >= {"commands", "events", "clocks", "meta"}
        families = {
            name: Options(raw_mode=True) for name in ("commands", "events", "clocks", "meta")
        }
        db = Rdict(
            str(self.where),
            Options(raw_mode=True),
            column_families=families,
            access_type=AccessType.read_only(),
        )
        try:
            events = db.get_column_family("events")
            items = list(events.items())
            assert [int.from_bytes(k, "big") for k, _ in items] == seqs
            assert [v for _, v in items] == [val(E, s) for s in seqs]
            assert db.get_column_family("meta")[b"manifest"] == b"m"
            events.close()
        finally:
            db.close()
        writer.append(batch_of({E: [10**12 + 1]}))  # the writer is unaffected

    def test_sync_writes(self) -> None:
        store = RocksLogStore(self.where, sync=True)
        try:
            store.append(batch_of({E: [1, 2]}, cursor=b"s"))
        finally:
            store.close()
        store = self.open()
        assert [s for s, _ in store.scan(E)] == [1, 2] and store.get_meta("cursor") == b"s"

    def test_scans_of_big_values_read_in_bounded_chunks(self) -> None:
        """Values are whole blocks: a scan reads them a few MB at a time, in order, both ways."""
        store = self.open()
        value = b"v" * (3 * 1024 * 1024)
        batch = LogBatch()
        for seq in range(1, 9):
            batch.add(E, seq, value + bytes([seq]))
        store.append(batch)
        assert [(s, v[-1]) for s, v in store.scan(E)] == [(s, s) for s in range(1, 9)]
        assert [s for s, _ in store.scan(E, 3, 8, reverse=True)] == [7, 6, 5, 4, 3]

    def test_seq_codec(self) -> None:
        assert encode_seq(1) == b"\x00" * 7 + b"\x01"
        assert decode_seq(encode_seq(2**64 - 1)) == 2**64 - 1
        assert sorted(encode_seq(s) for s in (300, 2, 70_000)) == [
            encode_seq(s) for s in (2, 300, 70_000)
        ]
        with pytest.raises(ValueError):
            encode_seq(-1)
        with pytest.raises(ValueError):
            decode_seq(b"\x00")
