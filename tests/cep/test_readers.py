"""Timestamps, readers of the official files (bad input, skip mode, merge order; the columns
reader against the row reader), generator."""

from __future__ import annotations

import pytest
from cep_helpers import at, write_debs

import chronoray as cr
from cep import (
    DebsFiles,
    Like,
    Post,
    format_time,
    generate,
    parse_time,
    read_columns,
    read_stream,
)


def test_timestamps_round_trip_and_refuse_other_forms():
    assert format_time(parse_time("2010-12-31T23:59:59.999+0000")) == "2010-12-31T23:59:59.999+0000"
    assert parse_time("2010-02-01T01:00:00.000+0100") == parse_time("2010-02-01T00:00:00.000+0000")
    bad_ones = [
        "2010-02-01 00:00:00",
        "2010-02-30T00:00:00.000+0000",
        "2010-02-01T24:00:00.000+0000",
        "2010-02-01T00:00:00.00+0000",
        "2010-02-01T00:00:00.000Z",
    ]
    for bad in bad_ones:
        with pytest.raises(ValueError):
            parse_time(bad)


def test_merged_by_time_then_file_order(tmp_path):
    files = write_debs(
        tmp_path,
        posts=[f"{at(1)}|1|5|hello|Ann Lee"],
        comments=[f"{at(1)}|2|6|hi|Bo Li||1"],
        likes=[f"{at(0)}|6|2", f"{at(1)}|7|2"],
        friendships=[f"{at(1)}|6|7"],
    )
    events, stats = read_stream(files)
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["Like", "Post", "Comment", "Like", "Friendship"]
    assert stats.events == {"posts": 1, "comments": 1, "likes": 2, "friendships": 1}


def test_minus_one_or_empty_mark_the_unset_reference(tmp_path):
    files = write_debs(
        tmp_path, comments=[f"{at(1)}|2|6|hi|Bo Li|-1|1", f"{at(1)}|3|6|re|Bo Li|2|"]
    )
    first, second = read_stream(files)[0]
    assert (first.replied, first.post_id, second.replied, second.post_id) == (None, 1, 2, None)


BAD = [
    ("posts", f"{at(1)}|1|5|hello", "expected 5 |-separated fields"),
    ("posts", f"{at(1)}|x|5|hello|Ann", "post_id is not a non-negative integer: 'x'"),
    ("posts", "2010-02-01|1|5|hello|Ann", "not a timestamp"),
    ("comments", f"{at(1)}|2|6|hi|Bo||", "exactly one of comment_replied and post_commented"),
    ("comments", f"{at(1)}|2|6|hi|Bo|4|1", "exactly one of comment_replied and post_commented"),
    ("likes", f"{at(1)}|6|-2", "comment_id is not a non-negative integer"),
    ("friendships", f"{at(1)}|6|٣", "user_id_2 is not a non-negative integer"),
]


@pytest.mark.parametrize("kind,line,reason", BAD)
def test_a_bad_line_names_file_line_reason_and_text(tmp_path, kind, line, reason):
    good = {"posts": f"{at(0)}|9|5|first|Ann", "comments": f"{at(0)}|8|6|x|Bo||9",
            "likes": f"{at(0)}|6|8", "friendships": f"{at(0)}|6|7"}  # fmt: skip
    files = write_debs(tmp_path, **{kind: [good[kind], line, good[kind].replace(at(0), at(2))]})
    events = []
    with pytest.raises(cr.MalformedRecord) as caught:
        for e in read_stream(files.only(kind))[0]:
            events.append(e)
    err = caught.value
    assert (err.source, err.line, err.text) == (str(tmp_path / f"{kind}.dat"), 2, line)
    assert reason in err.reason
    assert len(events) == 1  # everything before it, nothing after


def test_time_going_back_and_undecodable_bytes_are_bad_lines(tmp_path):
    files = write_debs(
        tmp_path, posts=[f"{at(2)}|1|5|a|Ann", f"{at(1)}|2|5|b|Ann", f"{at(3)}|3|5|c|Ann"]
    )
    (tmp_path / "likes.dat").write_bytes(f"{at(1)}|6|8\n".encode() + b"\xff\xfe|1|2\n")
    rejects = tmp_path / "rejects.tsv"
    events, stats = read_stream(files.only("posts", "likes"), "skip", rejects)
    got = list(events)
    assert [type(e) for e in got] == [Like, Post, Post] and stats.rejected == 2
    lines = rejects.read_text().splitlines()
    assert lines[0].startswith(f"{tmp_path / 'likes.dat'}\t2\tnot UTF-8 text\t")
    assert lines[1] == (
        f"{tmp_path / 'posts.dat'}\t2\ttime goes back: {at(1)} is before the previous "
        f"line's time\t{at(1)}|2|5|b|Ann"
    )


