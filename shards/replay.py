"""Reading a shard's log back: the one replay loop every reader goes through.

Recovery, snapshots (time cuts, clock cuts, windows), retrospective queries, the log
replay model, notification replay and ``chronoray inspect-log`` all read a shard's log
with :class:`LogReplay` (and the header helpers below); no other module decodes a log
value or scans a log (``tests/shards/test_replay.py`` checks it).

A replay starts from the newest shard checkpoint that lies wholly inside what is asked
(its worker clock within the bound, all of its entries older than the time asked about),
then applies the entries after it, block by block. A time cut ``at=T`` first reads the
blocks' headers (a few numbers per block) and decodes only the blocks holding an entry
with time ``<= T``: it stops after the last of them, so a cut at an early ``T`` decodes a
prefix of the log, never more than a cut at the end.

Entries the built-in temporal class logged as columns (format 5) are not rebuilt one by
one: a run of them is applied at once from its columns (:meth:`LogReplay._apply_logged`),
leaving exactly what applying them entry by entry would; a reader that needs each entry
(:meth:`LogReplay.entries`, ``only``, ``keep_states``, :func:`log_rows`) gets them made.

Guarantees: entries are applied in worker-clock order, each at most once; a replay never
writes to the store; the format version is checked before anything is decoded; a value
that fails its checksum or does not decode raises :class:`~shards.logstore.LogCorrupted`
naming the log's path, the column family and the key (and the shard, where the reader
knows it) -- never a bare decoding error, never a value used.
"""

from __future__ import annotations

import gc
import math
from collections import deque
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from itertools import repeat
from operator import setitem
from typing import Any

import numpy as np

from shards.codec import (
    CHECKPOINTS_KEY,
    CURSOR_KEY,
    KIND_NAMES,
    MANIFEST_KEY,
    SCHEMA_KEY,
    BlockHeader,
    ColumnsBlock,
    CommandEntry,
    Cursor,
    EventBlock,
    Manifest,
    Message,
    Schema,
    TemporalEntries,
    decode_checkpoint,
    decode_checkpoint_list,
    decode_commands,
    decode_cursor,
    decode_events,
    decode_header,
    decode_manifest,
    decode_schema,
)
from shards.logstore import LogCorrupted, LogName, LogStore
from shards.records import VertexRecord, set_edge
from vertex.annotations import mark_module_api
from vertex.records import VertexId

__all__ = [
    "LogReplay",
    "Step",
    "ShardCheckpoint",
    "checkpoint_list",
    "consistent_bound",
    "headers",
    "last_worker_clock",
    "load_shard_checkpoint",
    "log_location",
    "log_rows",
    "paused_gc",
    "read_commands",
    "read_cursor",
    "undelivered",
    "read_manifest",
    "read_schema",
    "start_checkpoint",
]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a replay builds many long-lived
    objects. A replay makes no reference cycles (reference counting frees what it drops),
    and collections triggered by its allocations would walk everything it built again and
    again -- about 40 % of the replay's time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_manifest(store: LogStore) -> Manifest | None:
    """The log's manifest (``None`` for a store nothing was written to);
    :class:`~shards.codec.LogFormatError` if it has another format version."""
    raw = store.get_meta(MANIFEST_KEY)
    return None if raw is None else decode_manifest(raw, log_location(store))


def read_schema(store: LogStore) -> Schema:
    """The columns and kinds the log's states and edges ever had."""
    read_manifest(store)
    try:
        return decode_schema(store.get_meta(SCHEMA_KEY))
    except LogCorrupted as exc:
        raise exc.at(log_location(store)) from exc


def log_location(store: LogStore) -> str:
    """Where a store's log is, for messages: its path (a memory store: its name)."""
    return str(getattr(store, "path", None) or getattr(store, "name", None) or store)


def last_worker_clock(store: LogStore) -> int:
    """The worker clock of the last logged entry (0: none)."""
    return store.last_seq(LogName.EVENTS)


