"""The LogStore conformance suite against :class:`shards.logstore.MemoryLogStore`."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from log_spec import LogStoreSpec, batch_of

from shards.logstore import LogLockedError, LogName, MemoryLogStore


class TestMemoryLogStore(LogStoreSpec):
    __test__ = True

    def open_store(self, where: str) -> MemoryLogStore:
        return MemoryLogStore(where)

    def fresh_location(self, tmp_path: Path) -> str:
        return f"spec-{uuid.uuid4().hex}"

    def destroy_location(self, where: str) -> None:
        MemoryLogStore.destroy(where)

    def test_lock_error_names_the_store(self) -> None:
        self.open()
        with pytest.raises(LogLockedError, match=self.where):
            self.open()

    def test_destroy_drops_the_data_and_refuses_an_open_store(self) -> None:
        store = self.open()
        store.append(batch_of({LogName.EVENTS: [1, 2]}))
        with pytest.raises(LogLockedError):
            MemoryLogStore.destroy(self.where)
        store.close()
        MemoryLogStore.destroy(self.where)
        MemoryLogStore.destroy(self.where)  # dropping nothing is fine
        assert self.open().last_seq(LogName.EVENTS) == 0

    def test_names_are_separate_stores(self) -> None:
        store = self.open()
        other_name = f"{self.where}-other"
        other = MemoryLogStore(other_name)
        try:
            store.append(batch_of({LogName.EVENTS: [1]}))
            assert other.last_seq(LogName.EVENTS) == 0
        finally:
            other.close()
            MemoryLogStore.destroy(other_name)