def test_missing_file_is_refused_at_once(tmp_path):
    with pytest.raises(FileNotFoundError, match="posts file not found"):
        read_stream(DebsFiles(posts=tmp_path / "nope.dat"))


def test_generator_is_seeded_and_sorted(tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    generate(a, events=1500, seed=3, days=4)
    generate(b, events=1500, seed=3, days=4)
    generate(c, events=1500, seed=4, days=4)
    for kind in ("posts", "comments", "likes", "friendships"):
        assert (a / f"{kind}.dat").read_bytes() == (b / f"{kind}.dat").read_bytes()
    assert (a / "likes.dat").read_bytes() != (c / "likes.dat").read_bytes()
    events, stats = read_stream(DebsFiles.in_dir(a))
    times = [e.ts for e in events]
    assert times == sorted(times) and stats.total == 1500 and stats.rejected == 0
    assert len(times) - len(set(times)) > 50  # equal times across and within files


def _as_rows(table):
    """The row reader's fields of each event of a columns table."""
    rows = []
    for r in table.to_pylist():
        ref = [None if v == -1 else v for v in (r["c"], r["d"])]
        rows.append(
            {
                0: (r["ts"], r["a"], r["b"], r["text"], r["name"]),
                1: (r["ts"], r["a"], r["b"], r["text"], r["name"], *ref),
                2: (r["ts"], r["a"], r["b"]),
                3: (r["ts"], r["a"], r["b"]),
            }[r["kind"]]
        )
    return rows


def test_columns_equal_the_row_reader(tmp_path):
    generate(tmp_path, events=4000, seed=9, days=6)
    (tmp_path / "likes.dat").write_bytes(
        (tmp_path / "likes.dat").read_bytes().replace(b"\n", b"\r\n", 3) + b"\n  \n"
    )  # CRLF lines and a blank line are read alike
    files = DebsFiles.in_dir(tmp_path)
    read = read_columns(files)
    events, stats = read_stream(files)
    assert _as_rows(read.table) == [tuple(e) for e in events]
    assert read.table.column("seq").to_pylist() == list(range(1, 4001))
    assert read.stats == stats and read.error is None


@pytest.mark.parametrize("kind,line,reason", BAD)
def test_columns_name_a_bad_line_as_the_row_reader_does(tmp_path, kind, line, reason):
    good = {"posts": f"{at(0)}|9|5|first|Ann", "comments": f"{at(0)}|8|6|x|Bo||9",
            "likes": f"{at(0)}|6|8", "friendships": f"{at(0)}|6|7"}  # fmt: skip
    lines = {k: [v, v.replace(at(0), at(3))] for k, v in good.items()}
    lines[kind] = [good[kind], line, good[kind].replace(at(0), at(2))]
    files = write_debs(tmp_path, **lines)
    read = read_columns(files)
    yielded = []
    with pytest.raises(cr.MalformedRecord) as caught:
        for e in read_stream(files)[0]:
            yielded.append(tuple(e))
    assert _as_rows(read.table) == yielded  # the same events before the error
    assert read.error.args == caught.value.args and reason in read.error.reason
    skipped = read_columns(files, "skip", tmp_path / "rejects.tsv")
    assert skipped.stats.rejected == 1 and skipped.table.num_rows == 8
    where, line = (tmp_path / "rejects.tsv").read_text().split("\t")[:2]
    assert (where, line) == (str(getattr(files, kind)), "2")


def test_columns_refuse_ids_beyond_63_bits(tmp_path):
    files = write_debs(tmp_path, likes=[f"{at(0)}|{'9' * 19}|1"])
    read = read_columns(files.only("likes"))
    assert read.table.num_rows == 0
    assert read.error.reason == f"user_id is too large for a 63-bit integer: '{'9' * 19}'"
