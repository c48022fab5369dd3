"""The Ray runtime end to end: real shard actors, real RocksDB logs, real data."""

from __future__ import annotations

import subprocess
import sys

import pytest

import chronoray as cr
from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.testing import kill_shard, pair_counts

pytestmark = [pytest.mark.ray]


def _counts(graph: cr.GraphCluster) -> dict[tuple[int, int], int]:
    return {(s, d): p["count"] for s, d, p in graph.edges()}


@pytest.mark.parametrize("shards", [2, 4])
def test_collegemsg_on_ray(ray_session, tmp_path, college, shards):
    with cr.GraphCluster(num_shards=shards, log_dir=str(tmp_path / "g")) as g:
        report = g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        assert report.updates == 59835
        stats = g.stats()
        assert (stats.vertices, stats.edges) == (1899, 20296)
        assert len(stats.shards) == shards
        assert _counts(g) == dict(pair_counts(college))
        assert g.vertex(1)["state"]["out_degree"] == len(g.out_edges(1))
        with pytest.raises(cr.VertexNotFound, match="vertex 999999 not found"):
            g.vertex(999999)
        # ingesting the same source again is a no-op: every (source, offset) was applied
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        assert _counts(g) == dict(pair_counts(college))


def test_iterable_source_gives_the_same_graph(ray_session, tmp_path, college):
    rows = sorted((ts, src, dst) for (src, dst), events in college.items() for ts, _ in events)
    updates = [cr.Update.add_edge(src, dst, ts) for ts, src, dst in rows]
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        g.ingest(updates, name="college-list")
        assert (g.stats().vertices, g.stats().edges) == (1899, 20296)
        assert _counts(g) == dict(pair_counts(college))
        g.ingest(updates, name="college-list")  # same name: already applied
        assert _counts(g) == dict(pair_counts(college))
        later = [cr.Update.add_edge(u.vertex, u.dst, u.ts + 10**8) for u in updates[:10]]
        g.ingest(later)  # unnamed: a new source, applied again
        assert sum(_counts(g).values()) == 59835 + 10


def test_bitcoin_on_ray_then_reopen(ray_session, tmp_path, bitcoin):
    log_dir = tmp_path / "btc"
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir)) as g:
        g.ingest(cr.BitcoinCsvSource(bitcoinotc_path()))
        assert (g.stats().vertices, g.stats().edges) == (5881, 35592)
    with cr.GraphCluster.open(log_dir) as g:  # recovery path: rebuilt from the logs
        assert (g.stats().vertices, g.stats().edges) == (5881, 35592)
        ratings = {(s, d): (p["weight"], p["first_ts"]) for s, d, p in g.edges()}
        assert ratings == {pair: (w, ts) for pair, [(ts, w)] in bitcoin.items()}
    with pytest.raises(ValueError, match="holds a graph of 2 shards"):
        cr.GraphCluster(num_shards=4, log_dir=str(log_dir))


def test_killed_shards_under_load_lose_nothing(ray_session, tmp_path, college):
    killed: list[int] = []

    def chaos(batches: int) -> None:
        if batches in (6, 21):
            killed.append(kill_shard(g, len(killed) % 2))

    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g"), batch_size=1000) as g:
        report = g.ingest(cr.SnapEdgeSource(collegemsg_path()), on_batch=chaos, in_driver=True)
        assert len(killed) == 2
        stats = g.stats()
        assert all(s.restarted for s in stats.shards)
        assert report.resent_batches >= 1
        assert (stats.vertices, stats.edges) == (1899, 20296)
        assert _counts(g) == dict(pair_counts(college))  # nothing lost, nothing doubled
        degrees = g.degrees()
        assert sum(o for o, _ in degrees.values()) == sum(i for _, i in degrees.values()) == 20296


def test_malformed_record_stops_cleanly(ray_session, tmp_path, college):
    lines = collegemsg_path().read_text().splitlines()
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines[:1000] + ["17 oops 1082040961"] + lines[1000:2000]) + "\n")
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        with pytest.raises(cr.MalformedRecord) as info:
            g.ingest(cr.SnapEdgeSource(bad))
        assert (str(info.value.source).endswith("bad.txt"), info.value.line) == (True, 1001)
        assert info.value.text == "17 oops 1082040961"
        expected: dict[tuple[int, int], int] = {}
        for line in lines[:1000]:
            src, dst, _ = line.split()
            expected[(int(src), int(dst))] = expected.get((int(src), int(dst)), 0) + 1
        assert _counts(g) == expected  # everything before, nothing after
    rejects = tmp_path / "rejects.tsv"
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g2")) as g:
        report = g.ingest(cr.SnapEdgeSource(bad), on_error="skip", rejects=rejects)
        assert (report.updates, report.rejected) == (2000, 1)
        assert "17 oops 1082040961" in rejects.read_text()


