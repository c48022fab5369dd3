"""chronoray.sources: real data parsed exactly, strict validation, skip mode, iterables."""

from __future__ import annotations

import hashlib
import pickle
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import (
    BitcoinCsvSource,
    IterableSource,
    MalformedRecord,
    ReadStats,
    SnapEdgeSource,
    Source,
    open_source,
    read_updates,
)
from vertex.records import Update, UpdateKind

README = Path(collegemsg_path()).parent / "README.md"


def _naive_snap(path: Path) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in line.split(" ")) for line in path.read_text().splitlines()]


def _naive_csv(path: Path) -> list[tuple[int, int, int, str]]:
    rows = []
    for line in path.read_text().splitlines():
        src, dst, rating, ts = line.split(",")
        rows.append((int(src), int(dst), int(rating), ts))
    return rows


def _read_until_error(source: Source) -> tuple[list[Update], MalformedRecord | None]:
    got: list[Update] = []
    try:
        for update in source.read():
            got.append(update)
    except MalformedRecord as exc:
        return got, exc
    return got, None


# -- the real data -------------------------------------------------------------------------


def test_collegemsg_parses_exactly() -> None:
    path = collegemsg_path()
    naive = _naive_snap(path)
    updates = list(SnapEdgeSource(path).read())
    assert len(updates) == len(naive) == 59_835
    assert len({u.vertex for u in updates} | {u.dst for u in updates}) == 1_899
    pairs = Counter((u.vertex, u.dst) for u in updates)
    assert len(pairs) == 20_296
    assert pairs == Counter((s, d) for s, d, _ in naive)
    # Every record equals the one the public constructors build, line by line.
    for lineno, (update, (s, d, ts)) in enumerate(zip(updates, naive, strict=True), 1):
        assert update == Update.add_edge(s, d, ts).with_origin("collegemsg.txt", lineno)
        assert type(update.ts) is int
    assert updates[0].kind is UpdateKind.ADD_EDGE and updates[0].props == {}


def test_bitcoin_parses_exactly() -> None:
    path = bitcoinotc_path()
    naive = _naive_csv(path)
    updates = list(BitcoinCsvSource(path).read())
    assert len(updates) == len(naive) == 35_592
    assert len({u.vertex for u in updates} | {u.dst for u in updates}) == 5_881
    for lineno, (update, (s, d, rating, ts)) in enumerate(zip(updates, naive, strict=True), 1):
        expected = Update.add_edge(s, d, float(ts), weight=rating)
        assert update == expected.with_origin("bitcoinotc.csv", lineno)
        assert type(update.ts) is float and update.ts == float(ts)
        assert type(update.props["weight"]) is int
    assert updates[0].ts == 1289241911.72836 and updates[0].props == {"weight": 4}
    assert sum(u.props["weight"] < 0 for u in updates) == 3_563


def test_props_are_not_shared_between_updates() -> None:
    a, b = list(SnapEdgeSource(collegemsg_path()).read())[:2]
    assert a.props is not b.props


def _readme_sha256() -> dict[str, str]:
    text = README.read_text()
    sections = re.split(r"^## ", text, flags=re.M)
    found = {}
    for section in sections:
        name = section.split("\n", 1)[0].strip()
        m = re.search(r"sha256: `([0-9a-f]{64})`", section)
        if m:
            found[name] = m.group(1)
    return found


def test_shipped_copies_match_readme_sha256() -> None:
    expected = _readme_sha256()
    assert set(expected) == {"collegemsg.txt", "bitcoinotc.csv"}
    for path in (collegemsg_path(), bitcoinotc_path()):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == expected[path.name]


# -- strict validation -----------------------------------------------------------------------

SNAP_BAD = [
    ("1 2", "expected 3 whitespace-separated fields"),
    ("1 2 3 4", "expected 3 whitespace-separated fields"),
    ("a 2 3", "source id is not an integer: 'a'"),
    ("1 x 3", "target id is not an integer: 'x'"),
    ("1_0 2 3", "source id is not an integer: '1_0'"),
    ("1.0 2 3", "source id is not an integer"),
    ("1 2 3.5", "time is not an integer: '3.5'"),
    ("1 2 1e9", "time is not an integer"),
    ("1 2 nan", "time is not finite: 'nan'"),
    ("1 2 -inf", "time is not finite"),
    ("1 2 -5", "negative time: '-5'"),
    ("1 2 -2.5", "negative time"),
    ("1 2 abc", "time is not a number: 'abc'"),
    ("1 2 ١٢", "time is not a number"),
]

