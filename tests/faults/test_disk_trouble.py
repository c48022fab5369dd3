"""Real disk trouble under real shards: a full disk (a small tmpfs filled to ENOSPC), a
shard's log directory read-only (a read-only bind mount), the log directory moved away or
removed under a running shard. Each is a clear error naming the shard and the path, and
once the fault is gone nothing acknowledged is lost and nothing is applied twice."""

from __future__ import annotations

import shutil

import pytest

import chronoray as cr
from chronoray.chaos import DiskTroubleUnavailable, fill_disk, read_only
from chronoray.testing import LocalRuntime
from shards.core import ShardFailed
from shards.logstore import LogError, RocksLogStore
from tests.faults.fault_helpers import edge_counts, expected_counts, wait_for


def _local(root, **options) -> LocalRuntime:
    return LocalRuntime(
        2, store_factory=lambda k: RocksLogStore(root / f"shard-{k}"), batch_size=500, **options
    )


def test_disk_full_in_process(disk, college_updates):
    rt = _local(disk / "g")
    rt.ingest(college_updates[:3000], "college")
    filler = fill_disk(disk / "filler")
    with pytest.raises(ShardFailed, match=r"shard \d: log write failed: .*/g/shard-\d.*No space"):
        rt.ingest(college_updates, "college")
    filler.unlink()
    for k in range(2):
        rt.crash(k)
    rt.ingest(college_updates, "college")
    assert edge_counts(rt) == expected_counts(college_updates)
    rt.close()


@pytest.mark.ray
@pytest.mark.long  # ~35 s; the in-process disk-full test above stays in the default suite
def test_disk_full_on_ray_waits_then_recovers(ray_session, disk, college_updates):
    with cr.GraphCluster(num_shards=2, log_dir=str(disk / "g"), batch_size=500) as g:
        g.ingest(college_updates[:3000], name="college")
        filler = fill_disk(disk / "filler")
        job = g.ingest(college_updates, name="college", wait=False)
        # the shard that cannot write restarts, cannot reopen its log on the full disk,
        # and tries again until there is room: the source says it waits for it
        wait_for(lambda: "unavailable" in str(job.progress().get("waiting")), "a shard down")
        filler.unlink()
        report = job.wait(timeout=300)
        g.wait_idle()
        assert report.skipped == 3000 and report.resent_batches >= 1
        assert edge_counts(g) == expected_counts(college_updates)


def test_read_only_log_dir_is_refused_naming_it_then_opens(disk, college_updates):
    rt = _local(disk / "g")
    rt.ingest(college_updates[:5000], "college")
    rt.close()
    try:
        with read_only(disk / "g" / "shard-1"):
            with pytest.raises(LogError, match=r"cannot open log store at .*/g/shard-1.*Read-only"):
                _local(disk / "g")
    except DiskTroubleUnavailable as exc:
        pytest.skip(f"no read-only mount here: {exc}")
    rt = _local(disk / "g")
    rt.ingest(college_updates[:5000], "college")  # everything applied before: skipped
    assert edge_counts(rt) == expected_counts(college_updates[:5000])
    rt.close()


@pytest.mark.ray
def test_read_only_shard_log_on_ray_names_shard_and_path(ray_session, disk, college_updates):
    log_dir = disk / "g"
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir)) as g:
        g.ingest(college_updates[:5000], name="college")
    with read_only(log_dir / "shard-0"):
        with pytest.raises(Exception, match=r"shard-0.*Read-only file system") as info:
            cr.GraphCluster.open(log_dir)
        assert "cannot open log store at" in str(info.value)
    with cr.GraphCluster.open(log_dir) as g:
        assert edge_counts(g) == expected_counts(college_updates[:5000])


def test_log_dir_removed_under_a_store_refuses_writes(tmp_path):
    from shards.logstore import LogBatch, LogName

    store = RocksLogStore(tmp_path / "shard-0")
    batch = LogBatch()
    batch.add(LogName.EVENTS, 1, b"x")
    store.append(batch)
    shutil.rmtree(tmp_path / "shard-0")
    batch = LogBatch()
    batch.add(LogName.EVENTS, 2, b"y")
    with pytest.raises(LogError, match=r"log directory .*/shard-0 is gone"):
        store.append(batch)
    store.close()
    with pytest.raises(LogError, match=r"no log store at .*/shard-0"):
        RocksLogStore(tmp_path / "shard-0", create=False)


@pytest.mark.ray
def test_log_dir_moved_away_under_a_running_shard(ray_session, tmp_path, college_updates):
    log_dir = tmp_path / "g"
    with cr.GraphCluster(num_shards=2, log_dir=str(log_dir), batch_size=500) as g:
        g.ingest(college_updates[:3000], name="college")
        (log_dir / "shard-1").rename(tmp_path / "away")
        job = g.ingest(college_updates[:12_000], name="college", wait=False)
        # shard 1 refuses to write into a directory nobody can find, restarts, and never
        # starts over from an empty log: it waits for its directory to come back
        wait_for(lambda: "unavailable" in str(job.progress().get("waiting")), "shard 1 down")
        assert not (log_dir / "shard-1").exists()
        (tmp_path / "away").rename(log_dir / "shard-1")
        report = job.wait(timeout=300)
        g.wait_idle()
        assert report.skipped == 3000
        assert edge_counts(g) == expected_counts(college_updates[:12_000])
