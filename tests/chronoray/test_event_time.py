"""Event time, in process (``LocalRuntime``, no Ray): time cuts equal the file at many T
-- edges and per-pair counts, vertex sets, in- and out-degrees, no dangling edge -- on 1 to
4 shards, for files sorted outside memory, bounded disorder under an allowed lateness
(late updates exactly those a plain recomputation names, rejects file included), and
several sources merged by event time."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from pathlib import Path

import pytest

from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.sources import (
    BitcoinCsvSource,
    OutOfOrder,
    SnapEdgeSource,
    SortedSource,
    check_order,
)
from shards.local import LocalRuntime
from snapshot.reconstruct import rebuild_part
from vertex.records import Update

Row = tuple[int, int, float]  # src, dst, time


def _rows(path: Path, sep: str | None, time_field: int) -> list[Row]:
    """``(src, dst, time)`` of every line, parsed with nothing but ``split``."""
    rows = []
    for line in path.read_text().splitlines():
        f = line.split(sep)
        rows.append((int(f[0]), int(f[1]), float(f[time_field])))
    return rows


@pytest.fixture(scope="module")
def college_rows() -> list[Row]:
    return _rows(collegemsg_path(), None, 2)


@pytest.fixture(scope="module")
def bitcoin_rows() -> list[Row]:
    return _rows(bitcoinotc_path(), ",", 3)


def _shuffled(path: Path, out: Path, seed: int) -> Path:
    lines = path.read_text().splitlines(keepends=True)
    random.Random(seed).shuffle(lines)
    out.write_text("".join(lines))
    return out


def _times(rows: list[Row], n: int = 9) -> list[float]:
    """``n`` cut times spread over the stream (by rank), plus before the first."""
    ts = sorted(t for _, _, t in rows)
    return [ts[0] - 1] + [ts[(len(ts) - 1) * i // (n - 1)] for i in range(n)]


def _oracle(rows: Iterable[Row], at: float) -> tuple[set[int], dict[tuple[int, int], int]]:
    vertices: set[int] = set()
    counts: dict[tuple[int, int], int] = {}
    for src, dst, ts in rows:
        if ts <= at:
            vertices.update((src, dst))
            counts[(src, dst)] = counts.get((src, dst), 0) + 1
    return vertices, counts


def _check_cuts(rt: LocalRuntime, rows: list[Row], times: list[float]) -> None:
    """Every cut: the file's vertices, edges with counts, degrees; no dangling edge."""
    for at in times:
        vertices: dict[int, dict] = {}
        counts: dict[tuple[int, int], int] = {}
        for k, core in enumerate(rt.cores):
            for vid, record in rebuild_part(core.store, k, at=at).vertices.items():
                vertices[vid] = record.state
                for dst, props in record.out_edges.items():
                    counts[(vid, dst)] = props["count"]
        want_vertices, want_counts = _oracle(rows, at)
        assert set(vertices) == want_vertices, f"vertex set at {at}"
        assert counts == want_counts, f"edges at {at}"
        assert all(dst in vertices for _, dst in counts), f"dangling edge at {at}"
        out_deg = {v: 0 for v in want_vertices}
        in_deg = dict(out_deg)
        for src, dst in want_counts:
            out_deg[src] += 1
            in_deg[dst] += 1
        for v, state in vertices.items():
            assert (state["out_degree"], state["in_degree"]) == (out_deg[v], in_deg[v]), (v, at)


@pytest.mark.parametrize("shards", [1, 2, 3, 4])
def test_collegemsg_cuts_have_the_files_vertices_and_degrees(college_rows, shards):
    rt = LocalRuntime(shards, batch_size=700)
    rt.ingest(SnapEdgeSource(collegemsg_path()).read())
    _check_cuts(rt, college_rows, [1083333333.0, 1090000000.0, *_times(college_rows)])
    rt.close()


@pytest.mark.parametrize(
    ("dataset", "shards"), [("college", 1), ("college", 2), ("college", 4), ("bitcoin", 2)]
)
def test_shuffled_files_sorted_outside_memory_give_exact_cuts(
    dataset, shards, college_rows, bitcoin_rows, tmp_path
):
    if dataset == "college":
        path, cls, rows = collegemsg_path(), SnapEdgeSource, college_rows
    else:
        path, cls, rows = bitcoinotc_path(), BitcoinCsvSource, bitcoin_rows
    shuffled = cls(_shuffled(path, tmp_path / path.name, seed=shards))
    with pytest.raises(OutOfOrder):
        check_order(shuffled)
    rt = LocalRuntime(shards, batch_size=900)
    runs = SortedSource(shuffled, run_size=7_000, tmpdir=str(tmp_path))  # several runs
    rt.ingest(runs.read(), offsets_increase=False)
    _check_cuts(rt, rows, _times(rows, 7))
    rt.close()