def headers(
    store: LogStore, first_wc: int = 1, last_wc: int | None = None
) -> Iterator[BlockHeader]:
    """Headers of the blocks holding worker clocks ``first_wc .. last_wc``, in order."""
    for key, data in store.scan(LogName.CLOCKS, first_wc):
        try:
            header = decode_header(key, data)
        except LogCorrupted as exc:
            raise exc.at(log_location(store), key) from exc
        if last_wc is not None and header.first > last_wc:
            return
        yield header


def read_cursor(store: LogStore) -> Cursor | None:
    """The cursor logged with the last block (``None``: nothing logged yet)."""
    raw = store.get_meta(CURSOR_KEY)
    if raw is None:
        return None
    try:
        return decode_cursor(raw)
    except LogCorrupted as exc:
        raise exc.at(log_location(store)) from exc


def undelivered(
    store: LogStore, channel: str, applied: list[dict[str, int]]
) -> Iterator[tuple[int, int, Message]]:
    """The messages this shard (whose messages travel on ``channel``) logged as sent that
    their receiver has not applied, as ``(dest shard, seq, message)``: ``applied[k]`` are
    shard ``k``'s applied positions per channel (its cursor's), and a message numbered
    ``seq`` to ``k`` is applied once ``k`` applied ``channel`` through ``seq``. Reads only
    the blocks from the first entry whose messages the cursor does not know acknowledged.
    For a graph that is not running, a time cut at ``T`` holds every effect of the
    updates ``<= T`` only if none of these messages has a time ``<= T``."""
    cursor = read_cursor(store)
    if cursor is None:
        return
    delivered = [positions.get(channel, 0) for positions in applied]
    if all(d >= n - 1 for d, n in zip(delivered, cursor.next_seq, strict=True)):
        return  # every message this shard numbered was applied
    for block in LogReplay(store, checkpoint=False).blocks(cursor.floor):
        for _, dest, seq, msg in block.messages():
            if seq > delivered[dest]:
                yield dest, seq, msg


def consistent_bound(store: LogStore, shard: int, clock: tuple[int, ...]) -> int:
    """The largest worker clock ``b <= clock[shard]`` such that every entry of this shard
    up to ``b`` has a vector clock within ``clock`` (so including them keeps the cut
    consistent)."""
    bound = min(clock[shard], last_worker_clock(store))
    for header in headers(store, 1, bound):
        for wc, vector in header.vectors:
            if wc > bound:
                return bound
            if any(v > c for j, (v, c) in enumerate(zip(vector, clock, strict=True)) if j != shard):
                return wc - 1
    return bound


class ShardCheckpoint:
    """A shard's full state after worker clock ``wc``; ``max_time`` is the latest event time
    of any entry up to ``wc`` (so the checkpoint serves time cuts ``T >= max_time``)."""

    __slots__ = ("wc", "max_time", "vector", "errors", "vertices")

    def __init__(
        self,
        wc: int,
        max_time: float,
        vector: tuple[int, ...],
        errors: int,
        vertices: dict[VertexId, VertexRecord],
    ) -> None:
        self.wc = wc
        self.max_time = max_time
        self.vector = vector
        self.errors = errors
        self.vertices = vertices


def checkpoint_list(store: LogStore) -> list[tuple[int, float]]:
    """``(worker clock, max event time)`` of every shard checkpoint, oldest first."""
    try:
        return decode_checkpoint_list(store.get_meta(CHECKPOINTS_KEY))
    except LogCorrupted as exc:
        raise exc.at(log_location(store)) from exc


