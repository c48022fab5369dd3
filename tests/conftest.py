"""Shared fixtures: the real data sets and their oracles (Ray and Spark: ../conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import shards.core
from chronoray.datasets import bitcoinotc_path, collegemsg_path
from chronoray.testing import EdgeOracle, edge_oracle


@pytest.fixture(scope="session")
def college() -> EdgeOracle:
    """CollegeMsg as (src, dst) -> [(ts, 0.0), ...], read independently of chronoray."""
    return edge_oracle(collegemsg_path(), "snap")


@pytest.fixture(scope="session")
def bitcoin() -> EdgeOracle:
    """Bitcoin OTC as (src, dst) -> [(ts, rating)], read independently of chronoray."""
    return edge_oracle(bitcoinotc_path(), "bitcoin-csv")


@pytest.fixture(scope="module")
def temporal_columns_at_once() -> Iterator[None]:
    """Column runs go through a shard's temporal columns from the first row (a shard
    otherwise makes them after ``shards.core.TEMPORAL_AFTER`` rows), for the tests that
    compare them with the row path."""
    saved = shards.core.TEMPORAL_AFTER
    shards.core.TEMPORAL_AFTER = 0
    yield
    shards.core.TEMPORAL_AFTER = saved
