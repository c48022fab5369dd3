"""Run the code blocks of a markdown page as written, in order, and check the outputs it states.

A page is read into :class:`Block` values, one per fenced ```` ```bash ````, ```` ```sh ````,
```` ```console ```` or ```` ```python ```` block, and :func:`run_page` runs them in a fresh
temporary directory that holds what a checkout gives a reader (its tracked files and
``.venv``, linked from this checkout):

- **python** blocks of one page share one namespace, in order (one interpreter per page, the
  checkout's ``.venv`` Python, started in the temporary directory);
- **bash**/**sh** blocks run each in a new ``bash`` with ``set -eo pipefail`` and the
  checkout's ``.venv/bin`` first on ``PATH``; **console** blocks are transcripts: each
  ``$ command`` runs that way and the lines after it are its expected output.

What a page states about a block's output is checked: a ```` ```text ```` block right after a
runnable block (only blank lines between) is its expected output. Each non-blank line of it
must match a line of the actual output (standard output and error together, ANSI codes
removed), in order, other lines allowed between them; a line matches when equal after
stripping surrounding blanks, ``...`` standing for any text inside a line. A block that fails
(non-zero exit, a Python exception, an expected line not found) fails the page, naming the
file and line of the block.

HTML comments right before a block (only blank lines or other such comments between) steer
the runner and show in the markdown source:

- ``<!-- runner: skip: REASON -->`` -- the block is not run here (REASON is reported);
- ``<!-- runner: exit N -->`` -- the block must end with exit status ``N`` (a shell block);
- ``<!-- runner: timeout N -->`` -- seconds before the block counts as hung (default 600);
- ``<!-- runner: background until TEXT -->`` -- a shell block that serves until stopped (a
  second terminal): it runs in the background, the next block starts once its output shows
  ``TEXT``, and it gets SIGINT (Ctrl-C) when the page is done.

Processes a page started are stopped when it ends: the Python interpreter is closed (so the
local Ray it started shuts down), background blocks get SIGINT, then SIGKILL after a grace
period, together with every process of their group. A block never runs ``ray stop``
for real (it would stop every Ray of the user on this machine); pages mark such blocks skipped.

``python tests/docs/blocks.py [--out FILE] PAGE...`` runs pages from the command line and
prints (or writes) the summary table that ``bench/results/docs.md`` holds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Block",
    "BlockFailed",
    "PageResult",
    "match_output",
    "parse_page",
    "run_page",
]

ROOT = Path(__file__).resolve().parents[2]
# the checkout's .venv (what ./run makes), else the environment running this
VENV = ROOT / ".venv" if (ROOT / ".venv" / "bin" / "python").exists() else Path(sys.prefix)
RUNNABLE = ("bash", "sh", "console", "python")
DEFAULT_TIMEOUT = 600.0

_FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")
_DIRECTIVE = re.compile(r"^\s*<!--\s*runner:\s*(.*?)\s*-->\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\r")


@dataclass(frozen=True, slots=True)
class Block:
    """One runnable block of a page, with what the page says about it."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    expected: str | None = None  # the ```text block that follows, if any
    skip: str | None = None  # why it is not run here
    exit_code: int = 0
    timeout: float = DEFAULT_TIMEOUT
    background_until: str | None = None

    @property
    def where(self) -> str:
        """``path:line`` of the block, for messages."""
        try:
            shown = self.path.relative_to(ROOT)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"


class BlockFailed(AssertionError):
    """A block did not run as the page says: names the block, says why, shows its output."""


@dataclass(slots=True)
class PageResult:
    """What running one page did."""

    path: Path
    blocks: int = 0  # blocks run
    checked: int = 0  # blocks whose stated output was checked
    seconds: float = 0.0
    skipped: list[tuple[Block, str]] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # processes the page left running