CSV_BAD = [
    ("1,2,3", "expected 4 comma-separated fields"),
    ("1,2,3,4,5", "expected 4 comma-separated fields"),
    ("1 2 3 4", "expected 4 comma-separated fields"),
    ("SOURCE,TARGET,RATING,TIME", "source id is not an integer: 'SOURCE'"),
    ("1,b,3,5.0", "target id is not an integer: 'b'"),
    ("1, 2,3,5.0", "target id is not an integer: ' 2'"),
    ("1,2,x,5.0", "rating is not an integer: 'x'"),
    ("1,2,3.5,5.0", "rating is not an integer: '3.5'"),
    ("1,2,11,5.0", "rating 11 is outside [-10, 10]"),
    ("1,2,-11,5.0", "rating -11 is outside [-10, 10]"),
    ("1,2,3,abc", "time is not a number: 'abc'"),
    ("1,2,3,", "time is not a number: ''"),
    ("1,2,3,1_0.5", "time is not a number"),
    ("1,2,3,nan", "time is not finite: 'nan'"),
    ("1,2,3,inf", "time is not finite"),
    ("1,2,3,1e999", "time is not finite: '1e999'"),
    ("1,2,3,-1.5", "negative time: '-1.5'"),
]


@pytest.mark.parametrize(("bad", "reason"), SNAP_BAD)
def test_snap_malformed_line(tmp_path: Path, bad: str, reason: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(f"1 2 100\n3 4 50\n{bad}\n5 6 200\n", encoding="utf-8")
    got, exc = _read_until_error(SnapEdgeSource(path))
    assert [(u.vertex, u.dst, u.ts, u.offset) for u in got] == [(1, 2, 100, 1), (3, 4, 50, 2)]
    assert exc is not None
    assert (exc.source, exc.line, exc.text) == (str(path), 3, bad)
    assert reason in exc.reason
    assert str(exc) == f"{path}:3: {exc.reason}: {bad!r}"
    assert isinstance(exc, ValueError)


@pytest.mark.parametrize(("bad", "reason"), CSV_BAD)
def test_csv_malformed_line(tmp_path: Path, bad: str, reason: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(f"1,2,-3,100.5\n3,4,10,50\n{bad}\n5,6,1,200.25\n", encoding="utf-8")
    got, exc = _read_until_error(BitcoinCsvSource(path))
    assert [(u.vertex, u.dst, u.props["weight"], u.ts) for u in got] == [
        (1, 2, -3, 100.5),
        (3, 4, 10, 50.0),
    ]
    assert exc is not None
    assert (exc.source, exc.line, exc.text) == (str(path), 3, bad)
    assert reason in exc.reason


def test_lenient_but_valid_forms_are_accepted(tmp_path: Path) -> None:
    snap = tmp_path / "ok.txt"
    snap.write_bytes(b"# comment\n\n  \t\n1\t2\t30\r\n  -7 8   9  \n 5 5 0\n# end\n10 11 5\n")
    got = list(SnapEdgeSource(snap).read())
    # Offsets are line numbers: comments and blank lines count but yield nothing.
    assert [(u.vertex, u.dst, u.ts, u.offset) for u in got] == [
        (1, 2, 30, 4),
        (-7, 8, 9, 5),
        (5, 5, 0, 6),
        (10, 11, 5, 8),  # time order is not required
    ]
    csv = tmp_path / "ok.csv"
    csv.write_bytes(b"1,2,+3,5.\r\n\n4,5,0,7\n6,7,-10,1e3\n")
    got = list(BitcoinCsvSource(csv).read())
    assert [(u.vertex, u.props["weight"], u.ts, u.offset) for u in got] == [
        (1, 3, 5.0, 1),
        (4, 0, 7.0, 3),
        (6, -10, 1000.0, 4),
    ]
    assert all(type(u.ts) is float for u in got)


def test_crlf_and_undecodable_text(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"1 2 3\r\n4 \xff 6\r\n")
    got, exc = _read_until_error(SnapEdgeSource(path))
    assert len(got) == 1
    assert exc is not None and exc.line == 2 and exc.text == "4 \\xff 6"


def test_comment_lines_are_not_skipped_in_csv(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("# header\n1,2,3,4\n")
    _, exc = _read_until_error(BitcoinCsvSource(path))
    assert exc is not None and exc.line == 1


def test_malformed_record_pickles() -> None:
    exc = MalformedRecord("f.txt", 7, "1 x 3", "target id is not an integer: 'x'")
    back = pickle.loads(pickle.dumps(exc))
    assert (back.source, back.line, back.text, back.reason) == ("f.txt", 7, "1 x 3", exc.reason)
    assert str(back) == str(exc) == "f.txt:7: target id is not an integer: 'x': '1 x 3'"


# -- read_updates ----------------------------------------------------------------------------


def _bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "mixed.txt"
    path.write_text("1 2 10\nbad line here x\n3 4 11\n\n5 6 nan\n7 8 12\n")
    return path


def test_read_updates_raise_mode(tmp_path: Path) -> None:
    updates, stats = read_updates(SnapEdgeSource(_bad_file(tmp_path)))
    assert next(updates).offset == 1
    assert stats == ReadStats(read=1, rejected=0, last_offset=1)
    with pytest.raises(MalformedRecord) as info:
        next(updates)
    assert (info.value.line, info.value.text) == (2, "bad line here x")
    assert info.value.reason == "expected 3 whitespace-separated fields SRC DST TS, got 4"
    assert stats == ReadStats(read=1, rejected=0, last_offset=1)


def test_read_updates_skip_mode_counts_and_writes_rejects(tmp_path: Path) -> None:
    path = _bad_file(tmp_path)
    rejects = tmp_path / "out" / "rejects.tsv"
    updates, stats = read_updates(SnapEdgeSource(path), on_error="skip", rejects=rejects)
    assert not rejects.exists()  # created lazily
    first = next(updates)
    assert first.offset == 1 and stats.read == 1 and not rejects.exists()
    rest = list(updates)
    assert [u.offset for u in rest] == [3, 6]
    assert stats == ReadStats(read=3, rejected=2, last_offset=6)
    lines = rejects.read_text().splitlines()
    assert lines == [
        f"{path}\t2\texpected 3 whitespace-separated fields SRC DST TS, got 4\tbad line here x",
        f"{path}\t5\ttime is not finite: 'nan'\t5 6 nan",
    ]
    # Appended on a second run.
    updates, stats = read_updates(SnapEdgeSource(path), on_error="skip", rejects=rejects)
    assert len(list(updates)) == 3 and stats.rejected == 2
    assert len(rejects.read_text().splitlines()) == 4


def test_read_updates_skip_without_rejects_file(tmp_path: Path) -> None:
    updates, stats = read_updates(SnapEdgeSource(_bad_file(tmp_path)), on_error="skip")
    assert [u.offset for u in updates] == [1, 3, 6]
    assert (stats.read, stats.rejected) == (3, 2)


def test_read_updates_skip_mode_collegemsg_with_bad_line(tmp_path: Path) -> None:
    lines = collegemsg_path().read_text().splitlines()
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines[:1000] + ["17 oops 1082040961"] + lines[1000:2000]) + "\n")
    updates, stats = read_updates(SnapEdgeSource(bad), on_error="skip")
    assert len(list(updates)) == 2000 and stats.rejected == 1 and stats.last_offset == 2001


def test_read_updates_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="on_error"):
        read_updates(IterableSource([]), on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a Source"):
        read_updates([Update.add_edge(1, 2)])  # type: ignore[arg-type]


class _ReadOnlySource:
    """A third-party source with only ``read()``."""

    def __init__(self, updates: list[object], name: str = "custom") -> None:
        self.name = name
        self._updates = updates

    def read(self) -> Iterator[Update]:
        yield from self._updates  # type: ignore[misc]


def test_read_updates_checks_read_only_sources() -> None:
    good = [Update.add_edge(i, i + 1, i).with_origin("custom", i) for i in (1, 2, 5)]
    source = _ReadOnlySource(list(good))
    assert isinstance(source, Source)
    updates, stats = read_updates(source, on_error="skip")
    assert list(updates) == good and stats == ReadStats(read=3, rejected=0, last_offset=5)
    updates, _ = read_updates(_ReadOnlySource([good[1], good[0]]))
    with pytest.raises(ValueError, match="does not increase"):
        list(updates)
    updates, _ = read_updates(_ReadOnlySource([Update.add_edge(1, 2)]))
    with pytest.raises(ValueError, match="stamp updates"):
        list(updates)
    updates, _ = read_updates(_ReadOnlySource(["nope"]))
    with pytest.raises(TypeError, match="non-Update"):
        list(updates)


# -- iterables -------------------------------------------------------------------------------


def test_iterable_source_offsets() -> None:
    plain = [Update.add_edge(1, 2, 5), Update.add_vertex(3), Update.message(4, 1, x=1)]
    got = list(IterableSource(plain).read())
    assert [(u.source, u.offset) for u in got] == [
        ("iterable", 1),
        ("iterable", 2),
        ("iterable", 3),
    ]
    assert got[2] == Update.message(4, 1, x=1).with_origin("iterable", 3)
    stamped = [Update.add_edge(1, 2).with_origin("elsewhere", o) for o in (0, 10, 42)]
    got = list(IterableSource(stamped, name="s").read())
    assert [(u.source, u.offset) for u in got] == [("s", 0), ("s", 10), ("s", 42)]
    # Already stamped with this name and offset: passed through as is.
    same = Update.add_edge(1, 2).with_origin("s", 7)
    assert next(IterableSource([same], name="s").read()) is same
    # A generator works too (once).
    gen_source = IterableSource((Update.add_edge(i, i + 1) for i in range(3)), name="g")
    assert [u.offset for u in gen_source.read()] == [1, 2, 3]


def test_iterable_source_rejects_non_updates_and_decreasing_offsets() -> None:
    items: list[object] = [Update.add_edge(1, 2), ("not", "an update"), Update.add_edge(3, 4)]
    got, exc = _read_until_error(IterableSource(items, name="mine"))  # type: ignore[arg-type]
    assert [u.offset for u in got] == [1]
    assert exc is not None
    assert (exc.source, exc.line, exc.text) == ("mine", 2, "('not', 'an update')")
    assert "item 2 is not an Update but tuple" in exc.reason

    decreasing = [Update.add_edge(1, 2).with_origin("x", 5), Update.add_edge(2, 3)]
    got, exc = _read_until_error(IterableSource(decreasing))
    assert [u.offset for u in got] == [5]
    assert exc is not None and exc.line == 2 and "offset 2 of item 2 does not increase" in str(exc)

    updates, stats = read_updates(IterableSource(items), on_error="skip")  # type: ignore[arg-type]
    assert [u.offset for u in updates] == [1, 3]
    assert stats == ReadStats(read=2, rejected=1, last_offset=3)


def _mixed_items() -> list[object]:
    """Plain edge additions in runs broken by every kind of other item."""
    items: list[object] = [Update.add_edge(i, i + 1, i) for i in range(20)]
    items += [Update.add_edge(1, 2, 20.5), Update.add_edge(2, 3, 21.0)]  # float times
    items += [Update.add_edge(3, 4, 22, weight=2), Update.add_edge("a", 1, 23)]
    items += [None, Update.add_edge(1, 2, 24), Update.message(1, 25, x=1)]
    items += [("not", "an update"), Update.add_edge(2**63, 1, 26), Update.add_edge(4, 5, 27)]
    items += [Update.add_vertex(9, 28), Update.remove_edge(1, 2, 29), Update.add_edge(5, 6, 30)]
    items += [Update.add_edge(6, 7, 31).with_origin("mine", 100), Update.add_edge(7, 8, 32)]
    items += [Update.add_edge(i, i + 2, 33 + i) for i in range(9000)]  # longer than a batch
    return items


def _unrolled_equals_records(source: IterableSource) -> list[object]:
    """``source.batches()`` unrolled equals ``source.records()``; returns the batches."""
    from vertex.columns import UpdateBatch

    batches = list(source.batches())
    unrolled: list[object] = []
    for item in batches:
        unrolled += list(item.updates()) if isinstance(item, UpdateBatch) else [item]
    records = list(source.records())
    assert len(unrolled) == len(records)
    for got, want in zip(unrolled, records, strict=True):
        if isinstance(want, MalformedRecord):
            assert isinstance(got, MalformedRecord) and str(got) == str(want)
            continue
        assert got == want and type(getattr(got, "ts", None)) is type(getattr(want, "ts", None))
        props = getattr(got, "props", None), getattr(want, "props", None)
        assert [list(p.items()) if p is not None else p for p in props[:1]] == [
            list(p.items()) if p is not None else p for p in props[1:]
        ]  # the same payload, its keys in the same order
    return batches


def test_iterable_source_batches_give_the_records_as_columns() -> None:
    """A list's runs of plain edge additions come as columns; unrolled, they are exactly
    the updates ``records()`` gives (offsets, times and their types included), and every
    other item -- ``None``, a bad item, an edge with properties or a non-int id -- comes
    as ``records()`` gives it, in order."""
    from vertex.columns import UpdateBatch

    source = IterableSource(_mixed_items(), name="mine")  # type: ignore[arg-type]
    batches = _unrolled_equals_records(source)
    assert sum(isinstance(b, UpdateBatch) for b in batches) >= 6
    assert max(len(b) for b in batches if isinstance(b, UpdateBatch)) <= 8192  # a chunk at most
    # Anything but a list or tuple (a generator may wait between items): rows only.
    lazy = IterableSource(iter(_mixed_items()), name="mine")  # type: ignore[arg-type]
    assert not any(isinstance(b, UpdateBatch) for b in lazy.batches())


@pytest.mark.parametrize("rows", [5, 8192])
def test_whole_chunks_of_a_list_are_read_as_columns_and_mean_the_records(
    rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk of a list whose items are all plain edge additions, or all messages with
    the same payload keys, is taken as columns a field at a time; any chunk with another
    item -- a bad one, a decreasing offset, a payload of other keys or types, ``None`` --
    is read item by item; either way, unrolled, the records."""
    import chronoray.sources
    from vertex.columns import UpdateBatch

    monkeypatch.setattr(chronoray.sources, "_ROWS", rows)
    edges = [Update.add_edge(i % 7, i % 5 + 10, i // 3) for i in range(40)]
    messages = [Update.message(i % 9, 50 + i, amount=i - 20, tag=f"t{i % 3}") for i in range(40)]
    floats = [Update.message(i % 4, 100.5 + i, x=float(i)) for i in range(12)]
    own = [Update.add_edge(1, 2, 200 + i).with_origin("mine", 1000 + 3 * i) for i in range(10)]
    lists = {
        "clean": edges + messages + floats,
        "own offsets": edges + own + [Update.add_edge(3, 4, 300)],
        "decreasing offset": edges + [Update.add_edge(1, 2, 99).with_origin("mine", 3)] + edges,
        "other keys": messages + [Update.message(1, 100, tag="x", amount=1)] + messages,
        "other types": messages + [Update.message(1, 100, amount=1.5, tag="x")],
        "time types": edges[:7] + [Update.add_edge(1, 2, 14.5 + i) for i in range(6)],
        "bad items": edges + [None, ("not", "an update"), Update.add_edge(2**63, 1, 40)] + edges,
    }
    for name, items in lists.items():
        batches = _unrolled_equals_records(IterableSource(items, name="mine"))  # type: ignore[arg-type]
        columns = sum(len(b) for b in batches if isinstance(b, UpdateBatch))
        if name == "clean":
            assert columns == len(items), name
    clean = list(IterableSource(lists["clean"], name="mine").batches())
    if rows == 5:  # whole chunks: one batch per chunk of 5
        assert [len(b) for b in clean] == [5] * (92 // 5) + [2]  # type: ignore[arg-type]


def test_a_list_and_a_generator_of_updates_make_the_same_graph(tmp_path: Path) -> None:
    import chronoray as cr

    def graph(items: object, where: str) -> tuple[object, ...]:
        with cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(tmp_path / where)) as g:
            source = cr.IterableSource(items, name="s")  # type: ignore[arg-type]
            report = g.ingest(source, on_error="skip")
            vertices, edges = g.snapshot(at=1000).to_pandas()
            cut = g.snapshot(at=30).to_pandas()[1]
            return (
                report.updates,
                report.rejected,
                sorted(map(repr, vertices.itertuples(index=False))),
                sorted(map(repr, edges.itertuples(index=False))),
                sorted(map(repr, cut.itertuples(index=False))),
            )

    items = _mixed_items()
    assert graph(items, "list") == graph(iter(items), "generator")


# -- opening -----------------------------------------------------------------------------------


def test_open_source_names_and_formats(tmp_path: Path) -> None:
    snap = open_source(collegemsg_path(), "snap")
    assert isinstance(snap, SnapEdgeSource) and isinstance(snap, Source)
    assert snap.name == "collegemsg.txt"
    btc = open_source(str(bitcoinotc_path()), "bitcoin-csv", name="btc")
    assert isinstance(btc, BitcoinCsvSource) and btc.name == "btc"
    assert next(btc.read()).source == "btc"
    with pytest.raises(ValueError, match="unknown source format 'json'"):
        open_source(collegemsg_path(), "json")  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [SnapEdgeSource, BitcoinCsvSource])
def test_missing_file(tmp_path: Path, make: type) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError) as info:
        make(missing)
    assert info.value.filename == str(missing) and str(missing) in str(info.value)
