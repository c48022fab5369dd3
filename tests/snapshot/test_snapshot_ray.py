"""Snapshots on Ray: per-shard tasks over read-only RocksDB handles, Arrow in the object
store, views, snapshots taken during ingestion, causality, retrospection, CLI."""

from __future__ import annotations

import json
import random

import pyarrow.parquet as pq
import pytest

import chronoray as cr
from chronoray.datasets import collegemsg_path
from chronoray.testing import TokenVertex, causality_violations, pair_counts_between

pytestmark = [pytest.mark.ray]


def _snap_counts(snap, column="count"):
    table = snap.edges()
    if table.num_rows == 0:
        return {}
    return dict(
        zip(
            zip(table["src"].to_pylist(), table["dst"].to_pylist(), strict=True),
            table[column].to_pylist(),
            strict=True,
        )
    )


def test_snapshots_at_times_windows_and_views(ray_session, tmp_path, college):
    times = sorted({ts for ev in college.values() for ts, _ in ev})
    with cr.GraphCluster(
        num_shards=2, log_dir=str(tmp_path / "g"), shard_checkpoint_interval=20_000
    ) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        for t in (
            times[0] - 1,
            times[0],
            times[5000],
            (times[30000] + times[30001]) / 2,
            times[-1],
        ):
            snap = g.snapshot(at=t)
            assert _snap_counts(snap) == pair_counts_between(college, t), t
            assert snap.meta.kind == "time" and snap.meta.edges == len(
                pair_counts_between(college, t)
            )
        t0, t1 = times[10000], times[20000]
        window = g.snapshot(window=(t0, t1))
        assert _snap_counts(window, "window_count") == pair_counts_between(college, t1, t0)
        now = g.snapshot()
        assert now.meta.edges == 20296 and now.meta.vertices == 1899
        assert sum(now.meta.checkpoints) > 0  # rebuilt from shard checkpoints
        assert g.snapshot(clock=now.meta.cut).meta.edges == 20296
        vertices, edges = now.to_pandas()
        assert len(vertices) == 1899 and edges["count"].sum() == 59835
        graph = now.to_networkx()
        assert graph.number_of_edges() == 20296 and graph.nodes[9]["out_degree"] == 237
        ds_vertices, ds_edges = now.to_ray_dataset()
        assert ds_edges.count() == 20296
        paths = now.save_parquet(tmp_path / "out")
        assert pq.read_table(paths[1]).num_rows == 20296
        # an empty cut (before the first event) has the columns and types of a full one,
        # so snapshots of several times read together
        empty = g.snapshot(at=times[0] - 1).save_parquet(tmp_path / "empty")
        for full, none in zip(paths, empty, strict=True):
            assert pq.read_table(none).num_rows == 0
            assert pq.read_table(none).schema == pq.read_table(full).schema
        both = pq.ParquetDataset([paths[1], empty[1]]).read()
        assert both.num_rows == 20296 and both.schema.field("count").type == "int64"


def test_snapshot_during_ingestion_equals_after(ray_session, tmp_path, college):
    lines = collegemsg_path().read_text().splitlines()
    t = float(lines[15000].split()[2])
    during: list = []

    late = float(lines[-1].split()[2])
    refused: list = []

    def take(batches: int) -> None:
        if batches == 20 and not during:  # about 40,000 lines read by now
            during.append(g.snapshot(at=t))
            with pytest.raises(
                cr.SnapshotNotReady, match="source collegemsg.txt holds it back, having read up to"
            ) as refusal:
                g.snapshot(at=late, timeout=1)  # the source has not read that far yet
            refused.append(refusal)

    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g"), batch_size=2000) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()), on_batch=take, in_driver=True)
        assert during and refused, "the callback took no snapshot"
        after = g.snapshot(at=t)
        assert _snap_counts(during[0]) == _snap_counts(after) == pair_counts_between(college, t)