def _directives(lines: list[str]) -> dict[str, str]:
    """The ``runner:`` comments just above a fence (blank lines between allowed)."""
    found: dict[str, str] = {}
    for text in reversed(lines):
        if not text.strip():
            continue
        m = _DIRECTIVE.match(text)
        if not m:
            break
        body = m.group(1)
        key, _, value = body.partition(":") if body.startswith("skip") else body.partition(" ")
        found.setdefault(key.strip(), value.strip())
    return found


def parse_page(path: Path, text: str | None = None) -> list[Block]:
    """Every runnable block of the markdown page ``path`` (or of ``text``), in order."""
    lines = (path.read_text() if text is None else text).splitlines()
    blocks: list[Block] = []
    i = 0
    last_runnable: int | None = None  # index in blocks of a block a ```text may follow
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            if lines[i].strip() and not _DIRECTIVE.match(lines[i]):
                last_runnable = None
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1  # the closing fence
        code = "\n".join(body) + "\n"
        if lang == "text" and last_runnable is not None:
            prev = blocks[last_runnable]
            blocks[last_runnable] = Block(**{**_fields(prev), "expected": code})
            last_runnable = None
            continue
        if lang not in RUNNABLE:
            last_runnable = None
            continue
        d = _directives(lines[:start])
        bg = d.get("background")
        blocks.append(
            Block(
                path=path,
                line=start + 1,
                lang=lang,
                code=code,
                skip=d.get("skip") or None,
                exit_code=int(d.get("exit", "0")),
                timeout=float(d.get("timeout", DEFAULT_TIMEOUT)),
                background_until=(bg.removeprefix("until").strip().strip('"') if bg else None),
            )
        )
        last_runnable = len(blocks) - 1
    return blocks


def _fields(block: Block) -> dict[str, object]:
    return {name: getattr(block, name) for name in Block.__slots__}


def match_output(expected: str, actual: str) -> str | None:
    """``None`` if every line of ``expected`` is found in ``actual`` in order, else why not.

    Lines compare after stripping surrounding blanks; ``...`` in an expected line matches any
    text; lines of ``actual`` not named in ``expected`` may come between.

    >>> match_output("a 1\\nc ...", "a 1\\nb 2\\nc 3 4") is None
    True
    >>> print(match_output("a 2", "a 1"))
    expected line 1 not found in the output (in order): 'a 2'
    """
    have = [line.strip() for line in _ANSI.sub("", actual).splitlines()]
    at = 0
    for number, want in enumerate(
        (line.strip() for line in expected.splitlines() if line.strip()), start=1
    ):
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("...")))
        while at < len(have) and not pattern.fullmatch(have[at]):
            at += 1
        if at == len(have):
            return f"expected line {number} not found in the output (in order): {want!r}"
        at += 1
    return None


_KERNEL = r"""
import contextlib, io, json, os, sys, traceback
out = os.fdopen(int(sys.argv[1]), "w")
namespace = {"__name__": "__main__"}
for request in sys.stdin:
    code = json.loads(request)
    buffer = io.StringIO()
    error = None
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            exec(compile(code["code"], code["where"], "exec"), namespace)
        except BaseException:
            error = traceback.format_exc()
    out.write(json.dumps({"output": buffer.getvalue(), "error": error}) + "\n")
    out.flush()
"""


