"""The ``debs`` fixture: small DEBS files in a fresh directory."""

from __future__ import annotations

import pytest
from cep_helpers import write_debs


@pytest.fixture
def debs(tmp_path):
    """``debs(posts=[...], comments=[...], ...)`` -> DebsFiles in a fresh directory."""
    return lambda **lines: write_debs(tmp_path, **lines)
