"""Log format 3: every stored value checksummed, a corrupted one refused as
:class:`LogCorrupted` naming the shard, the log's path, the column family and the key; logs
of format 2 refused with how to convert them, and converted by ``chronoray upgrade-log``."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from rocksdict import AccessType, Options, Rdict

import chronoray as cr
from chronoray.cli import main
from chronoray.testing import LocalRuntime, edge_oracle, pair_counts_between
from shards.codec import (
    FORMAT_VERSION,
    BlockHeader,
    CheckpointColumns,
    Cursor,
    EventBlock,
    LogFormatError,
    Manifest,
    Schema,
    decode_checkpoint,
    decode_checkpoint_list,
    decode_commands,
    decode_cursor,
    decode_events,
    decode_header,
    decode_manifest,
    decode_schema,
    encode_checkpoint,
    encode_checkpoint_list,
    encode_commands,
    encode_cursor,
    encode_events,
    encode_header,
    encode_manifest,
    encode_schema,
    frame_value,
)
from shards.core import ShardCore
from shards.logstore import LogCorrupted, LogError, RocksLogStore
from shards.replay import LogReplay, headers, log_rows, read_commands
from shards.upgrade import upgrade_shard_log
from snapshot.reconstruct import part_rows, rebuild_part

V2 = Path(__file__).parent.parent / "data" / "log-v2"
FAMILIES = ("events", "commands", "clocks", "checkpoints", "meta")


# -- the codec alone ---------------------------------------------------------------------------


def _values() -> dict[str, tuple[bytes, object]]:
    """One encoded value per kind, and how to decode it."""
    block = EventBlock(
        5,
        [1, 2],
        [1, 3],
        [10.0, 11.0],
        [{"n": 1}, None],
        [(2, {"w": 1}), None],
        [None, (1, {"w": 1})],
        [0, 0],
        created={0: "TemporalVertex"},
    )
    events = encode_events(block, {0: ((1, 2, 2, {"w": 1}),)})
    commands = encode_commands(5, [("src:s", [(1, (0, 1, None, ("add_edge", 2, {}, None), 10.0))])])
    header = encode_header(BlockHeader(5, 6, 10.0, 11.0, 12.0, [(5, (6, 0))]))
    checkpoint = encode_checkpoint(
        CheckpointColumns(6, 11.0, (6, 0), 0, [1], ["T"], [{}], [{2: {}}], [{}], [3], [11.0])
    )
    return {
        "events": (events, lambda d: list(decode_events(d).messages())),
        "commands": (commands, decode_commands),
        "clocks": (header, lambda d: decode_header(6, d)),
        "checkpoints": (checkpoint, decode_checkpoint),
        "cursor": (encode_cursor(Cursor({"src:s": 1}, [1, 1], [0, 0], 7, {})), decode_cursor),
        "schema": (encode_schema(Schema("int", {"n": "int"}, {})), decode_schema),
        "checkpoints-list": (encode_checkpoint_list([(6, 11.0)]), decode_checkpoint_list),
        "manifest": (
            encode_manifest(Manifest(FORMAT_VERSION, 0, 2)),
            lambda d: decode_manifest(d, "x"),
        ),
    }


FAMILY_OF = {"cursor": "meta", "schema": "meta", "checkpoints-list": "meta", "manifest": "meta"}


def test_every_value_decodes_as_encoded():
    values = _values()
    block = decode_events(values["events"][0])
    assert block.key == 6 and block.created == {0: "TemporalVertex"}
    assert list(block.messages()) == [(0, 1, 0, (2, 2, 1, {"w": 1}, 10.0))]
    assert decode_header(6, values["clocks"][0]).vectors == [(5, (6, 0))]
    assert decode_checkpoint(values["checkpoints"][0]).out == [{2: {}}]
    assert decode_cursor(values["cursor"][0]).floor == 7
    assert decode_checkpoint_list(values["checkpoints-list"][0]) == [(6, 11.0)]
    assert decode_manifest(values["manifest"][0], "x") == Manifest(FORMAT_VERSION, 0, 2)
    assert [e.wc for e in decode_commands(values["commands"][0])] == [5]


def _corruptions(value: bytes) -> list[tuple[str, bytes]]:
    n = len(value)
    flips = [
        (f"bit {b} of byte {i}", value[:i] + bytes([value[i] ^ (1 << b)]) + value[i + 1 :])
        for i in range(n)
        for b in (0, 3, 7)
    ]
    cuts = [(f"truncated to {k}", value[:k]) for k in (0, 1, 3, 4, 5, n // 2, n - 4, n - 1)]
    grown = [(f"extended by {x!r}", value + x) for x in (b"\x00", b"\x00" * 4, b"junk" * 8)]
    replaced = [
        ("replaced by noise", bytes(range(40))),
        ("replaced by a bare pickle", pickle.dumps({"first": 1})),
    ]
    return flips + cuts + grown + replaced


@pytest.mark.parametrize("kind", sorted(_values()))
def test_every_corruption_of_a_value_is_refused_naming_its_family(kind):
    """Every single-bit flip at every position, truncations, extensions and replacements:
    always LogCorrupted naming the family (never another error, never a value)."""
    value, decode = _values()[kind]
    family = FAMILY_OF.get(kind, kind)
    for what, bad in _corruptions(value):
        with pytest.raises(LogCorrupted) as caught:
            decode(bad)
        assert caught.value.family == family, what
        assert f"column family {family!r}" in str(caught.value), what


def test_a_forged_checksum_over_a_huge_length_field_is_refused_without_allocating():
    """A value whose checksum matches but whose pickle declares a 2**62-byte string: a clear
    LogCorrupted, never a MemoryError."""
    huge = b"\x80\x05\x8e" + (2**62).to_bytes(8, "little") + b"abc."
    for decode in (decode_events, decode_commands, decode_checkpoint, decode_cursor):
        with pytest.raises(LogCorrupted, match="undecodable|too large"):
            decode(frame_value(huge))


def test_the_error_names_where_and_survives_pickling():
    exc = LogCorrupted("checksum mismatch", "events", 42).at("/logs/shard-1", shard=1)
    assert str(exc) == (
        "corrupted log value (shard 1, log /logs/shard-1, column family 'events', key 42): "
        "checksum mismatch"
    )
    again = pickle.loads(pickle.dumps(exc))
    assert (again.shard, again.path, again.family, again.key, str(again)) == (
        1,
        "/logs/shard-1",
        "events",
        42,
        str(exc),
    )
    assert isinstance(exc, LogError)


# -- a real log, corrupted in place ------------------------------------------------------------


def _families() -> dict[str, Options]:
    return {name: Options(raw_mode=True) for name in FAMILIES}


def _raw(path: Path) -> Rdict:
    return Rdict(
        str(path),
        Options(raw_mode=True),
        column_families=_families(),
        access_type=AccessType.read_write(),
    )


def _rewrite(path: Path, family: str, key: bytes, change) -> bytes:
    db = _raw(path)
    cf = db.get_column_family(family)
    try:
        old = cf[key]
        cf[key] = change(old)
        return old
    finally:
        cf.close()
        db.close()


def _keys(path: Path, family: str) -> list[bytes]:
    db = _raw(path)
    cf = db.get_column_family(family)
    try:
        return list(cf.keys())
    finally:
        cf.close()
        db.close()


@pytest.fixture()
def logged(tmp_path):
    """A 2-shard graph of 600 updates logged in RocksDB (several blocks and a checkpoint)."""
    rt = LocalRuntime(
        2,
        store_factory=lambda k: RocksLogStore(tmp_path / f"shard-{k}"),
        shard_checkpoint_interval=150,
        batch_size=100,
    )
    rt.ingest([cr.Update.add_edge(i % 13, (i * 7) % 11, float(i)) for i in range(600)], "s")
    rt.close()
    return tmp_path / "shard-0"


def _reopen(path: Path) -> None:
    store = RocksLogStore(path)
    try:
        ShardCore(0, 2, store)
    finally:
        store.close()


def _read(path: Path, how: str) -> None:
    store = RocksLogStore(path, read_only=True)
    try:
        if how == "snapshot":
            rebuild_part(store, 0, at=50.0)
        elif how == "inspect events":
            list(log_rows(store, "events"))
        elif how == "inspect commands":
            list(read_commands(store))
        elif how == "headers":
            list(headers(store))
        else:
            LogReplay(store, checkpoint=False).run()
    finally:
        store.close()


@pytest.mark.parametrize(
    ("family", "which", "how"),
    [
        ("events", -1, "flip"),
        ("events", -1, "truncate"),
        ("events", -1, "extend"),
        ("clocks", -1, "flip"),
        ("checkpoints", -1, "replace"),
        ("meta", "cursor", "flip"),
        ("meta", "schema", "truncate"),
        ("meta", "checkpoints", "extend"),
        ("meta", "manifest", "flip"),
    ],
)
def test_recovery_refuses_a_corrupted_value_naming_shard_path_family_and_key(
    logged, family, which, how
):
    keys = _keys(logged, family)
    key = which.encode() if isinstance(which, str) else keys[which]
    change = {
        "flip": lambda v: v[:7] + bytes([v[7] ^ 0x10]) + v[8:],
        "truncate": lambda v: v[: len(v) // 2],
        "extend": lambda v: v + b"\x00",
        "replace": lambda v: b"\x80\x05N.",
    }[how]
    original = _rewrite(logged, family, key, change)
    named = key.decode() if family == "meta" else int.from_bytes(key, "big")
    with pytest.raises(LogCorrupted) as caught:
        _reopen(logged)
    exc = caught.value
    assert (exc.shard, exc.path, exc.family, exc.key) == (0, str(logged), family, named)
    assert f"shard 0, log {logged}, column family {family!r}, key {named!r}" in str(exc)
    _rewrite(logged, family, key, lambda v: original)
    _reopen(logged)  # put back: it opens again


@pytest.mark.parametrize(
    "how", ["snapshot", "inspect events", "inspect commands", "headers", "replay"]
)
def test_every_reader_refuses_a_corrupted_block_naming_path_family_and_key(logged, how):
    family = {"inspect commands": "commands", "headers": "clocks"}.get(how, "events")
    key = _keys(logged, family)[0]
    _rewrite(logged, family, key, lambda v: v[:-1] + bytes([v[-1] ^ 1]))
    with pytest.raises(LogCorrupted) as caught:
        _read(logged, how)
    exc = caught.value
    assert (exc.path, exc.family, exc.key) == (str(logged), family, int.from_bytes(key, "big"))


def test_a_whole_block_moved_to_another_key_is_refused(logged):
    """A value is checksummed, its key is not: a valid block under the wrong key is found by
    the block's own extent."""
    before, last = _keys(logged, "events")[-2:]
    moved = _rewrite(logged, "events", before, lambda v: v)
    _rewrite(logged, "events", last, lambda v: moved)
    with pytest.raises(LogCorrupted, match="holds the block of worker clocks"):
        _reopen(logged)


