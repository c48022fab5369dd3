"""Hypothesis profiles of the fuzz tests: ``default`` (fixed seed, a bounded number of
examples: the default suite) and ``long`` (random seeds, many more examples: the campaign,
``CHRONORAY_FUZZ=long pytest tests/fuzz``; see ``test_fuzz_campaign.py``)."""

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
settings.load_profile(os.environ.get("CHRONORAY_FUZZ", "default"))