def test_an_unsorted_file_is_refused_naming_line_time_and_the_time_it_went_back_from(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("1 2 100\n2 3 300\n# a comment\n3 1 200\n")
    with pytest.raises(OutOfOrder) as refused:
        check_order(SnapEdgeSource(path))
    assert str(refused.value).startswith(f"{path}:4: time 200 goes back from 300;")
    assert (refused.value.line, refused.value.ts, refused.value.previous) == (4, 200, 300)
    check_order(SnapEdgeSource(collegemsg_path()))  # in order: nothing to say


def _displaced(rows: list[Row], bound: float, seed: int) -> list[Row]:
    """The rows reordered so that each is displaced by less than ``bound`` seconds."""
    rng = random.Random(seed)
    keyed = sorted(range(len(rows)), key=lambda i: rows[i][2] + rng.uniform(0, bound))
    return [rows[i] for i in keyed]


def _late_by_recomputation(rows: list[Row], lateness: float) -> list[int]:
    """Positions (1-based) of the rows later than the watermark, recomputed plainly."""
    late, latest = [], -math.inf
    for i, (_, _, ts) in enumerate(rows, start=1):
        if ts < latest - lateness:
            late.append(i)
        latest = max(latest, ts)
    return late


@pytest.mark.parametrize("shards", [1, 3])
def test_bounded_disorder_within_the_allowed_lateness_is_exact(college_rows, shards):
    rows = _displaced(college_rows, bound=3600, seed=shards)
    assert _late_by_recomputation(rows, 0)  # the stream does go back in time
    rt = LocalRuntime(shards, batch_size=800)
    rt.ingest([Update.add_edge(s, d, t) for s, d, t in rows], allowed_lateness=3600)
    assert rt.feeds["iterable"].counters()["late_rejected"] == 0
    _check_cuts(rt, college_rows, _times(college_rows, 6))
    rt.close()


def test_updates_later_than_the_allowed_lateness_are_exactly_the_rejected_ones(college_rows):
    rows = _displaced(college_rows, bound=3600, seed=5)
    lateness = 600
    expected = _late_by_recomputation(rows, lateness)
    assert len(expected) > 100
    rejected: list[tuple[int, float]] = []
    rt = LocalRuntime(2, batch_size=800)
    rt.ingest(
        [Update.add_edge(s, d, t) for s, d, t in rows],
        allowed_lateness=lateness,
        on_late=lambda u, watermark: rejected.append((u.offset, watermark)),
    )
    assert [offset for offset, _ in rejected] == expected
    counters = rt.feeds["iterable"].counters()
    assert counters["late_rejected"] == len(expected)
    assert counters["max_lateness"] > lateness
    late = set(expected)
    accepted = [row for i, row in enumerate(rows, start=1) if i not in late]
    _check_cuts(rt, accepted, _times(accepted, 6))
    rt.close()


def test_late_updates_applied_count_from_the_watermark_on():
    updates = [Update.add_edge(1, 2, t) for t in (10, 20, 30)] + [Update.add_edge(3, 2, 12)]
    rt = LocalRuntime(2)
    rt.ingest(updates, allowed_lateness=5, late="apply")
    assert rt.feeds["iterable"].counters()["late_applied"] == 1
    edge = rt.vertex(3)["out_edges"][2]
    assert edge["first_ts"] == 12  # its own time, kept
    for at, has in ((24, False), (25, True)):  # in cuts from the watermark (30 - 5) on
        parts = [rebuild_part(c.store, k, at=at).vertices for k, c in enumerate(rt.cores)]
        assert any(3 in part for part in parts) is has
    rt.close()


@pytest.mark.parametrize(("shards", "chunk"), [(2, 1), (3, 250)])
def test_two_sources_interleaving_the_two_halves_of_a_file_are_merged_exactly(
    college_rows, shards, chunk
):
    evens = [Update.add_edge(s, d, t) for i, (s, d, t) in enumerate(college_rows) if i % 2 == 0]
    odds = [Update.add_edge(s, d, t) for i, (s, d, t) in enumerate(college_rows) if i % 2]
    rt = LocalRuntime(shards, batch_size=300)
    rt.ingest_many({"evens": evens, "odds": odds}, chunk=chunk)
    _check_cuts(rt, college_rows, _times(college_rows, 6))
    rt.ingest(odds, source="odds")  # the same source again: nothing is late, nothing new
    _check_cuts(rt, college_rows, _times(college_rows, 3))
    rt.close()


def test_a_source_after_others_cannot_go_back_before_what_they_applied():
    rt = LocalRuntime(2)
    rt.ingest([Update.add_edge(1, 2, t) for t in (10, 20, 30)], source="a")
    with pytest.raises(OutOfOrder, match="before 30, up to which the graph already holds"):
        rt.ingest([Update.add_edge(3, 4, 25)], source="b")
    rejected: list[int] = []
    rt.ingest(
        [Update.add_edge(3, 4, 25), Update.add_edge(3, 4, 35)],
        source="c",
        allowed_lateness=0,
        on_late=lambda u, w: rejected.append(u.offset),
    )
    assert rejected == [1] and rt.vertex(3)["out_edges"][4]["count"] == 1
    rt.close()


def test_a_removed_vertex_and_a_new_edge_of_it_agree_at_both_ends():
    updates = [
        Update.add_edge(1, 2, 1),
        Update.add_edge(3, 1, 2),
        Update.remove_vertex(1, 3),
        Update.add_edge(1, 2, 4),
        Update.add_edge(3, 1, 5),
    ]
    for shards in (1, 2, 3):
        rt = LocalRuntime(shards)
        rt.ingest(updates)
        assert rt.vertex(1)["out_edges"][2]["count"] == 1
        assert rt.vertex(2)["in_edges"] == {1: rt.vertex(1)["out_edges"][2]}
        assert rt.vertex(3)["out_edges"][1]["count"] == 1
        assert rt.vertex(1)["in_edges"] == {3: rt.vertex(3)["out_edges"][1]}
        rt.close()