def test_the_inspect_log_command_says_which_value_is_corrupted(logged):
    key = _keys(logged, "events")[0]
    _rewrite(logged, "events", key, lambda v: v[:-2])
    result = CliRunner().invoke(main, ["inspect-log", "--log-dir", str(logged.parent)])
    assert result.exit_code == 1
    assert f"column family 'events', key {int.from_bytes(key, 'big')}" in result.output
    assert str(logged) in result.output


# -- format 2: refused, converted --------------------------------------------------------------


@pytest.fixture()
def v2_graph(tmp_path):
    graph = tmp_path / "graph"
    shutil.copytree(V2 / "graph", graph)
    return graph


def _cut_counts(graph: Path, t: float) -> dict[tuple[int, int], int]:
    counts = {}
    for shard in (0, 1):
        store = RocksLogStore(graph / f"shard-{shard}", read_only=True)
        try:
            _, edges = part_rows(rebuild_part(store, shard, at=t))
        finally:
            store.close()
        counts.update({(e["src"], e["dst"]): e["count"] for e in edges})
    return counts


def test_a_log_of_format_2_is_refused_saying_how_to_convert_it(v2_graph):
    with pytest.raises(
        LogFormatError, match=f"format 2; this chronoray reads format {FORMAT_VERSION}"
    ) as caught:
        cr.GraphCluster.open(v2_graph, runtime="local")
    assert f"chronoray upgrade-log --log-dir {v2_graph}" in str(caught.value)


