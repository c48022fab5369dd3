"""Restarts during a multi-source ingest: does every past cut still equal the file?

Two sources -- the odd and the even lines of a skewed stream
(:func:`bench.workloads.skewed_stream`) -- feed 4 shards while shards, source actors and
the graph's controller die: on Ray, their processes are SIGKILLed
(:func:`chronoray.testing.kill_shard`, :func:`~chronoray.testing.kill_source`,
:func:`~chronoray.testing.kill_controller`; Ray restarts them, they recover from the logs
and the controller's file); in process, :meth:`shards.local.LocalRuntime.crash`,
``crash_source`` and ``crash_coordinator`` drop their memory.
Kills are spread over the ingest by how much the sources have read. Afterwards the graph
at many past times ``T`` is compared with the stream's lines up to ``T`` (every pair's
count): an update logged later than its own time is missing from the cuts between the two.

The Ray run measures this checkout and, with ``--before``, another commit in a fresh
process (the same script, run against that tree)::

    python -m bench.restarts                             # 300 k events, 12 kills
    python -m bench.restarts --events 60000 --kills 4 --before none

Writes ``restarts.json`` and ``restarts.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
BEFORE = "b47a433"  # main before issue 20: the wrong cuts of the issue
Row = tuple[int, int, int]


def skewed(events: int, seed: int = 7) -> list[Row]:
    """The skewed stream of ``events`` events (in time order)."""
    from bench.workloads import skewed_stream

    return skewed_stream(events, edges=max(events * 58 // 600, 100), seed=seed)


def cut_times(rows: list[Row], n: int) -> list[float]:
    """``n`` times spread over the stream by rank."""
    ts = sorted(t for _, _, t in rows)
    return [float(ts[(len(ts) - 1) * (i + 1) // (n + 1)]) for i in range(n)] + [float(ts[-1])]


def compare(rows: list[Row], times: list[float], counts_at: Callable[[float], Counter]) -> dict:
    """Each cut against the file: updates with time ``<= T`` in the file and in the cut,
    and whether every pair's count is the same."""
    cuts = []
    for at in times:
        want = Counter((s, d) for s, d, t in rows if t <= at)
        got = counts_at(at)
        cuts.append(
            {"at": at, "file": sum(want.values()), "cut": sum(got.values()), "exact": got == want}
        )
    return {"cuts": cuts, "wrong": sum(not c["exact"] for c in cuts)}


def kill_plan(kills: int, shards: int, seed: int) -> list[tuple[str, int]]:
    """Which process each kill hits: shards, the two source actors and the controller, in
    a seeded order with every one of them hit when there are enough kills."""
    targets = [("shard", k) for k in range(shards)] + [("source", 0), ("source", 1)]
    targets.append(("controller", 0))
    rng = random.Random(seed)
    plan: list[tuple[str, int]] = []
    while len(plan) < kills:
        rng.shuffle(targets)
        plan += targets
    return plan[:kills]


# -- Ray --------------------------------------------------------------------------------


