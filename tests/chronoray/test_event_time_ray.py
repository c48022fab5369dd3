"""Event time on Ray, as a user meets it: an unsorted file refused by ``chronoray ingest``
(naming file, line, time and the time it went back from) and ingested with ``--sort``;
bounded disorder with ``--allowed-lateness`` (the rejects file holds exactly the updates a
plain recomputation says are late); two sources at once merged by event time; an idle
source that holds the watermark back until its timeout; ``snapshot(at=T)`` refused naming
the source that holds ``T`` back. Time cuts are compared with the file at many ``T``:
vertex sets, in- and out-degrees, edges with their counts, no dangling edge."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import chronoray as cr
from chronoray.cli import main
from chronoray.datasets import bitcoinotc_path, collegemsg_path

pytestmark = [pytest.mark.ray]

Row = tuple[int, int, float]


def _rows(path: Path, sep: str | None = None, time_field: int = 2) -> list[Row]:
    rows = []
    for line in path.read_text().splitlines():
        f = line.split(sep)
        rows.append((int(f[0]), int(f[1]), float(f[time_field])))
    return rows


def _write(path: Path, rows: list[Row]) -> Path:
    path.write_text("".join(f"{s} {d} {int(t)}\n" for s, d, t in rows))
    return path


def _times(rows: list[Row], n: int) -> list[float]:
    ts = sorted(t for _, _, t in rows)
    return [ts[(len(ts) - 1) * i // (n - 1)] for i in range(n)]


def _check_cuts(graph: cr.GraphCluster, rows: list[Row], times: list[float]) -> None:
    for at in times:
        vertices, edges = graph.snapshot(at=at).to_pandas()
        want: set[int] = set()
        counts: dict[tuple[int, int], int] = {}
        for s, d, t in rows:
            if t <= at:
                want.update((s, d))
                counts[(s, d)] = counts.get((s, d), 0) + 1
        assert set(vertices["id"]) == want, at
        pairs = zip(edges["src"], edges["dst"], strict=True)
        assert dict(zip(pairs, edges["count"], strict=True)) == counts, at
        assert set(edges["dst"]) <= want and set(edges["src"]) <= want, at
        out_deg = {v: 0 for v in want}
        in_deg = dict(out_deg)
        for s, d in counts:
            out_deg[s] += 1
            in_deg[d] += 1
        degrees = zip(vertices["out_degree"], vertices["in_degree"], strict=True)
        got = dict(zip(vertices["id"], degrees, strict=True))
        assert got == {v: (out_deg[v], in_deg[v]) for v in want}, at


def _first_going_back(rows: list[Row]) -> tuple[int, float, float]:
    latest = rows[0][2]
    for line, (_, _, t) in enumerate(rows, start=1):
        if t < latest:
            return line, t, latest
        latest = t
    raise AssertionError("in order")


def test_an_unsorted_file_is_refused_then_ingested_sorted(ray_session, tmp_path):
    rows = _rows(collegemsg_path())[:20000]  # the whole file sorted: the Bitcoin OTC test
    shuffled = rows[:]
    random.Random(13).shuffle(shuffled)
    path = _write(tmp_path / "college-shuffled.txt", shuffled)
    log_dir = tmp_path / "g"
    runner = CliRunner()
    refused = runner.invoke(main, ["ingest", str(path), "--log-dir", str(log_dir)])
    assert refused.exit_code == 1
    line, ts, previous = _first_going_back(shuffled)
    assert f"error: {path}:{line}: time {int(ts)} goes back from {int(previous)};" in refused.output
    assert "--sort" in refused.output and "nothing of this file was ingested" in refused.output
    done = runner.invoke(main, ["ingest", str(path), "--log-dir", str(log_dir), "--sort"])
    assert done.exit_code == 0, done.output
    assert "20,000 updates read" in done.output
    pairs = {(s, d) for s, d, _ in rows}
    with cr.GraphCluster.open(log_dir, runtime="local") as g:  # the logs Ray wrote, read here
        vertices = {v for pair in pairs for v in pair}
        assert (g.stats().vertices, g.stats().edges) == (len(vertices), len(pairs))
        _check_cuts(g, rows, [1083333333.0, 1090000000.0, *_times(rows, 6)])


@pytest.mark.parametrize("shards", [4])  # 1 to 4 shards in process: test_event_time.py
def test_shuffled_bitcoin_sorted_gives_exact_cuts(ray_session, tmp_path, shards):
    lines = bitcoinotc_path().read_text().splitlines(keepends=True)
    random.Random(shards).shuffle(lines)
    path = tmp_path / "btc-shuffled.csv"
    path.write_text("".join(lines))
    rows = _rows(bitcoinotc_path(), ",", 3)
    with cr.GraphCluster(num_shards=shards, log_dir=str(tmp_path / "g")) as g:
        g.ingest(cr.BitcoinCsvSource(path), sort=True)
        _check_cuts(g, rows, _times(rows, 5))


def _displaced(rows: list[Row], bound: float, seed: int) -> list[Row]:
    rng = random.Random(seed)
    return [
        rows[i] for i in sorted(range(len(rows)), key=lambda i: rows[i][2] + rng.uniform(0, bound))
    ]


def test_bounded_disorder_with_and_without_enough_lateness(ray_session, tmp_path):
    rows = _rows(collegemsg_path())[:10000]
    displaced = _displaced(rows, bound=7200, seed=3)
    path = _write(tmp_path / "displaced.txt", displaced)
    runner = CliRunner()
    exact = tmp_path / "exact"
    result = runner.invoke(
        main, ["ingest", str(path), "--log-dir", str(exact), "--allowed-lateness", "7200"]
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # the console wraps long lines
    assert "updates out of order" in said and "late: 0 rejected" in said
    with cr.GraphCluster.open(exact, runtime="local") as g:
        _check_cuts(g, rows, _times(rows, 5))
    lateness, latest, late_lines = 1800, float("-inf"), []
    for line, (_, _, t) in enumerate(displaced, start=1):
        if t < latest - lateness:
            late_lines.append(line)
        latest = max(latest, t)
    assert late_lines
    short = tmp_path / "short"
    rejects = tmp_path / "late.tsv"
    result = runner.invoke(
        main,
        ["ingest", str(path), "--log-dir", str(short), "--allowed-lateness", "1800"]
        + ["--rejects", str(rejects)],
    )
    assert result.exit_code == 0, result.output
    written = [line.split("\t") for line in rejects.read_text().splitlines()]
    assert [int(w[1]) for w in written] == late_lines
    assert all(w[0] == str(path) and w[2].startswith("late by ") for w in written)
    late = set(late_lines)
    accepted = [row for i, row in enumerate(displaced, start=1) if i not in late]
    with cr.GraphCluster.open(short, runtime="local") as g:
        _check_cuts(g, accepted, _times(accepted, 4))
        counters = g.stats().sources["displaced.txt"]
        assert counters["late_rejected"] == len(late_lines) and counters["max_lateness"] > 1800
    stats = runner.invoke(main, ["stats", "--log-dir", str(short), "--json"])
    assert f'"late_rejected": {len(late_lines)}' in stats.output


def test_two_sources_interleaving_the_halves_of_a_file(ray_session, tmp_path):
    rows = _rows(collegemsg_path())[:10000]  # the whole file in process: test_event_time.py
    evens = _write(tmp_path / "evens.txt", rows[0::2])
    odds = _write(tmp_path / "odds.txt", rows[1::2])
    with cr.GraphCluster(num_shards=3, log_dir=str(tmp_path / "g"), batch_size=500) as g:
        reports = g.ingest_many([cr.SnapEdgeSource(evens), cr.SnapEdgeSource(odds)])
        assert sorted(r.updates for r in reports) == [len(rows) // 2, len(rows) - len(rows) // 2]
        _check_cuts(g, rows, [1083333333.0, *_times(rows, 5)])


def _blocking(rows: list[Row], first: int, release: threading.Event) -> Iterator[cr.Update]:
    """``first`` updates, then nothing until ``release`` is set, then the rest."""
    for i, (s, d, t) in enumerate(rows):
        if i == first:
            release.wait()
        yield cr.Update.add_edge(s, d, t)


def _read_past(progress: dict | None, at: float) -> bool:
    """Whether a source's progress says it read past ``at``; ``None``: it ended (it was
    listed with the others, so it was opened). An entry without a watermark is still
    opening (it has read nothing)."""
    return progress is None or progress.get("watermark", -math.inf) > at


def _wait_for(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("idle_timeout", [3600.0, 1.0], ids=["never idle", "times out"])
def test_an_idle_source_holds_the_watermark_back_until_its_timeout(
    ray_session, tmp_path, idle_timeout
):
    rows = _rows(collegemsg_path())[:6000]
    busy = cr.IterableSource([cr.Update.add_edge(s, d, t) for s, d, t in rows[:4000]], "busy")
    release = threading.Event()
    slow_name = "slow"  # named: which one is slow is not guessed from a racy status
    slow = cr.IterableSource(_blocking(rows[4000:], 0, release), slow_name)  # reads nothing yet
    at = rows[3000][2]
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        feeding = threading.Thread(
            target=g.ingest_many,
            args=([busy, slow],),
            kwargs={"in_driver": True, "idle_timeout": idle_timeout},
        )
        feeding.start()
        try:
            _wait_for(lambda: slow_name in g.status().sources, "the slow source")
            if idle_timeout > 60:
                _wait_for(  # busy read past `at` (or ended): only the slow one holds it back
                    lambda: _read_past(g.status().sources.get("busy"), at), "the busy source"
                )
                with pytest.raises(cr.SnapshotNotReady, match=f"source {slow_name} holds it back"):
                    g.snapshot(at=at, timeout=5)
            else:
                _wait_for(
                    lambda: g.status().sources.get(slow_name, {}).get("watermark", -math.inf) > at,
                    "the idle timeout",
                )
                _check_cuts(g, rows[:4000], [at])
        finally:
            release.set()
            feeding.join()
        if idle_timeout > 60:
            _check_cuts(g, rows, [at, rows[-1][2]])
