"""Shared fixtures: the real data sets and their oracles (Ray and Spark: ../conftest.py)."""

from __future__ import annotations

import pytest

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
