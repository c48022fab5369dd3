"""Shared fixtures: the real data sets and their oracles, one Ray instance per session."""

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


@pytest.fixture(scope="session")
def ray_session():
    """One small local Ray instance for every Ray test of the session, shut down at the end."""
    import ray

    ray.init(
        num_cpus=2,
        object_store_memory=128 * 1024 * 1024,
        include_dashboard=False,
        namespace="chronoray",
        log_to_driver=False,
    )
    yield ray
    ray.shutdown()