class _Python:
    """The page's one Python interpreter: blocks run in it, in one namespace."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        read, write = os.pipe()
        self._log = open(cwd / ".python-blocks.log", "wb")  # noqa: SIM115 - closed in close()
        self._proc = subprocess.Popen(
            [str(VENV / "bin" / "python"), "-u", "-c", _KERNEL, str(write)],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            pass_fds=(write,),
            text=True,
            start_new_session=True,
            preexec_fn=_default_interrupt,
        )
        os.close(write)
        self._replies = os.fdopen(read)

    def run(self, block: Block) -> str:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"code": block.code, "where": block.where}) + "\n")
        self._proc.stdin.flush()
        reply = self._replies.readline()
        if not reply:
            raise BlockFailed(f"{block.where}: the Python interpreter ended (see its log)")
        answer = json.loads(reply)
        if answer["error"]:
            raise BlockFailed(f"{block.where}: raised\n{answer['output']}{answer['error']}")
        return str(answer["output"])

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()  # the interpreter exits: Ray's shutdown runs at exit
        _stop(self._proc, grace=120.0, first=None)
        self._replies.close()
        self._log.close()


def _default_interrupt() -> None:
    """In a block's process before it runs: Ctrl-C (SIGINT) does what it does in a
    terminal. A runner started by a process that ignores SIGINT (a pytest-xdist worker)
    would pass the ignoring on, and a shell cannot trap a signal ignored on entry."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(proc: subprocess.Popen[str], grace: float, first: int | None) -> None:
    """End ``proc`` (signal ``first`` to its group, then SIGKILL after ``grace`` seconds)."""
    if first is not None and proc.poll() is None:
        _signal_group(proc, first)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def _signal_group(proc: subprocess.Popen[str], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _shell(block: Block, command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.Popen(
        ["bash", "-c", "set -eo pipefail\n" + command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_default_interrupt,
    )
    try:
        output, _ = proc.communicate(timeout=block.timeout)
    except subprocess.TimeoutExpired:
        _stop(proc, grace=30.0, first=signal.SIGINT)
        raise BlockFailed(f"{block.where}: still running after {block.timeout:.0f} s") from None
    return proc.returncode, output


def _console_steps(code: str) -> list[tuple[str, str]]:
    """A console transcript as (command, expected output) pairs."""
    steps: list[tuple[str, list[str]]] = []
    continuing = False
    for line in code.splitlines():
        if continuing:
            steps[-1] = (steps[-1][0] + "\n" + line, steps[-1][1])
            continuing = line.endswith("\\")
        elif line.startswith("$ "):
            steps.append((line[2:], []))
            continuing = line.endswith("\\")
        elif steps:
            steps[-1][1].append(line)
    return [(cmd, "\n".join(out)) for cmd, out in steps]


def _checkout_entries() -> list[str]:
    """The top-level names of a fresh clone (tracked files), ``.venv`` added."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    names = {line.split("/", 1)[0] for line in listed.stdout.splitlines()}
    return sorted(names or {"chronoray", "bench"}) + [".venv"]


def _workdir(root: Path) -> None:
    """What a checkout gives a reader, linked into the temporary directory ``root``: its
    tracked top-level files and directories and ``.venv``; what blocks write lands beside."""
    for name in _checkout_entries():
        (root / name).symlink_to(VENV if name == ".venv" else ROOT / name)


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV)
    env.pop("RAY_ADDRESS", None)  # a page starts its own Ray, never joins another
    env.pop("CHRONORAY_RAY_ADDRESS", None)
    env["CHRONORAY_DRIVER_LOG"] = str(root / "driver.log")
    env["COLUMNS"] = "100"
    return env


def run_page(path: Path, *, keep: Path | None = None, grace: float = 30.0) -> PageResult:
    """Run every block of ``path`` as written; raise :class:`BlockFailed` at the first failure.

    ``keep``: run in this (new, empty) directory instead of a temporary one, and leave it.
    ``grace``: seconds the page's processes get to end by themselves once it is done.
    """
    blocks = parse_page(path)
    result = PageResult(path)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chronoray-docs-") as tmp:
        root = Path(keep) if keep is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        _workdir(root)
        env = _env(root)
        python: _Python | None = None
        background: list[subprocess.Popen[str]] = []
        try:
            for block in blocks:
                if block.skip:
                    result.skipped.append((block, block.skip))
                    continue
                result.blocks += 1
                if block.lang == "python":
                    python = python or _Python(root, env)
                    output = python.run(block)
                elif block.background_until is not None:
                    background.append(_background(block, root, env))
                    continue
                elif block.lang == "console":
                    for command, expected in _console_steps(block.code):
                        status, output = _shell(block, command, root, env)
                        _check_status(block, status, output, command)
                        if expected.strip():
                            _check_output(block, expected, output, command)
                            result.checked += 1
                    continue
                else:
                    status, output = _shell(block, block.code, root, env)
                    _check_status(block, status, output)
                if block.expected is not None:
                    _check_output(block, block.expected, output)
                    result.checked += 1
        finally:
            for proc in background:
                _stop(proc, grace=60.0, first=signal.SIGINT)
            if python is not None:
                python.close()
            result.leftovers = _end_leftovers(root, grace)
    result.seconds = time.monotonic() - started
    return result


def _processes_in(root: Path) -> dict[int, str]:
    """Processes working in ``root`` (what the page's blocks started: Ray's too), by pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # gone, or not ours to read
        if cwd == root or root in cwd.parents:
            found[int(entry.name)] = command.strip()
    return found


def _end_leftovers(root: Path, grace: float) -> list[str]:
    """Wait ``grace`` seconds for the page's processes to end, then end the rest (SIGTERM,
    then SIGKILL); return what had to be ended."""
    deadline = time.monotonic() + grace
    while (left := _processes_in(root)) and time.monotonic() < deadline:
        time.sleep(0.5)  # Ray's processes end shortly after their driver
    for sig in (signal.SIGTERM, signal.SIGKILL) if left else ():
        for pid in _processes_in(root):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(2.0)
    return sorted(left.values())


def _background(block: Block, root: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """Start a serving block; return once its output shows the text it waits for."""
    log = root / f".background-{block.line}.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            ["bash", "-c", block.code],
            cwd=root,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=_default_interrupt,
        )
    until = block.background_until or ""
    deadline = time.monotonic() + block.timeout
    while until not in log.read_text():
        if proc.poll() is not None:
            raise BlockFailed(f"{block.where}: ended before {until!r}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            _stop(proc, grace=30.0, first=signal.SIGINT)
            raise BlockFailed(f"{block.where}: no {until!r} after {block.timeout:.0f} s")
        time.sleep(0.2)  # polling a log file: the condition is the text, the sleep its period
    return proc


def _check_status(block: Block, status: int, output: str, command: str | None = None) -> None:
    if status != block.exit_code:
        what = f" ({command!r})" if command else ""
        raise BlockFailed(
            f"{block.where}{what}: exit status {status}, the page says {block.exit_code}\n{output}"
        )


def _check_output(block: Block, expected: str, output: str, command: str | None = None) -> None:
    why = match_output(expected, output)
    if why is not None:
        what = f" ({command!r})" if command else ""
        raise BlockFailed(f"{block.where}{what}: {why}\n--- output ---\n{output}")


def summary(results: list[PageResult]) -> str:
    """The markdown table of ``bench/results/docs.md``."""
    rows = [
        "| page | blocks run | outputs checked | seconds | skipped (reason) |",
        "|---|---:|---:|---:|---|",
    ]
    for r in results:
        skipped = "; ".join(f"line {b.line}: {why}" for b, why in r.skipped) or "-"
        shown = r.path.relative_to(ROOT) if r.path.is_relative_to(ROOT) else r.path
        rows.append(f"| `{shown}` | {r.blocks} | {r.checked} | {r.seconds:.0f} | {skipped} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    """Run pages; print each one's result and the summary table (``--out FILE``: write it)."""
    out = None
    if argv[:1] == ["--out"]:
        out, argv = Path(argv[1]), argv[2:]
    results, failed = [], 0
    for page in argv:
        path = Path(page).resolve()
        try:
            results.append(run_page(path))
            done = results[-1]
            print(f"ok   {page}: {done.blocks} blocks, {done.seconds:.0f} s")
            for command in done.leftovers:
                print(f"     left running, ended: {command[:160]}")
        except BlockFailed as e:
            failed += 1
            print(f"FAIL {page}: {e}")
    table = summary(results)
    print(table)
    if out is not None:
        out.write_text(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