def load_shard_checkpoint(
    store: LogStore, upto_wc: int, in_edges: bool = True
) -> ShardCheckpoint | None:
    """The latest shard checkpoint at or before worker clock ``upto_wc``, if any (its
    vertices without incoming edges unless ``in_edges``)."""
    found = store.floor(LogName.CHECKPOINTS, upto_wc) if upto_wc > 0 else None
    if found is None:
        return None
    try:
        c = decode_checkpoint(found[1], in_edges)
    except LogCorrupted as exc:
        raise exc.at(log_location(store), found[0]) from exc
    if c.wc != found[0]:
        raise LogCorrupted(
            f"holds the checkpoint of worker clock {c.wc}",
            "checkpoints",
            found[0],
            log_location(store),
        )
    vertices = {
        vid: VertexRecord(t, s, o, i, k, tm)
        for vid, t, s, o, i, k, tm in zip(
            c.vertex, c.type, c.state, c.out, c.ins, c.clock, c.time, strict=True
        )
    }
    return ShardCheckpoint(c.wc, c.max_time, c.vector, c.errors, vertices)


def start_checkpoint(
    store: LogStore, bound: int, before: float, in_edges: bool = True
) -> tuple[int, dict[VertexId, VertexRecord]]:
    """The newest shard checkpoint at worker clock ``<= bound`` all of whose entries have
    event times ``< before``, as ``(worker clock, vertices)``; ``(0, {})`` if none."""
    start = 0
    for wc, max_time in checkpoint_list(store):
        if wc <= bound and max_time < before:
            start = wc
    if not start:
        return 0, {}
    checkpoint = load_shard_checkpoint(store, start, in_edges)
    assert checkpoint is not None and checkpoint.wc == start
    return start, checkpoint.vertices


def read_commands(store: LogStore, first_wc: int = 1) -> Iterator[CommandEntry]:
    """Every command-log entry from worker clock ``first_wc`` on, in order."""
    for key, data in store.scan(LogName.COMMANDS, first_wc):
        try:
            entries = decode_commands(data)
        except LogCorrupted as exc:
            raise exc.at(log_location(store), key) from exc
        for entry in entries:
            if entry.wc >= first_wc:
                yield entry


def log_rows(store: LogStore, log: str, first_wc: int | None = None) -> Iterator[dict[str, Any]]:
    """Decoded entries of one log -- ``"events"``, ``"commands"`` or ``"clocks"`` (block
    headers) -- from worker clock ``first_wc`` on, as plain rows (``chronoray
    inspect-log``)."""
    read_manifest(store)
    first = first_wc or 1
    if log == "commands":
        for c in read_commands(store, first):
            yield {**c._asdict(), "kind": KIND_NAMES.get(c.kind, c.kind)}
    elif log == "clocks":
        for h in headers(store, first):
            yield h._asdict()
    elif log == "events":
        replay = LogReplay(store, checkpoint=False)
        for block in replay.blocks(first):
            sends: dict[int, list[Message]] = {}
            try:
                for i, _, _, msg in block.messages():
                    sends.setdefault(i, []).append(msg)
            except LogCorrupted as exc:
                raise exc.at(log_location(store)) from exc
            for i in range(max(first - block.first, 0), len(block.vertex)):
                yield {
                    "wc": block.first + i,
                    "vertex": block.vertex[i],
                    "clock": block.clock[i],
                    "time": block.time[i],
                    "created": block.created.get(i),
                    "state": block.state[i],
                    "dropped": block.dropped.get(i, ()),
                    "edges": block.edge_ops(i),
                    "in": None if block.ins is None else block.ins[i],
                    "sends": sends.get(i, []),
                    "error": block.failed.get(i),
                    "deleted": i in block.deleted,
                }
    else:
        raise ValueError(f"no log {log!r} (events, commands or clocks)")


class Step:
    """One replayed entry, yielded by :meth:`LogReplay.entries` after it was applied.

    ``record`` is the vertex after it (``None`` if it does not exist then); with
    ``keep_states`` the replay never mutates a state dict, and ``old_state``/``old_type``
    are the vertex's state and class before the entry (``None``: it did not exist)."""

    __slots__ = (
        "wc",
        "vertex",
        "clock",
        "time",
        "edges",
        "error",
        "deleted",
        "created",
        "record",
        "old_state",
        "old_type",
    )

    def __init__(self, wc: int, vertex: VertexId, clock: int, time: float) -> None:
        self.wc = wc
        self.vertex = vertex
        self.clock = clock
        self.time = time
        self.edges: tuple[tuple[VertexId, dict[str, Any] | None], ...] = ()
        self.error: str | None = None
        self.deleted = False
        self.created = False
        self.record: VertexRecord | None = None
        self.old_state: dict[str, Any] | None = None
        self.old_type: str | None = None

    @property
    def acted(self) -> bool:
        """A successful execution of an existing (or created) vertex: not failed, not a
        message that found nothing to act on."""
        return self.clock > 0 and self.error is None


