"""The docs runner itself: how it reads a page, and that its checks fail when they should."""

from __future__ import annotations

from pathlib import Path

import pytest
from blocks import BlockFailed, match_output, parse_page, run_page

_PAGE = """# A page

<!-- runner: skip: needs a real cluster -->
```bash
ray up cluster.yaml
```

```python
x = 40 + 2
```

Some text.

```python
print(x, open("made.txt").read().strip())
```

```text
42 ...
```

<!-- runner: exit 3 -->
```sh
echo refused >&2; exit 3
```

```text
refused
```

```console
$ echo one; echo two
two
$ printf 'a\\n' > made.txt
```

```
not runnable
```
"""


def _page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text)
    return path


def test_a_page_is_read_into_blocks_with_what_it_states(tmp_path):
    blocks = parse_page(_page(tmp_path, _PAGE))
    assert [(b.line, b.lang) for b in blocks] == [
        (4, "bash"),
        (8, "python"),
        (14, "python"),
        (23, "sh"),
        (31, "console"),
    ]
    assert blocks[0].skip == "needs a real cluster"
    assert blocks[1].expected is None  # text between a block and a ```text ends the link
    assert blocks[2].expected == "42 ...\n"
    assert blocks[3].exit_code == 3 and blocks[3].expected == "refused\n"


def test_output_lines_are_matched_in_order_with_ellipses():
    assert match_output("b ...\nd", "a\nb 1 2\nc\nd") is None
    assert match_output("d\nb ...", "a\nb 1 2\nc\nd") is not None  # order matters
    assert match_output("x", "\x1b[1mx\x1b[0m") is None  # colour codes are not text
    assert match_output("b", "ab") is not None  # whole lines


def test_blocks_run_in_order_in_one_directory_and_one_python_namespace(tmp_path):
    made = "```bash\nprintf 'a\\n' > made.txt\n```\n\n"
    text = _PAGE.replace("```python\nprint", made + "```python\nprint")
    result = run_page(_page(tmp_path, text), keep=tmp_path / "run")
    assert (result.blocks, result.checked) == (5, 3)
    assert [why for _, why in result.skipped] == ["needs a real cluster"]
    assert (tmp_path / "run" / "made.txt").read_text() == "a\n"
    assert result.leftovers == []


def test_what_a_page_leaves_running_is_ended_and_reported(tmp_path):
    page = "```bash\n(trap '' TERM; exec sleep 600) > /dev/null 2>&1 &\n```\n"
    result = run_page(_page(tmp_path, page), grace=1.0)
    assert len(result.leftovers) == 1 and "sleep 600" in result.leftovers[0]


@pytest.mark.parametrize(
    ("page", "why"),
    [
        ("```bash\necho 41\n```\n\n```text\n42\n```\n", "expected line 1 not found"),
        ("```bash\nfalse\necho never\n```\n", "exit status 1, the page says 0"),
        ("<!-- runner: exit 1 -->\n```bash\ntrue\n```\n", "exit status 0, the page says 1"),
        ("```python\nraise ValueError('no')\n```\n", "ValueError: no"),
        ("```python\nprint(1)\n```\n\n```text\n2\n```\n", "expected line 1 not found"),
        ("```console\n$ echo a\nb\n```\n", "expected line 1 not found"),
    ],
)
def test_a_block_that_does_not_do_what_the_page_says_fails_naming_it(tmp_path, page, why):
    with pytest.raises(BlockFailed, match=r"page.md:[12]\b") as failed:
        run_page(_page(tmp_path, page))
    assert why in str(failed.value)


def test_a_serving_block_runs_in_the_background_until_the_page_is_done(tmp_path):
    page = (
        '<!-- runner: background until "serving" -->\n'
        "```bash\ntrap 'echo interrupted > stopped.txt; exit 0' INT\n"
        # the Ctrl-C reaches sleep too: `|| true` keeps `set -e` from ending bash before
        # its trap runs (a race seen under load)
        "echo serving\nwhile true; do sleep 0.1 || true; done\n```\n\n"
        "```bash\necho next\n```\n\n```text\nnext\n```\n"
    )
    result = run_page(_page(tmp_path, page), keep=tmp_path / "run", grace=5.0)
    assert (result.blocks, result.checked, result.leftovers) == (2, 1, [])
    assert (tmp_path / "run" / "stopped.txt").read_text() == "interrupted\n"  # a Ctrl-C
