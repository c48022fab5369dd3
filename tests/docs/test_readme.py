"""README.md runs as written (issue 24, item 4): every shell and Python block, in order, in a
fresh directory on a fresh graph, with the outputs it states checked (see ``blocks.py``)."""

from __future__ import annotations

import pytest
from blocks import ROOT, run_page


@pytest.mark.slow
def test_the_readme_runs_as_written():
    result = run_page(ROOT / "README.md")
    assert result.blocks >= 3 and result.checked >= 3
    assert len(result.skipped) == 1  # the two set-up commands (the reason is in the README)
    assert result.leftovers == []  # every Ray it started ended with the block that started it