def ray_run(events: int, kills: int, shards: int, workdir: Path, seed: int = 5) -> dict:
    """Ingest both halves on Ray (a local instance of its own) with ``kills`` SIGKILLs;
    the cuts compared with the file."""
    import ray

    rows = skewed(events)
    ray.init(
        address="local",
        num_cpus=2,
        object_store_memory=200 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        return _ray_ingest(rows, kills, shards, workdir, seed)
    finally:
        ray.shutdown()


def _ray_ingest(
    rows: list[Row],
    kills: int,
    shards: int,
    workdir: Path,
    seed: int,
    plan: list[tuple[str, int]] | None = None,
    gated: bool = False,
) -> dict:
    """Ingest both halves of ``rows`` on the connected Ray with ``kills`` SIGKILLs (of the
    targets :func:`kill_plan` chooses, or ``plan``'s); the cuts compared with the file.
    ``gated``: each source pauses at ``i/(n+1)`` of its half until the ``i``-th kill is
    due (:class:`chronoray.testing.GatedSource`), so every kill lands while the sources
    still read, however fast they are."""
    import chronoray as cr
    from bench.workloads import write_snap
    from chronoray.testing import GatedSource

    paths = [workdir / "odd.txt", workdir / "even.txt"]
    write_snap(paths[0], rows[0::2])
    write_snap(paths[1], rows[1::2])
    plan = plan if plan is not None else kill_plan(kills, shards, seed)
    sources: list[Any] = [cr.SnapEdgeSource(p) for p in paths]
    if gated:
        halves = [len(rows[0::2]), len(rows[1::2])]
        (workdir / "gates").mkdir()
        sources = [
            GatedSource(
                s, [n * i // (len(plan) + 1) for i in range(1, len(plan) + 1)], workdir / "gates"
            )
            for s, n in zip(sources, halves, strict=True)
        ]
    started = time.perf_counter()
    with cr.GraphCluster(num_shards=shards, log_dir=str(workdir / "g")) as g:
        jobs = g.ingest_many(sources, wait=False)
        if gated:
            done = _kill_at_gates(g, jobs, sources, plan)
        else:
            done = _kill_during(g, jobs, plan, len(rows))
        reports = [job.wait(timeout=3600) for job in jobs]
        g.wait_idle()
        seconds = time.perf_counter() - started

        def counts_at(at: float) -> Counter:
            _, edges = g.snapshot(at=at).to_pandas()
            pairs = zip(edges["src"], edges["dst"], strict=True)
            return Counter(dict(zip(pairs, edges["count"], strict=True)))

        result = compare(rows, cut_times(rows, 11), counts_at)
    return {
        "runtime": "ray",
        "events": len(rows),
        "shards": shards,
        "kills": len(done),
        "killed": done,
        "updates": sum(r.updates for r in reports),
        "resent_batches": sum(r.resent_batches for r in reports),
        "ingest_seconds": seconds,
        **result,
    }


def _kill_during(graph: Any, jobs: list[Any], plan: list[tuple[str, int]], total: int) -> list:
    """SIGKILL the planned targets, the ``i``-th once the sources have read ``i/(n+1)`` of
    the stream; returns what was killed (a source that ended is not)."""
    done = []
    for i, (kind, k) in enumerate(plan, start=1):
        if not _read_at_least(jobs, total * i // (len(plan) + 1)):
            break
        if kind == "source" and jobs[k].done():
            continue
        kill = _killer(graph, jobs, kind, k)
        if kill is not None and _answering(kill):
            done.append(f"{kind} {k}")
    return done


def _kill_at_gates(
    graph: Any, jobs: list[Any], sources: list[Any], plan: list[tuple[str, int]]
) -> list:
    """The ``i``-th planned kill once every source paused at its gate ``i``: the gate is
    opened and the target killed at once (waiting for it to answer if an earlier kill
    still restarts it), while the sources read on to their next gate."""
    done = []
    for i, (kind, k) in enumerate(plan):
        _wait_until(lambda i=i: all(s.reached(i) for s in sources), f"the sources at gate {i}")
        sources[0].open_gate(i)
        kill = _killer(graph, jobs, kind, k)
        if kill is not None and _answering(kill, attempts=2400):
            done.append(f"{kind} {k}")
    return done


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _killer(graph: Any, jobs: list[Any], kind: str, k: int) -> Callable[[], int] | None:
    """How to kill the target (``None``: a controller in a tree that cannot restart it,
    such as ``--before``'s: its kill would lose the graph, not test its recovery)."""
    from chronoray import testing

    if kind == "shard":
        return lambda: testing.kill_shard(graph, k)
    if kind == "controller":
        kill_controller = getattr(testing, "kill_controller", None)
        return None if kill_controller is None else lambda: kill_controller(graph)
    return lambda: testing.kill_source(jobs[k])


def _read_at_least(jobs: list[Any], n: int) -> bool:
    """Wait until the sources read ``n`` updates together; ``False`` if they ended first."""
    while True:
        states = [job.progress() for job in jobs]
        if all(s.get("done") for s in states):
            return False
        if sum(s.get("read", 0) for s in states) >= n:
            return True
        time.sleep(0.02)


def _answering(kill: Callable[[], int], attempts: int = 200) -> bool:
    """Run ``kill`` once its target answers (it may be restarting from an earlier kill)."""
    from ray.exceptions import ActorUnavailableError, RayActorError

    for _ in range(attempts):
        try:
            kill()
            return True
        except (RayActorError, ActorUnavailableError):
            time.sleep(0.05)
    return False


# -- in process -------------------------------------------------------------------------


class _Faulty:
    """A re-readable source that crashes shards or sources of ``runtime`` when it reaches
    given offsets (each fault once, also when the source is read again)."""

    def __init__(self, name: str, rows: list[Row], faults: dict[int, Callable[[], None]]) -> None:
        self.name = name
        self.rows = rows
        self.faults = faults

    def __iter__(self) -> Iterator[Any]:
        from vertex.records import Update

        for offset, (s, d, t) in enumerate(self.rows, start=1):
            fault = self.faults.pop(offset, None)
            if fault is not None:
                fault()
            yield Update.add_edge(s, d, t).with_origin(self.name, offset)


def local_run(
    events: int,
    crashes: int,
    shards: int,
    seed: int = 5,
    plan: list[tuple[str, int]] | None = None,
) -> dict:
    """Ingest both halves in process (``LocalRuntime``) with ``crashes`` crashes of
    shards, sources and the coordinator (those :func:`kill_plan` chooses, or ``plan``'s)
    spread over the ingest; the cuts compared with the file."""
    from shards.local import LocalRuntime
    from snapshot.reconstruct import rebuild_part

    rows = skewed(events)
    rt = LocalRuntime(shards, batch_size=200)
    names = ["odd", "even"]
    halves = [rows[0::2], rows[1::2]]
    faults: list[dict[int, Callable[[], None]]] = [{}, {}]
    plan = plan if plan is not None else kill_plan(crashes, shards, seed)
    crashes = len(plan)
    for i, (kind, k) in enumerate(plan, start=1):
        at = len(halves[0]) * i // (crashes + 1)
        if kind == "shard":
            faults[i % 2][at] = lambda k=k: rt.crash(k)
        elif kind == "controller":
            faults[i % 2][at] = rt.crash_coordinator
        else:
            faults[i % 2][at] = lambda k=k: rt.crash_source(names[k])
    started = time.perf_counter()
    sources = {n: _Faulty(n, h, f) for n, h, f in zip(names, halves, faults, strict=True)}
    rt.ingest_many(sources, chunk=50)
    seconds = time.perf_counter() - started

    def counts_at(at: float) -> Counter:
        counts: Counter = Counter()
        for k, core in enumerate(rt.cores):
            for vid, record in rebuild_part(core.store, k, at=at).vertices.items():
                for dst, props in record.out_edges.items():
                    counts[(vid, dst)] = props["count"]
        return counts

    result = compare(rows, cut_times(rows, 11), counts_at)
    rt.close()
    return {
        "runtime": "local",
        "events": len(rows),
        "shards": shards,
        "kills": crashes - sum(len(f) for f in faults),
        "updates": sum(rt.feeds[n].read for n in names),
        "ingest_seconds": seconds,
        **result,
    }


# -- main -------------------------------------------------------------------------------


def run_script(root: Path, script: Path, args: list[str]) -> dict:
    """Run ``script --probe DIR ARGS`` in a fresh process against the chronoray tree
    ``root`` (a copy of the script, next to no tree); its last output line is JSON."""
    work = Path(tempfile.mkdtemp(prefix="chronoray-bench-"))
    copy = work / script.name
    shutil.copy(script, copy)
    env = {**os.environ, "PYTHONPATH": str(root)}
    try:
        command = [sys.executable, str(copy), "--probe", str(work), *args]
        out = subprocess.run(command, capture_output=True, text=True, cwd=root, env=env)
        if out.returncode != 0:
            raise RuntimeError(f"{script.name} on {root} failed:\n{out.stderr[-4000:]}")
        result: dict = json.loads(out.stdout.strip().splitlines()[-1])
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _ray_in(root: Path, events: int, kills: int, shards: int) -> dict:
    """:func:`ray_run` in a fresh process against the chronoray tree ``root``."""
    args = ["--events", str(events), "--kills", str(kills), "--shards", str(shards)]
    return run_script(root, Path(__file__), args)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--before", default=BEFORE, help="Git revision ('none': skip).")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)  # one Ray run, as JSON
    args = parser.parse_args(argv)
    if args.probe is not None:
        result = ray_run(args.events, args.kills, args.shards, args.probe)
        print(json.dumps(result))
        return result
    from bench.baseline import tree
    from bench.report import machine, write_results

    runs = {"local (now)": local_run(args.events, args.kills, args.shards)}
    for name, revision in (("now", None), ("before", args.before)):
        root = tree(revision)
        if root is not None:
            runs[f"ray ({name})"] = _ray_in(root, args.events, args.kills, args.shards)
    result = {
        "benchmark": "restarts",
        "before": None if args.before == "none" else args.before,
        "machine": machine(),
        "load": os.getloadavg(),
        "runs": runs,
    }
    write_results(args.out, "restarts", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        "# Restarts during a two-source ingest: past cuts against the file",
        "",
        f"{result['machine']['cpus']} CPUs, load {result['load'][0]:.1f}. Two sources (odd and "
        "even lines of the skewed stream) into 4 shards; kills spread over the ingest by "
        "updates read (Ray: SIGKILL of shard, source actor and controller processes, "
        "`killed` in the JSON; local: `crash`/`crash_source`/`crash_coordinator`). A cut is "
        "exact when every pair's count equals the file's up to T."
        + (f" 'before' = commit {result['before']}." if result["before"] else ""),
        "",
        "| run | events | kills | ingest s | resent batches | cuts exact "
        "| first wrong cut: updates at T, file / cut |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, run in result["runs"].items():
        cuts = run["cuts"]
        wrong = next((c for c in cuts if not c["exact"]), None)
        shown = "-"
        if wrong is not None:
            shown = f"{wrong['file']:,} / {wrong['cut']:,} at {wrong['at']:.0f}"
        lines.append(
            f"| {name} | {run['events']:,} | {run['kills']} "
            f"| {run['ingest_seconds']:.1f} | {run.get('resent_batches', '-')} "
            f"| {len(cuts) - run['wrong']} of {len(cuts)} | {shown} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
