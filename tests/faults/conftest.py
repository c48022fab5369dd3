"""Fixtures of the fault tests: real small disks (tmpfs), skipped with the reason where
this machine does not allow mounting."""

from __future__ import annotations

import pytest

import chronoray as cr
from chronoray.chaos import DiskTroubleUnavailable, small_disk


@pytest.fixture
def disk(tmp_path):
    """A 48 MB tmpfs mounted for the test (root only)."""
    try:
        with small_disk(tmp_path / "disk", size_mb=48) as mount_point:
            yield mount_point
    except DiskTroubleUnavailable as exc:
        pytest.skip(f"no small disk on this machine: {exc}")


@pytest.fixture(scope="package")
def college_updates(college):
    """The first 12,000 lines of CollegeMsg as updates, in time order."""
    rows = sorted((ts, src, dst) for (src, dst), events in college.items() for ts, _ in events)
    return [cr.Update.add_edge(src, dst, ts) for ts, src, dst in rows[:12000]]