class LogReplay:
    """Replays one shard's log onto vertex records (see the module doc).

    ``bound``: apply entries up to this worker clock (default: all); ``at``: only entries
    with time ``<= at``; ``start_before``: start from a checkpoint whose entries all have
    times ``< start_before`` (default: just above ``at``); ``only``: apply only these
    vertices' entries; ``keep_states``: give each change a new state dict (see
    :class:`Step`); ``in_edges=False``: leave incoming edges out (not even decoded: a
    snapshot's tables do not hold them). ``checkpoint=False`` starts from the beginning.

    After :meth:`run` (or a full pass over :meth:`entries`), :attr:`vertices` holds the
    vertices at the cut, :attr:`applied` the entries in the cut, :attr:`last_applied` the
    worker clock of the last of them and :attr:`decoded` the entries decoded to get there.
    """

    def __init__(
        self,
        store: LogStore,
        *,
        bound: int | None = None,
        at: float | None = None,
        start_before: float | None = None,
        only: Collection[VertexId] | None = None,
        keep_states: bool = False,
        in_edges: bool = True,
        checkpoint: bool = True,
    ) -> None:
        manifest = read_manifest(store)
        self.shard = None if manifest is None else manifest.shard
        self.store = store
        last = last_worker_clock(store)
        self.bound = last if bound is None else min(bound, last)
        self.at = math.inf if at is None else at
        if start_before is None:
            start_before = math.nextafter(self.at, math.inf)
        self.only = None if only is None else frozenset(only)
        self.keep_states = keep_states
        self.in_edges = in_edges
        self.start, vertices = (
            start_checkpoint(store, self.bound, start_before, in_edges) if checkpoint else (0, {})
        )
        if self.only is not None:
            vertices = {v: r for v, r in vertices.items() if v in self.only}
        self.vertices: dict[VertexId, VertexRecord] = vertices
        self.applied = 0
        self.decoded = 0
        self.headers_read = 0
        self.last_applied = self.start
        self._pending: list[tuple[ColumnsBlock, int, int, int, TemporalEntries]] = []
        self._pending_rows = 0
        self._pending_type: str | None = None

    # -- reading ----------------------------------------------------------------------

    def blocks(self, first_wc: int | None = None) -> Iterator[EventBlock]:
        """Decoded event blocks holding entries ``first_wc`` (default: after the start
        checkpoint) .. :attr:`bound`; for a time cut, only blocks with an entry in it."""
        first = self.start + 1 if first_wc is None else first_wc
        if first > self.bound:
            return
        wanted = self._wanted(first) if self.at < math.inf else None
        if wanted is not None and not wanted:
            return
        last_key = math.inf if wanted is None else max(wanted)
        for key, data in self.store.scan(LogName.EVENTS, first):
            if key > last_key:
                return
            if wanted is not None and key not in wanted:
                continue  # no entry of this block is in the cut: not even decoded
            try:
                block = decode_events(data, self.in_edges)
            except LogCorrupted as exc:
                raise exc.at(log_location(self.store), key, shard=self.shard) from exc
            if block.key != key:
                raise LogCorrupted(
                    f"holds the block of worker clocks {block.first}..{block.key}",
                    "events",
                    key,
                    log_location(self.store),
                    self.shard,
                )
            self.decoded += len(block.vertex)
            yield block
            if key >= self.bound:
                return

    def _wanted(self, first: int) -> set[int]:
        """Keys of the blocks from ``first`` to the bound with an entry at time ``<= at``."""
        wanted = set()
        for header in headers(self.store, first, self.bound):
            self.headers_read += 1
            if header.min_time <= self.at:
                wanted.add(header.last)
        return wanted

    def _positions(self, block: EventBlock, lo: int, hi: int) -> Iterator[int]:
        """Indices ``lo <= i < hi`` of the entries of the vertices in :attr:`only`."""
        only = self.only
        assert only is not None
        if len(only) == 1:
            return _positions_of(block.vertex, next(iter(only)), lo, hi)
        column = block.vertex
        return (i for i in range(lo, hi) if column[i] in only)

    def _range(self, block: EventBlock, first_wc: int) -> tuple[int, int]:
        lo = max(first_wc - block.first, 0)
        hi = min(self.bound - block.first + 1, len(block.vertex))
        return lo, hi

    # -- replaying --------------------------------------------------------------------

    def run(self) -> dict[VertexId, VertexRecord]:
        """Apply every entry of the cut; returns :attr:`vertices`. Spans logged as columns
        of consecutive blocks, with no row between them, are applied together (up to
        :data:`SPAN_ROWS` entries at a time): the more entries at once, the fewer
        distinct vertices and edges per entry to write."""
        with paused_gc():
            for block in self.blocks():
                self.apply(block, pending=True)
            self.finish()
        return self.vertices

    def apply(
        self, block: EventBlock, first_wc: int | None = None, *, pending: bool = False
    ) -> None:
        """Apply the block's entries that are in the cut (from ``first_wc``, default:
        after the start checkpoint). Entries logged as columns are applied a span at a
        time from the columns (:meth:`_apply_logged`), unless the replay needs them one by
        one (``only``, ``keep_states``); the rows between them as below. With
        ``pending``, the block's last spans may wait to be applied together with the next
        blocks' (as :meth:`run` does): :attr:`vertices` is then current only after
        :meth:`finish`."""
        self._apply_block(block, self.start + 1 if first_wc is None else first_wc)
        if not pending:
            self._apply_logged()

    def finish(self) -> None:
        """Apply what :meth:`apply` left pending: :attr:`vertices` is current after it."""
        self._apply_logged()

    def _apply_block(self, block: EventBlock, first_wc: int) -> None:
        """Apply the block's entries in the cut from ``first_wc``, but leave its last
        spans logged as columns pending (:meth:`_pend`) until :meth:`_apply_logged`."""
        lo, hi = self._range(block, first_wc)
        if not isinstance(block, ColumnsBlock) or self.only is not None or self.keep_states:
            self._apply_logged()
            self._apply_entries(block, lo, hi)
            return
        at = lo
        for start, count, row in block.logged_spans():
            a, b = max(start, lo), min(start + count, hi)
            if a >= b:
                continue
            if at < a:
                self._apply_logged()
                self._apply_entries(block.segment(at, a), 0, a - at)
            self._pend(block, a, b, row + a - start)
            at = b
        if at < hi:
            self._apply_logged()
            self._apply_entries(block.segment(at, hi), 0, hi - at)

    def _apply_entries(self, block: EventBlock, lo: int, hi: int) -> None:
        """Apply entries ``lo .. hi-1`` of ``block`` as rows."""
        if self.only is not None:
            for i in self._positions(block, lo, hi):
                self._apply_one(block, i)
            return
        rare = block.special()
        for i in rare:
            if i >= hi:
                break
            if i >= lo:
                self._apply_run(block, lo, i)
                self._apply_one(block, i)
                lo = i + 1
        self._apply_run(block, lo, hi)

    def entries(self) -> Iterator[Step]:
        """Every entry of the cut as a :class:`Step`, in order, each after it was applied."""
        for block in self.blocks():
            lo, hi = self._range(block, self.start + 1)
            indices = range(lo, hi) if self.only is None else self._positions(block, lo, hi)
            for i in indices:
                step = self._apply_one(block, i, Step)
                if step is not None:
                    yield step

    def _apply_run(self, block: EventBlock, lo: int, hi: int) -> None:
        """Apply entries ``lo .. hi-1`` of ``block``, none of them rare: the hot loop, for
        runs wholly inside the cut (others go entry by entry)."""
        if lo >= hi:
            return
        whole = lo == 0 and hi == len(block.vertex)
        times = block.time if whole else block.time[lo:hi]
        if self.keep_states or max(times) > self.at:
            for i in range(lo, hi):
                self._apply_one(block, i)
            return
        vertices = self.vertices
        ins = block.ins if block.ins is not None else [None] * len(block.vertex)
        columns = (block.vertex, block.clock, block.state, block.edge, ins)
        if not whole:
            columns = tuple(c[lo:hi] for c in columns)  # type: ignore[assignment]
        # set_edge inlined: this loop is every replay's, and a call per edge costs ~10 %
        for vid, clock, state, edge, in_op, time in zip(*columns, times, strict=True):
            if not clock:
                continue
            record = vertices[vid]
            if state is not None:
                record.state.update(state)
            if edge is not None:
                dst, props = edge
                if props is None:
                    record.out_edges.pop(dst, None)
                else:
                    record.out_edges[dst] = props
            if in_op is not None:
                src, props = in_op
                if props is None:
                    record.in_edges.pop(src, None)
                else:
                    record.in_edges[src] = props
            record.clock = clock
            record.time = time
        self.applied += hi - lo
        self.last_applied = block.first + hi - 1

    def _pend(self, block: ColumnsBlock, lo: int, hi: int, row: int) -> None:
        """Entries ``lo .. hi-1`` of ``block``, logged as columns from row ``row`` of
        :attr:`~shards.codec.ColumnsBlock.logged_entries`, are next: those in the cut
        wait for :meth:`_apply_logged` (which runs now if they make :data:`SPAN_ROWS`)."""
        entries = block.logged_entries.slice(row, row + hi - lo)
        last = hi - 1
        if self.at < math.inf:
            kept = entries.time <= self.at
            count = int(np.count_nonzero(kept))
            if not count:
                return
            if count < hi - lo:
                last = lo + int(np.flatnonzero(kept)[-1])
                entries = entries.take(kept)
        made = block.created_type
        if (made is not None and self._pending_type not in (None, made)) or (
            self._pending and self._pending[0][-1].time.dtype != entries.time.dtype
        ):
            self._apply_logged()  # one class at a time, times of one type (int or float)
        if made is not None:
            self._pending_type = made
        self._pending.append((block, lo, hi, last, entries))
        self._pending_rows += len(entries)
        if self._pending_rows >= SPAN_ROWS:
            self._apply_logged()

    def _apply_logged(self) -> None:
        """Apply the pending entries logged as columns (:meth:`_pend`) at once: their
        effects (:meth:`~shards.codec.TemporalEntries.effects`) are what applying them one
        by one leaves. Python runs once per vertex and per edge they leave, to write the
        last values into the records (the records are made of them), never per entry."""
        pending, type_name = self._pending, self._pending_type
        if not pending:
            return
        self._pending, self._pending_rows, self._pending_type = [], 0, None
        entries = TemporalEntries.concat([p[-1] for p in pending])
        acted = entries.clock != 0  # (the rule's entries always act)
        effects = (entries if acted.all() else entries.take(acted)).effects(self.in_edges)
        if effects is None:  # not what the rule logs: entry by entry
            for block, lo, hi, _, _ in pending:
                for i in range(lo, hi):
                    self._apply_one(block, i)
            return
        self.applied += len(entries)
        block, _, _, last, _ = pending[-1]
        self.last_applied = block.first + last
        vertices = self.vertices
        ids = effects.vertex
        if effects.created:
            assert type_name is not None, f"entries up to {self.last_applied} create no type"
            vertices.update((ids[j], VertexRecord(type_name, {}, {}, {})) for j in effects.created)
        records = list(map(vertices.__getitem__, ids))  # KeyError, as a row of no vertex
        # the writes below run in C (map), one per key set, edge or record
        states = [record.state for record in records]
        for key, at, values in effects.keys:
            _set_items(states, at, repeat(key), values)
        for j, changes in effects.disordered:
            states[j].update(changes)
        _set_items([record.out_edges for record in records], *effects.out)
        if self.in_edges:
            _set_items([record.in_edges for record in records], *effects.ins)
        _drain(map(setattr, records, repeat("clock"), effects.clock))
        _drain(map(setattr, records, repeat("time"), effects.time))

    def _apply_one(
        self, block: EventBlock, i: int, step_class: type[Step] | None = None
    ) -> Step | None:
        """Apply entry ``i`` whatever it is; with ``step_class``, return its :class:`Step`."""
        time = block.time[i]
        if time > self.at:
            return None
        self.applied += 1
        wc = block.first + i
        self.last_applied = wc
        vid, clock = block.vertex[i], block.clock[i]
        step = None if step_class is None else step_class(wc, vid, clock, time)
        if not clock:
            return step
        vertices = self.vertices
        record = vertices.get(vid)
        if step is not None and record is not None:
            step.old_state, step.old_type = record.state, record.type_name
        error = block.failed.get(i)
        if error is not None:
            if record is not None:
                record.clock, record.time = clock, time
            if step is not None:
                step.error, step.record = error, record
            return step
        if i in block.deleted:
            vertices.pop(vid, None)
            if step is not None:
                step.deleted = True
                step.edges = block.edge_ops(i)
            return step
        state = block.state[i]
        type_name = block.created.get(i)
        if type_name is not None:
            record = vertices[vid] = VertexRecord(type_name, dict(state or {}), {}, {})
        else:
            assert record is not None, f"entry {wc} changes vertex {vid!r}, which does not exist"
            if state is not None:
                if self.keep_states:
                    record.state = {**record.state, **state}
                else:
                    record.state.update(state)
        dropped = block.dropped.get(i)
        if dropped:
            if self.keep_states and type_name is None and state is None:
                record.state = dict(record.state)
            for key in dropped:
                record.state.pop(key, None)
        edges = block.edge_ops(i)
        for dst, props in edges:
            set_edge(record.out_edges, dst, props)
        in_op = None if block.ins is None else block.ins[i]
        if in_op is not None:
            set_edge(record.in_edges, *in_op)
        record.clock, record.time = clock, time
        if step is not None:
            step.record = record
            step.created = type_name is not None
            step.edges = edges
        return step


