"""Hypothesis profiles of the fuzz tests: ``default`` (fixed seed, a bounded number of
examples: the default suite) and ``long`` (random seeds, many more examples: the campaign,
``CHRONORAY_FUZZ=long pytest tests/fuzz``; see ``test_fuzz_campaign.py``). A test with
its own bounded count takes it from :func:`examples`, which the ``long`` profile scales."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    derandomize=True,
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PROFILE = os.environ.get("CHRONORAY_FUZZ", "default")
settings.load_profile(PROFILE)


def examples(bounded: int) -> int:
    """``bounded`` examples in the default suite; under the ``long`` profile as many times
    more as that profile has over ``default`` (2,000 / 60: 25 -> 833)."""
    if PROFILE != "long":
        return bounded
    scale = settings.get_profile("long").max_examples / settings.get_profile("default").max_examples
    return int(bounded * scale)
