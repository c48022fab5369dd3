"""Every page of the manual (docs/*.md) runs as written, in order, in a fresh directory, with
the outputs it states checked (see ``blocks.py``). Long: Spark, CEP and several Ray starts per
page; ``python tests/docs/blocks.py --out bench/results/docs.md docs/*.md`` runs them all and
writes the summary."""

from __future__ import annotations

import pytest
from blocks import ROOT, parse_page, run_page

PAGES = sorted((ROOT / "docs").glob("*.md"))


def test_every_page_is_linked_from_the_readme_and_has_no_unrunnable_shell_or_python():
    readme = (ROOT / "README.md").read_text()
    index = (ROOT / "docs" / "README.md").read_text()
    for page in PAGES:
        if page.name != "README.md":
            assert f"docs/{page.name}" in readme and f"({page.name})" in index, page.name
        for block in parse_page(page):
            assert block.skip is None or len(block.skip) > 20, f"{block.where}: say why"


@pytest.mark.long
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_the_page_runs_as_written(page):
    result = run_page(page)
    assert result.blocks + len(result.skipped) == len(parse_page(page))
    assert result.leftovers == []
