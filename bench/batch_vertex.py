"""User vertex classes on the batch path (issue 21, item 3): the framework's own cost per
message beyond the user's code, for a per-message class (``on_message``) and for the same
rule as a batch behavior (``BatchVertex.on_updates``).

One process, ``GraphCluster(runtime="local")``, 2 shards, RocksDB logs: ``--accounts``
vertices created, then ``--messages`` stream messages (``amount``) to them, each class in
turn, ``--trials`` times (the fastest counts; the machine is shared). Reported per
message: the wall time of the whole ingest (driver, routing, shards, log writes), the time
inside the user's code (the hook calls, timed around each call), and their difference --
the framework's own cost. The baseline class has no message code at all (the built-in
temporal vertex ignores messages: the shards still run, clock and log every message).
Then the cProfile top lines (own time) of the batch class's ingest. With ``--before REV``
the same trials of git revision ``REV`` (its own ``bench.batch_vertex``, in a fresh
process against its tree, just before this checkout's) are reported beside them. Writes
``batch_vertex.json`` and ``batch_vertex.md``::

    python -m bench.batch_vertex --before 9aacd4b
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import chronoray as cr
from bench.baseline import tree
from bench.report import machine, profile_top, write_results
from shards.core import ShardCore
from vertex.batch import BatchVertex, MessageBatch
from vertex.model import Context, TemporalVertex

RESULTS = Path(__file__).parent / "results"
_USER = [0.0]  # seconds inside user code, summed by the timed hooks
_SHARD = [0.0]  # seconds inside ShardCore.handle (the shards' whole work, user code included)


@contextlib.contextmanager
def _timed_handle() -> Iterator[None]:
    """Time every ``ShardCore.handle`` call meanwhile (this process runs the shards:
    runtime local); the method is restored after."""
    handle = ShardCore.handle

    def timed(self: ShardCore, batch: Any) -> Any:
        began = time.perf_counter()
        try:
            return handle(self, batch)
        finally:
            _SHARD[0] += time.perf_counter() - began

    ShardCore.handle = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        ShardCore.handle = handle  # type: ignore[method-assign]


class PerMessage(TemporalVertex):
    """A balance and a message count, one message at a time."""

    type_name = "Account"

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        began = time.perf_counter()
        ctx.state["balance"] = ctx.state.get("balance", 0) + msg["amount"]
        ctx.state["messages"] = ctx.state.get("messages", 0) + 1
        _USER[0] += time.perf_counter() - began


class Batched(BatchVertex, TemporalVertex):
    """The same rule over a batch's columns."""

    type_name = "Account"

    def on_updates(self, batch: MessageBatch) -> Mapping[str, Any]:
        began = time.perf_counter()
        amount = batch.column("amount", 0, dtype=np.int64)
        ones = np.ones(len(batch), dtype=np.int64)
        out = {
            "balance": batch.running_sum(amount, batch.state_column("balance", 0)),
            "messages": batch.running_sum(ones, batch.state_column("messages", 0)),
        }
        _USER[0] += time.perf_counter() - began
        return out


class Ignores(TemporalVertex):
    """No message code: the built-in temporal class (messages are clocked and logged)."""

    type_name = "Account"


CLASSES: dict[str, type[TemporalVertex]] = {
    "no user code (built-in)": Ignores,
    "on_message (per message)": PerMessage,
    "on_updates (batch)": Batched,
}


def _stream(accounts: int, messages: int) -> list[cr.Update]:
    rng = np.random.default_rng(3)
    to = rng.integers(accounts, size=messages).tolist()
    amount = rng.integers(-50, 100, size=messages).tolist()
    stream = [cr.Update.add_vertex(v, 0, vertex_type="Account") for v in range(accounts)]
    stream += [
        cr.Update.message(v, 1 + i, amount=a)
        for i, (v, a) in enumerate(zip(to, amount, strict=True))
    ]
    return stream


