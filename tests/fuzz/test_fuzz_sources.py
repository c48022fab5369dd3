"""Fuzzing the file sources (SNAP, Bitcoin CSV, DEBS 2016, GraphTides): files of lines
mixing valid records, near misses and garbage. A source yields exactly the updates an independent
reading of the format's rules gives, up to the first bad line, and there raises
:class:`~chronoray.sources.MalformedRecord` naming the file, the line and its text --
never another exception, never a wrong value. Applied to a graph, nothing after the bad
line is applied."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

import chronoray as cr
from chronoray.testing import LocalRuntime

_INT = re.compile(r"-?[0-9]+")
_DEC = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")

ints = st.one_of(
    st.integers(-5, 50).map(str),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["007", "+3", "1_000", "١٢", "0x1f", "-0"]),
)
times = st.one_of(
    st.integers(0, 2**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "-inf", "1e400", "1.", ".5", "-1", "12.5", "1e3", "Infinity"]),
)
junk = st.text(max_size=8).filter(lambda s: "\n" not in s and "\r" not in s)
token = st.one_of(ints, times, junk)


def _snap_line(fields: list[str], sep: str) -> str:
    return sep.join(fields)


snap_lines = st.one_of(
    st.builds(lambda a, b, t: f"{a} {b} {t}", ints, ints, times),
    st.builds(_snap_line, st.lists(token, max_size=5), st.sampled_from([" ", "\t", "  ", ","])),
    st.sampled_from(["", "# a comment", "   ", "1 2 3 # trailing"]),
)
csv_lines = st.one_of(
    st.builds(lambda a, b, r, t: f"{a},{b},{r},{t}", ints, ints, st.integers(-12, 12), times),
    st.builds(",".join, st.lists(token, max_size=6)),
    st.sampled_from(["", "1, 2,3,4.0", "1,2,3,4.0,"]),
)


def snap_rule(line: str) -> tuple[int, int, float] | str | None:
    """SNAP: ``SRC DST TS``, integer ids, a non-negative integer time; ``#`` and blank
    lines skipped. The result, ``None`` (skipped), or ``"bad"``."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    fields = text.split()
    if len(fields) != 3 or not all(_INT.fullmatch(f) for f in fields):
        return "bad"
    src, dst, ts = (int(f) for f in fields)
    return (src, dst, float(ts)) if ts >= 0 else "bad"


def csv_rule(line: str) -> tuple[int, int, float, int] | str | None:
    """Bitcoin CSV: ``SRC,DST,RATING,TIME`` without spaces, a rating in [-10, 10], a
    finite non-negative decimal time; blank lines skipped."""
    if not line.strip():
        return None
    fields = line.split(",")
    if len(fields) != 4 or not all(_INT.fullmatch(f) for f in fields[:2]):
        return "bad"
    if not re.fullmatch(r"[+-]?[0-9]+", fields[2]):  # a rating may carry its sign
        return "bad"
    if not _DEC.fullmatch(fields[3]):
        return "bad"
    rating, ts = int(fields[2]), float(fields[3])
    if not -10 <= rating <= 10 or not math.isfinite(ts) or ts < 0:
        return "bad"
    return int(fields[0]), int(fields[1]), ts, rating


FORMATS = {
    "snap": (cr.SnapEdgeSource, snap_rule, snap_lines),
    "csv": (cr.BitcoinCsvSource, csv_rule, csv_lines),
}


def _expected(rule, lines):
    """The updates up to the first bad line, and that line's number (or ``None``)."""
    out = []
    for lineno, line in enumerate(lines, 1):
        parsed = rule(line)
        if parsed == "bad":
            return out, lineno
        if parsed is not None:
            out.append((lineno, parsed))
    return out, None


def _check_source(tmp_path, fmt: str, lines: list[str]) -> None:
    make, rule, _ = FORMATS[fmt]

    def seen(u):
        props = (u.props["weight"],) if fmt == "csv" else ()
        return u.vertex, u.dst, u.ts, *props

    _check_read(tmp_path / f"fuzz.{fmt}", lines, make, rule, seen)