def test_logs_are_plain_rocksdb_and_locked(ray_session, tmp_path):
    log_dir = tmp_path / "g"
    updates = [cr.Update.add_edge(i, i + 1, i) for i in range(1, 500)]
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir)) as g:
        g.ingest(updates)
        probe = (
            "import sys\nfrom shards.logstore import RocksLogStore, LogLockedError\n"
            "try:\n    RocksLogStore(sys.argv[1])\nexcept LogLockedError:\n    sys.exit(3)\n"
        )
        locked = subprocess.run([sys.executable, "-c", probe, str(log_dir / "shard-0")])
        assert locked.returncode == 3  # a second writer is refused while the shard runs
    reader = (
        "import sys, pickle, zlib\n"
        "from rocksdict import Rdict, Options, AccessType\n"
        "def load(v):\n"
        "    assert zlib.crc32(v[:-4]) == int.from_bytes(v[-4:], 'little')\n"
        "    return pickle.loads(v[:-4])\n"
        "opts = Options(raw_mode=True)\n"
        "cfs = ('commands', 'events', 'clocks', 'checkpoints', 'meta')\n"
        "db = Rdict(sys.argv[1], opts, column_families={n: Options(raw_mode=True) for n in cfs},"
        " access_type=AccessType.read_only())\n"
        "assert load(db.get_column_family('meta')[b'manifest'])['format'] == 6\n"
        "events = db.get_column_family('events')\n"
        "keys = [int.from_bytes(k, 'big') for k in events.keys()]\n"
        "blocks = [load(events[k.to_bytes(8, 'big')]) for k in keys]\n"
        "assert keys == sorted(keys), keys[:5]\n"
        "assert [b['first'] for b in blocks] == [1] + [k + 1 for k in keys[:-1]]\n"
        "def size(b):  # entries logged as columns (format 5) are counted in their spans\n"
        "    return len(b['vertex']) + sum(c for _, c in b.get('temporal', ([],))[0])\n"
        "assert all(b['first'] + size(b) - 1 == k for b, k in zip(blocks, keys))\n"
        "print(keys[-1], blocks[0]['vertex'][0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", reader, str(log_dir / "shard-0")],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[0]) > 0


def test_cli_ingest_stats_vertex_inspect(ray_session, tmp_path):
    from click.testing import CliRunner

    from chronoray.cli import main

    runner = CliRunner()
    log_dir = str(tmp_path / "cli")
    result = runner.invoke(
        main,
        [
            "ingest",
            str(bitcoinotc_path()),
            "--format",
            "bitcoin-csv",
            "--shards",
            "2",
            "--log-dir",
            log_dir,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "35,592" in result.output
    result = runner.invoke(main, ["stats", "--log-dir", log_dir, "--json"])
    assert result.exit_code == 0, result.output
    import json

    stats = json.loads(result.stdout)
    assert (stats["vertices"], stats["edges"]) == (5881, 35592)
    result = runner.invoke(main, ["vertex", "1", "--log-dir", log_dir, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["type"] == "TemporalVertex"
    result = runner.invoke(main, ["vertex", "123456789", "--log-dir", log_dir])
    assert result.exit_code == 1
    result = runner.invoke(
        main,
        [
            "inspect-log",
            "--log-dir",
            log_dir,
            "--shard",
            "1",
            "--log",
            "commands",
            "--json",
            "--limit",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["wc"] for r in rows] == [1, 2, 3]


def test_cli_bad_input_names_file_line_and_text(ray_session, tmp_path):
    from click.testing import CliRunner

    from chronoray.cli import main

    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,5,1289241911.5\n2,3,11,1289241912.5\n")
    result = CliRunner().invoke(
        main, ["ingest", str(bad), "--format", "bitcoin-csv", "--log-dir", str(tmp_path / "g")]
    )
    assert result.exit_code == 1
    assert "bad.csv:2" in result.output and "2,3,11,1289241912.5" in result.output


@pytest.mark.slow
def test_backpressure_with_tiny_outboxes_still_completes(ray_session, tmp_path, college):
    """Shards refuse source batches while their outboxes are full; nothing deadlocks."""
    updates = list(cr.SnapEdgeSource(collegemsg_path()).read())[:12000]
    with cr.GraphCluster(
        num_shards=2, log_dir=str(tmp_path / "g"), max_pending=50, batch_size=500
    ) as g:
        g.ingest(updates, name="first-12000")
        expected: dict[tuple[int, int], int] = {}
        for u in updates:
            expected[(u.vertex, u.dst)] = expected.get((u.vertex, u.dst), 0) + 1
        assert _counts(g) == expected