SPAN_ROWS = 1 << 16
"""Entries logged as columns a replay's :meth:`LogReplay.run` applies at once, at most:
more at once is faster (fewer distinct vertices and edges per entry to write) but holds
more memory while their effects are found (about 0.6 KB per entry). In one measurement
on a loaded machine, replaying the skewed 600 k-event stream's 1.2 M entries
(``bench/results/bulk_replay.md``) with 2^16 took about 2.8 s of CPU and 175 MB peak, a
span at a time 5.3 s and 133 MB, 2^18 at once 2.0 s and 265 MB."""


def _drain(calls: Iterator[Any]) -> None:
    """Run the lazy calls of a ``map`` (in C, keeping nothing)."""
    deque(calls, maxlen=0)


def _set_items(
    targets: list[dict[Any, Any]], at: list[int], keys: Iterable[Any], values: Iterable[Any]
) -> None:
    """``targets[at[i]][keys[i]] = values[i]`` for each ``i`` in order."""
    _drain(map(setitem, map(targets.__getitem__, at), keys, values))


def _positions_of(column: list[Any], value: Any, lo: int, hi: int) -> Iterator[int]:
    """Indices ``lo <= i < hi`` with ``column[i] == value`` (searched in C)."""
    i = lo
    while True:
        try:
            i = column.index(value, i, hi)
        except ValueError:
            return
        yield i
        i += 1


mark_module_api(globals())