def _check_read(path, lines: list[str], make, rule, seen) -> None:
    """``make(path).read()`` of ``lines`` gives ``seen(update)`` for exactly the updates
    ``rule`` accepts up to the first bad line, and there a :class:`MalformedRecord`
    naming the file, the line and its text."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    want, bad_line = _expected(rule, lines)
    got = []
    try:
        for u in make(path).read():
            got.append((u.offset, seen(u)))
    except cr.MalformedRecord as exc:
        assert bad_line is not None, f"refused a good file: {exc}"
        assert (exc.line, exc.text) == (bad_line, lines[bad_line - 1])
        assert f"{path}:{bad_line}" in str(exc) and exc.reason
    else:
        assert bad_line is None, f"line {bad_line} {lines[bad_line - 1]!r} accepted"
    assert got == want


@given(lines=st.lists(snap_lines, max_size=12))
def test_snap_files(tmp_path_factory, lines):
    _check_source(tmp_path_factory.mktemp("snap"), "snap", lines)


@given(lines=st.lists(csv_lines, max_size=12))
def test_bitcoin_csv_files(tmp_path_factory, lines):
    _check_source(tmp_path_factory.mktemp("csv"), "csv", lines)


@given(lines=st.lists(snap_lines, min_size=1, max_size=20))
def test_a_bad_line_applies_nothing_after_it(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("apply") / "f.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    want, bad_line = _expected(snap_rule, lines)
    want = sorted(want, key=lambda item: item[1][2])  # the graph needs time order
    rt = LocalRuntime(2)
    try:
        rt.ingest(cr.SnapEdgeSource(path).read(), "fuzz", allowed_lateness=math.inf)
    except (cr.MalformedRecord, cr.OutOfOrder) as exc:
        assert bad_line is not None or isinstance(exc, cr.OutOfOrder)
    else:
        assert bad_line is None
    counts: dict[tuple[int, int], int] = {}
    for _, (src, dst, _) in want:
        counts[(src, dst)] = counts.get((src, dst), 0) + 1
    got = {pair: props["count"] for pair, props in rt.edges().items()}
    assert got == counts
    rt.close()


# -- DEBS 2016 -----------------------------------------------------------------------------

stamps = st.one_of(
    st.datetimes(
        min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}+0000"),
    st.sampled_from(["2010-02-30T00:00:00.000+0000", "2010-02-01T24:00:00.000+0000", "x"]),
)
debs_ids = st.one_of(st.integers(0, 10**12).map(str), st.sampled_from(["-1", "", "٣", "1 "]))
debs_lines = st.one_of(
    st.builds(lambda t, a, b: f"{t}|{a}|{b}", stamps, debs_ids, debs_ids),
    st.builds("|".join, st.lists(junk, max_size=4)),
)


def debs_rule(line: str, last: float) -> float | str | None:
    """likes/friendships: ``ts|id|id``, ids ASCII digits, an official UTC timestamp not
    before the previous good line's; the event's time in ms, ``None``, or ``"bad"``."""
    if not line.strip():
        return None
    fields = line.split("|")
    if len(fields) != 3 or not all(f.isascii() and f.isdigit() for f in fields[1:]):
        return "bad"
    try:
        when = datetime.strptime(fields[0], "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return "bad"
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+\d{4}", fields[0]):
        return "bad"
    ms = round(when.timestamp() * 1000)
    return ms if ms >= last else "bad"


@given(lines=st.lists(debs_lines, max_size=10))
def test_debs_files(tmp_path_factory, lines):
    from cep.readers import read_file

    path = tmp_path_factory.mktemp("debs") / "likes.dat"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    got = list(read_file(path, "likes"))
    last, want = -math.inf, []
    for lineno, line in enumerate(lines, 1):
        outcome = debs_rule(line, last)
        if outcome is None:
            continue
        if outcome != "bad":
            last = outcome
        want.append((lineno, outcome))
    assert [n for n, _ in got] == [n for n, _ in want]
    for (lineno, event), (_, outcome) in zip(got, want, strict=True):
        if outcome == "bad":
            assert isinstance(event, cr.MalformedRecord), (lines[lineno - 1], event)
            assert (event.line, event.text) == (lineno, lines[lineno - 1]) and event.reason
        else:
            assert not isinstance(event, cr.MalformedRecord), event
            assert event.ts == outcome


# -- GraphTides ----------------------------------------------------------------------------

_TIDES_VERTEX = {"CREATE_VERTEX": "add_vertex", "UPDATE_VERTEX": "message",
                 "REMOVE_VERTEX": "remove_vertex"}  # fmt: skip
_TIDES_EDGE = {"CREATE_EDGE": "add_edge", "UPDATE_EDGE": "update_edge",
               "REMOVE_EDGE": "remove_edge"}  # fmt: skip
_NAME = re.compile(r"[^\s,\-]+")

tides_ids = st.one_of(
    st.integers(0, 2**70).map(str),
    st.sampled_from(["ada", "007", "-1", "", "a b", "١٢", "x-y", "7"]),
)
tides_payloads = st.one_of(
    st.builds(
        lambda t, extra: "{" + ", ".join([f'"ts": {t}', *extra]) + "}",
        times,
        st.lists(st.sampled_from(['"w": 3', '"name": "a,b"', '"ts": 2', '"x": null']), max_size=2),
    ),
    st.sampled_from(["", " ", "{}", "[1]", '{"ts": true}', '{"ts": "1"}', "{", '{"w": 1}']),
    junk,
)
tides_good = st.builds(  # mostly well formed: the near misses are in the details
    lambda c, a, b, t, extra: (
        (f"{c},{a}-{b}," if c in _TIDES_EDGE else f"{c},{a},")
        + "{"
        + ", ".join([f'"ts": {t}', *extra])
        + "}"
    ),
    st.sampled_from([*_TIDES_VERTEX, *_TIDES_EDGE]),
    st.sampled_from(["1", "2", "ada", "007"]),
    st.sampled_from(["3", "bob", "7", "2"]),
    st.one_of(st.integers(0, 10**6), st.floats(0, 1e6)),
    st.lists(st.sampled_from(['"w": 3', '"name": "a,b"']), max_size=1),
)
tides_lines = st.one_of(
    tides_good,
    tides_good,
    st.builds(
        lambda c, e, p: f"{c},{e},{p}",
        st.sampled_from([*_TIDES_VERTEX, *_TIDES_EDGE, "MARKER", "SET_SPEED", "PAUSE", "NOPE"]),
        st.one_of(tides_ids, st.builds(lambda a, b: f"{a}-{b}", tides_ids, tides_ids)),
        tides_payloads,
    ),
    st.builds(lambda v: f"SET_SPEED,,{v}", times),
    st.builds(lambda v: f"PAUSE,,{v}", times),
    st.builds(",".join, st.lists(junk, max_size=4)),
    st.sampled_from(["", "# a comment", "MARKER,m1,", "CREATE_VERTEX,1"]),
)


def _tides_id(text: str) -> int | str | None:
    if text and text.isascii() and text.isdigit():
        return int(text)
    return text if _NAME.fullmatch(text) else None


def _tides_object(text: str) -> dict | None:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def tides_rule(line: str) -> tuple | str | None:
    """GraphTides (``chronoray/tides.py``'s docstring, read independently):
    ``COMMAND,ENTITY,PAYLOAD``; graph events become ``(kind, vertex, dst, ts, props)``,
    markers and control events are skipped when read as updates, ``"bad"`` otherwise."""
    if not line.strip() or line.startswith("#"):
        return None
    if line.count(",") < 2:
        return "bad"
    command, entity, payload = line.split(",", 2)
    if command == "MARKER":
        return None if _NAME.fullmatch(entity) and _tides_object(payload) is not None else "bad"
    if command in ("SET_SPEED", "PAUSE"):
        try:
            value = float(payload)
        except ValueError:
            return "bad"
        fine = math.isfinite(value) and value >= 0 and (command == "PAUSE" or value > 0)
        return None if fine and not entity else "bad"
    props = _tides_object(payload)
    if props is None or command not in {**_TIDES_VERTEX, **_TIDES_EDGE} or "ts" not in props:
        return "bad"
    ts = props.pop("ts")
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts) or ts < 0:
        return "bad"
    if command in _TIDES_VERTEX:
        kind, vertex, dst = _TIDES_VERTEX[command], _tides_id(entity), None
        if vertex is None:
            return "bad"
    else:
        kind, ends = _TIDES_EDGE[command], entity.split("-")
        if len(ends) != 2:
            return "bad"
        vertex, dst = _tides_id(ends[0]), _tides_id(ends[1])
        if vertex is None or dst is None or vertex == dst:
            return "bad"
    if kind.startswith("remove") and props:
        return "bad"
    return kind, vertex, dst, ts, props


@given(lines=st.lists(tides_lines, max_size=12))
def test_graphtides_files(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("tides") / "fuzz.tides"
    _check_read(
        path,
        lines,
        cr.GraphTidesSource,
        tides_rule,
        lambda u: (u.kind.value, u.vertex, u.dst, u.ts, dict(u.props)),
    )
