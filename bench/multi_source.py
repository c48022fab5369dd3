"""Several sources at once: ingest of one stream split into ``--parts`` SNAP files that
interleave in time (line ``i`` goes to file ``i % parts``, so every file spans the whole
stream), ``GraphCluster.ingest([...])`` on Ray, merged by event time at the shards --
before and after, in one run.

The streams are :mod:`bench.ingest`'s (CollegeMsg x 10 and the skewed 600 k stream). Each
shard gets the updates of every source (an edge's target half goes to the target's
shard), so each merges ``parts`` sources at once: the case the Spark path (one source per
part of a DataFrame) and several files share. Both trees -- this checkout (``now``) and
``--before`` -- run the same probe (:func:`bench.probe.ray_ingest_many`) in fresh
processes, alternating trial by trial; the median of ``--trials`` is kept. Writes
``multi_source.json`` and ``.md``::

    python -m bench.multi_source --before f1aeeed
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import measure, tree
from bench.ingest import _streams
from bench.report import machine, median_run, write_results

__all__ = ["main"]

RESULTS = Path(__file__).parent / "results"


def _split(path: Path, parts: int) -> list[Path]:
    """``path``'s lines dealt round-robin into ``parts`` files beside it."""
    lines = path.read_text().splitlines(keepends=True)
    out = []
    for k in range(parts):
        part = path.with_name(f"{path.stem}-{k}of{parts}.txt")
        part.write_text("".join(lines[k::parts]))
        out.append(part)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="Git revision measured as 'before'.")
    parser.add_argument("--parts", type=int, default=2, help="Sources each stream is split in.")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--trials", type=int, default=2, help="Runs per tree; median kept.")
    parser.add_argument("--copies", type=int, default=10, help="CollegeMsg copies.")
    parser.add_argument("--skewed-events", type=int, default=600_000)
    parser.add_argument("--out", type=Path, default=RESULTS, help="Where results are written.")
    args = parser.parse_args(argv)
    trees = {"now": tree(None, warm=True), "before": tree(args.before, warm=True)}
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-multi-"))
    runs: dict[str, Any] = {}
    try:
        streams = _streams(workdir, args.copies, args.skewed_events)
        for stream, (path, _) in streams.items():
            files = [str(p) for p in _split(path, args.parts)]
            trials: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
            for _ in range(args.trials):
                for name, root in trees.items():
                    assert root is not None
                    trials[name].append(
                        measure(
                            root,
                            "ray_ingest_many",
                            timeout=3600,
                            files=files,
                            shards=args.shards,
                            workdir=str(workdir / name),
                        )
                    )
            for name, results in trials.items():
                runs[f"{stream} ({name})"] = median_run(results)
            edges = {r["edges"] for results in trials.values() for r in results}
            if len(edges) != 1:
                raise AssertionError(f"{stream}: the trees built other graphs ({edges} edges)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "benchmark": "multi_source",
        "machine": machine(),
        "before": args.before,
        "parts": args.parts,
        "shards": args.shards,
        "trials": args.trials,
        "runs": runs,
        "ratios": {
            stream: runs[f"{stream} (now)"]["rate"] / runs[f"{stream} (before)"]["rate"]
            for stream in streams
        },
    }
    write_results(args.out, "multi_source", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"# Several sources at once: {result['parts']} interleaved SNAP files per stream, "
        f"Ray, {result['shards']} shards",
        "",
        f"{result['machine']['cpus']} CPUs, Python {result['machine']['python']}; 'before' = "
        f"commit {result['before']}, same run, trees alternating; median of "
        f"{result['trials']} trials. Seconds from the call to the graph being idle; cpu = "
        "CPU seconds of the shard processes (summed) and of the driver.",
        "",
        "| stream (tree) | updates | seconds | updates/s | shard cpu s | driver cpu s "
        "| log B/event | trials (updates/s) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, run in result["runs"].items():
        trials = ", ".join(f"{r:,}" for r in run["trial_rates"])
        lines.append(
            f"| {name} | {run['updates']:,} | {run['seconds']:.1f} | {run['rate']:,.0f} "
            f"| {sum(run['shard_cpu_seconds']):.1f} | {run['driver_cpu_seconds']:.1f} "
            f"| {run['log_bytes_per_event']:,.0f} | {trials} |"
        )
    lines += ["", "| stream | updates/s now / before |", "|---|---:|"]
    lines += [f"| {s} | {r:.2f}x |" for s, r in result["ratios"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