def test_upgrade_log_converts_format_2_and_every_cut_equals_the_oracle(v2_graph):
    oracle = edge_oracle(V2 / "edges.txt", "snap")
    times = sorted({ts for events in oracle.values() for ts, _ in events})
    result = CliRunner().invoke(main, ["upgrade-log", "--log-dir", str(v2_graph)])
    assert result.exit_code == 0, result.output
    assert result.output.count("converted") == 2 and "checkpoints" in result.output
    assert not list(v2_graph.parent.glob("graph/*.v2-old")) and not list(v2_graph.glob("*.v3-new"))
    probes = [
        times[0] - 1,
        times[0],
        times[len(times) // 3],
        times[len(times) // 2],
        (times[-2] + times[-1]) / 2,
        times[-1],
        times[-1] + 1,
    ]
    for t in probes:
        assert _cut_counts(v2_graph, t) == pair_counts_between(oracle, t), t
    with cr.GraphCluster.open(v2_graph, runtime="local") as g:  # it opens, and goes on
        assert g.stats().edges == len(oracle)
        g.ingest([cr.Update.add_edge(1, 99_999, times[-1] + 5)])
        assert g.vertex(1)["out_edges"][99_999]["count"] == 1
    again = CliRunner().invoke(main, ["upgrade-log", "--log-dir", str(v2_graph)])
    assert again.exit_code == 0 and again.output.count("already in the current format") == 2


def test_upgrade_log_refuses_a_corrupted_format_2_value_and_leaves_the_log_as_it_was(v2_graph):
    shard = v2_graph / "shard-1"
    key = _keys(shard, "events")[-1]
    before = {f: {k: v for k, v in _items(shard, f)} for f in FAMILIES}
    _rewrite(shard, "events", key, lambda v: v[: len(v) // 2])
    with pytest.raises(LogCorrupted) as caught:
        upgrade_shard_log(shard)
    assert (caught.value.shard, caught.value.family, caught.value.key) == (
        1,
        "events",
        int.from_bytes(key, "big"),
    )
    assert not (v2_graph / "shard-1.v3-new").exists()
    after = {f: {k: v for k, v in _items(shard, f)} for f in FAMILIES}
    assert after["events"][key] == before["events"][key][: len(before["events"][key]) // 2]
    after["events"][key] = before["events"][key]
    assert after == before


def _items(path: Path, family: str) -> list[tuple[bytes, bytes]]:
    db = _raw(path)
    cf = db.get_column_family(family)
    try:
        return list(cf.items())
    finally:
        cf.close()
        db.close()


def test_a_conversion_stopped_during_its_swap_is_finished_or_undone(v2_graph, monkeypatch):
    """Stopped between its two renames, the shard's log is nowhere at its path: the next
    run finishes the swap of a verified conversion (or undoes one not verified)."""
    import shards.upgrade as upgrade

    real = upgrade.os.replace
    calls = []

    def stop_at_second(src, dst):
        calls.append(src)
        if len(calls) == 2:
            raise KeyboardInterrupt("stopped")
        real(src, dst)

    monkeypatch.setattr(upgrade.os, "replace", stop_at_second)
    shard = v2_graph / "shard-0"
    with pytest.raises(KeyboardInterrupt):
        upgrade_shard_log(shard)
    monkeypatch.setattr(upgrade.os, "replace", real)
    assert not shard.exists() and (v2_graph / "shard-0.v2-old").is_dir()
    result = upgrade_shard_log(shard)
    assert result.resumed and "finished" in result.resumed and not result.converted
    assert not (v2_graph / "shard-0.v2-old").exists()
    # undo: the new store is not verified (its marker gone), the old log comes back
    shard1 = v2_graph / "shard-1"
    shutil.copytree(shard1, v2_graph / "shard-1.v2-old")
    shutil.copytree(shard1, v2_graph / "shard-1.v3-new")
    shutil.rmtree(shard1)
    result = upgrade_shard_log(shard1)
    assert result.resumed and "undid" in result.resumed and result.converted
    oracle = edge_oracle(V2 / "edges.txt", "snap")
    assert _cut_counts(v2_graph, float("inf")) == pair_counts_between(oracle, float("inf"))


def test_upgrade_log_refuses_a_log_held_by_a_running_graph_and_a_directory_without_a_graph(
    v2_graph, tmp_path
):
    holder = RocksLogStore(v2_graph / "shard-0")  # what a running shard holds
    try:
        with pytest.raises(LogError, match="stop the graph, then convert its logs"):
            upgrade_shard_log(v2_graph / "shard-0")
    finally:
        holder.close()
    assert not (v2_graph / "shard-0.v3-new").exists()
    with pytest.raises(LogFormatError, match="format 2"):
        cr.GraphCluster.open(v2_graph, runtime="local")  # untouched: still format 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["upgrade-log", "--log-dir", str(empty)])
    assert result.exit_code == 1 and "holds no chronoray graph" in result.output