def test_cuts_with_cross_shard_messages_are_consistent(ray_session, tmp_path):
    # the file's first half: a user class runs per message (the whole file: in process)
    prefix = tmp_path / "college-half.txt"
    prefix.write_text("".join(collegemsg_path().read_text().splitlines(keepends=True)[:30_000]))
    with cr.GraphCluster(
        num_shards=3, log_dir=str(tmp_path / "g"), vertex_types=[TokenVertex], batch_size=500
    ) as g:
        g.ingest(cr.SnapEdgeSource(prefix))
        last = g.snapshot().meta.cut
        rng = random.Random(3)
        for _ in range(4):
            clock = [rng.randrange(wc // 2, wc + 1) for wc in last]
            snap = g.snapshot(clock=clock)
            assert all(c <= r for c, r in zip(snap.meta.cut, clock, strict=True))
            assert causality_violations(snap.vertices().to_pylist()) == []
        for t in (1084000000.0, 1085000000.0):
            assert causality_violations(g.snapshot(at=t).vertices().to_pylist()) == []


def test_retrospection_and_cli(ray_session, tmp_path, college):
    from click.testing import CliRunner

    from chronoray.cli import main

    log_dir = tmp_path / "g"
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir)) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        sent = sorted(ts for (s, _), ev in college.items() if s == 9 for ts, _ in ev)
        t = sent[100]
        assert g.vertex_state(9, at=t)["state"]["sent"] == 101
        with pytest.raises(cr.VertexNotFound):
            g.vertex_state(9, at=sent[0] - 1)
        history = g.history(9, sent[100], sent[110])
        assert [h["state"]["sent"] for h in history if h["time"] >= sent[100]][-1] == 111
        snap = g.snapshot()
        assert g.vertex_state(9, clock=snap.meta.cut)["state"]["sent"] == len(sent)
    runner = CliRunner()
    out = tmp_path / "snap"
    result = runner.invoke(
        main, ["snapshot", "--log-dir", str(log_dir), "--at", str(t), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    edges = pq.read_table(out / "edges.parquet")
    assert {"src", "dst", "count", "first_ts", "last_ts"} <= set(edges.column_names)
    assert edges.num_rows == len(pair_counts_between(college, t))
    result = runner.invoke(
        main, ["history", "9", "--log-dir", str(log_dir), "--to", str(t), "--json"]
    )
    assert result.exit_code == 0, result.output
    states = [json.loads(line) for line in result.stdout.splitlines()]
    assert states[-1]["state"]["sent"] == 101


def test_shards_build_their_parts_and_tasks_stand_in_for_a_shard_gone(
    ray_session, tmp_path, college
):
    """A running graph's shard actors build their own parts (no task); the same cut built
    by tasks is the same table; a shard actor that cannot answer leaves its part, and
    the schema read, to a task."""
    import ray

    from snapshot.snapshot import SnapshotMeta
    from snapshot.tasks import build_snapshot

    times = sorted({ts for ev in college.values() for ts, _ in ev})
    t = times[30000]
    with cr.GraphCluster(num_shards=2, log_dir=str(tmp_path / "g")) as g:
        g.ingest(cr.SnapEdgeSource(collegemsg_path()))
        graph = g._runtime  # its shard paths, nodes and actors
        paths = [graph.shard_log_path(k) for k in range(2)]
        nodes = graph.shard_node_ids()

        def built(shards):
            snap = build_snapshot(paths, nodes, SnapshotMeta("time", at=t), at=t, shards=shards)
            return snap.vertices().sort_by("id"), snap.edges().sort_by(
                [("src", "ascending"), ("dst", "ascending")]
            )

        by_shards = built(graph.shards)
        assert by_shards == built(None)
        assert _snap_counts(g.snapshot(at=t)) == pair_counts_between(college, t)

        @ray.remote(num_cpus=0)
        class Reader:
            """Reads a shard's log as a shard actor does, counting the calls."""

            def __init__(self, path):
                self.path, self.calls = path, 0

            def read_log(self, function, args, kwargs):
                from shards.worker import with_read_only_log

                self.calls += 1
                return with_read_only_log(self.path, function, args, kwargs)

            def count(self):
                return self.calls

        readers = [Reader.remote(path) for path in paths]
        assert built(readers) == by_shards
        assert ray.get([r.count.remote() for r in readers]) == [2, 2]  # schema and part
        ray.kill(readers[1], no_restart=True)
        assert built(readers) == by_shards
        assert ray.get(readers[0].count.remote()) == 4