def _ingest(cls: type[TemporalVertex], stream: list[cr.Update], where: Path) -> float:
    shutil.rmtree(where, ignore_errors=True)
    with cr.GraphCluster(
        runtime="local", num_shards=2, log_dir=str(where), vertex_types=[TemporalVertex, cls]
    ) as g:
        began = time.perf_counter()
        g.ingest(stream, progress=False)
        return time.perf_counter() - began


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--before", help="Git revision also measured, as 'before'.")
    args = parser.parse_args(argv)
    before = None if args.before is None else _before(args)
    stream = _stream(args.accounts, args.messages)
    work = Path(tempfile.mkdtemp(prefix="chronoray-bench-batch-"))
    runs: dict[str, dict[str, Any]] = {name: {"trials": []} for name in CLASSES}
    loads = [os.getloadavg()]
    try:
        with _timed_handle():
            for _ in range(args.trials):
                for name, cls in CLASSES.items():
                    _USER[0] = _SHARD[0] = 0.0
                    seconds = _ingest(cls, stream, work / "g")
                    runs[name]["trials"].append(
                        {"seconds": seconds, "user": _USER[0], "shard": _SHARD[0]}
                    )
        loads.append(os.getloadavg())
        profile = profile_top(lambda: _ingest(Batched, stream, work / "g"), 16, "tottime")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n = args.messages
    for run in runs.values():
        best = min(run["trials"], key=lambda t: t["seconds"])
        run["us_per_message"] = 1e6 * best["seconds"] / n
        run["user_us_per_message"] = 1e6 * best["user"] / n
        run["framework_us_per_message"] = run["us_per_message"] - run["user_us_per_message"]
        run["shard_framework_us_per_message"] = 1e6 * (best["shard"] - best["user"]) / n
    result = {
        "benchmark": "batch_vertex",
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "accounts": args.accounts,
        "messages": n,
        "load": loads,
        "runs": runs,
        "profile": profile,
    }
    if before is not None:
        result["before"] = {"revision": args.before, "runs": before["runs"], "load": before["load"]}
    write_results(args.out, "batch_vertex", result, _markdown(result))
    return result


def _before(args: argparse.Namespace) -> dict[str, Any]:
    """The results of revision ``args.before``'s own benchmark, same sizes and trials."""
    root = tree(args.before)
    assert root is not None
    out = Path(tempfile.mkdtemp(prefix="chronoray-bench-batch-before-"))
    try:
        sizes = ["--accounts", str(args.accounts), "--messages", str(args.messages)]
        subprocess.run(
            [sys.executable, "-m", "bench.batch_vertex", *sizes, "--trials", str(args.trials),
             "--out", str(out)],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            check=True,
            capture_output=True,
        )  # fmt: skip
        return json.loads((out / "batch_vertex.json").read_text())  # type: ignore[no-any-return]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _markdown(r: dict[str, Any]) -> str:
    load = " -> ".join(" ".join(f"{x:.1f}" for x in one) for one in r["load"])
    rows = [
        "# User vertex classes: the framework's cost per message (issue 21, item 3)",
        "",
        f"{r['machine']}, {r['date']}, load (1/5/15 min) {load}. "
        f"`GraphCluster(runtime='local')`, 2 shards, RocksDB logs; {r['accounts']:,} "
        f"accounts, then {r['messages']:,} stream messages (`amount`) to them; fastest of "
        f"{len(next(iter(r['runs'].values()))['trials'])} trials per class, in turn. "
        "user = time inside the hook (timed around each call); framework = the rest of "
        "the ingest's wall time (driver, routing, shard execution, log writes); in the "
        "shards = the time inside `ShardCore.handle` (execution, logging) less the user's.",
        "",
    ]
    if r.get("before") is not None:
        was = " -> ".join(" ".join(f"{x:.1f}" for x in one) for one in r["before"]["load"])
        rows += [
            f"'before' = commit {r['before']['revision']}'s own benchmark, run just before "
            f"this checkout's in a fresh process (load {was}).",
            "",
        ]
    rows += [
        "| class | us/message | user us/message | framework us/message "
        "| of which in the shards | trials s |",
        "|---|---:|---:|---:|---:|---|",
    ]
    before = r.get("before")
    tagged = [("", r["runs"])]
    if before is not None:
        tagged = [(f" (before: {before['revision']})", before["runs"]), (" (now)", r["runs"])]
    for tag, runs in tagged:
        for name, run in runs.items():
            trials = ", ".join(f"{t['seconds']:.2f}" for t in run["trials"])
            rows.append(
                f"| {name}{tag} | {run['us_per_message']:.2f} "
                f"| {run['user_us_per_message']:.2f} | {run['framework_us_per_message']:.2f} "
                f"| {run['shard_framework_us_per_message']:.2f} | {trials} |"
            )
    rows += [
        "",
        "## cProfile of the batch class's ingest (own time)",
        "",
        "```",
        r["profile"],
        "```",
    ]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    main()
