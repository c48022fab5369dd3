"""GraphCEP benchmark: DEBS 2016 Q1 and Q2, distributed (chronoray CEP) versus the oracle.

One run: a seeded DEBS-shaped stream (``--events`` lines over ``--days``, the official
four files) is generated and read once; then each query runs on it twice -- the plain
single-process reference implementation kept in ``tests/cep/reference.py``, and the
distributed split -> process -> merge pipeline (``--instances`` Ray actors; Query 2's
instances each with a chronoray graph) -- and the two outputs are compared line for line.

Measured per run: throughput (input events per second of wall time) and per-event
latency, mean and p99. Distributed: from the moment the driver takes an event to the
moment the merger finished its batch (its line written); reference: the time it spends on
the event (its line written). Both read the same in-memory events; reading the files is
measured on its own. Where the time goes: the pipeline's split / wait / merge seconds and
the instances' busy time, and a profile of an in-process run (``--profile`` events) by
package. Reference points (GraphCEP, Java, one thread per query, 4-core VM): 156-210 k
events/s for Q1, 219-282 k for Q2; mean latency 0.046 ms and 0.071 ms.

    python -m bench.cep                         # 1.7 M events: >= 1 M for each query
    python -m bench.cep --events 20000 --profile 5000   # a quick look

Writes ``bench/results/cep.json`` and ``bench/results/cep.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from bench.report import machine, write_results
from cep import QUERY_FILES, DebsFiles, generate, read_stream
from cep.debs import query_pipeline

RESULTS = Path(__file__).parent / "results"
_TESTS = Path(__file__).resolve().parent.parent / "tests" / "cep"


def _reference() -> tuple[Callable[..., Iterator[str]], Callable[..., Iterator[str]]]:
    sys.path.insert(0, str(_TESTS))
    from reference import reference_q1, reference_q2

    return reference_q1, reference_q2


def _summary(seconds: float, events: int, latencies: list[float]) -> dict[str, Any]:
    ordered = sorted(latencies)
    return {
        "events": events,
        "seconds": seconds,
        "rate": events / seconds,
        "latency_mean_ms": sum(ordered) / len(ordered) * 1000,
        "latency_p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000,
    }


def run_reference(make: Callable[[Iterable[Any]], Iterator[str]], events: list[Any]) -> tuple[
    dict[str, Any], list[str]
]:  # fmt: skip
    """The oracle over ``events``: its lines, throughput and per-event latency."""
    marks: list[float] = []
    clock = time.perf_counter

    def timed() -> Iterator[Any]:
        for event in events:
            marks.append(clock())
            yield event

    lines: list[str] = []
    started = clock()
    lines.extend(make(timed()))
    marks.append(clock())
    seconds = marks[-1] - started
    latencies = [b - a for a, b in zip(marks, marks[1:], strict=False)]
    return _summary(seconds, len(events), latencies), lines


def run_distributed(query: str, events: list[Any], options: dict[str, Any]) -> tuple[
    dict[str, Any], list[str]
]:  # fmt: skip
    """The CEP pipeline over ``events``: its lines, report and where the time went."""
    lines: list[str] = []
    with query_pipeline(query, **options) as pipeline:  # type: ignore[arg-type]
        report = pipeline.run(events, lines.append)
    result = report.as_dict()
    result["instance_busy_seconds"] = [s["busy_seconds"] for s in report.instance_stats]
    return result, lines


_GROUPS = (
    ("cep/", "cep (operators, splitter, merger)"),
    ("shards/", "chronoray shards (vertex execution, logging)"),
    ("ephemeral/", "chronoray live computations"),
    ("vertex/", "chronoray vertex model"),
    ("rocksdict", "RocksDB"),
    ("Rdict", "RocksDB"),
    ("pickle", "pickling"),
)


def profile(
    query: str, events: list[Any], options: dict[str, Any], top: int = 12
) -> dict[str, Any]:
    """Where an in-process run of ``query`` spends its time: own time per package and the
    functions with the most own time."""
    pipeline = query_pipeline(query, **{**options, "runtime": "local", "instances": 1})  # type: ignore[arg-type]
    profiler = cProfile.Profile()
    try:
        profiler.runcall(pipeline.run, events, lambda line: None, latency=False)
    finally:
        pipeline.close()
    stats = pstats.Stats(profiler)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    groups: dict[str, float] = {}
    functions = []
    for (path, line, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{path}:{name}"
        group = next((label for key, label in _GROUPS if key in where), "other (Python, stdlib)")
        groups[group] = groups.get(group, 0.0) + own
        functions.append((own, f"{Path(path).parent.name}/{Path(path).name}:{line}({name})"))
    functions.sort(reverse=True)
    return {
        "events": len(events),
        "seconds": total,
        "by_package": {g: s / total for g, s in sorted(groups.items(), key=lambda kv: -kv[1])},
        "top_functions": [(name, own / total) for own, name in functions[:top]],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_700_000, help="Lines generated.")
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--instances", type=int, default=2)
    parser.add_argument("--shards", type=int, default=1, help="Q2: shards per instance graph.")
    parser.add_argument("--runtime", choices=["ray", "local"], default="ray")
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--d", type=int, default=3600, help="Q2 window in seconds.")
    parser.add_argument("--community", choices=["component", "clique"], default="component")
    parser.add_argument("--profile", type=int, default=50_000, help="Events profiled per query.")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    reference = dict(zip(("q1", "q2"), _reference(), strict=True))
    workdir = Path(tempfile.mkdtemp(prefix="chronoray-bench-cep-"))
    try:
        counts = generate(workdir / "data", events=args.events, seed=args.seed, days=args.days)
        files = DebsFiles.in_dir(workdir / "data")
        started = time.perf_counter()
        events_by_query = {
            q: list(read_stream(files.only(*kinds))[0]) for q, kinds in QUERY_FILES.items()
        }
        read_seconds = time.perf_counter() - started
        read_events = sum(len(e) for e in events_by_query.values())
        options = {
            "instances": args.instances,
            "runtime": args.runtime,
            "batch_size": args.batch_size,
        }
        q2_options = {"k": args.k, "d": args.d, "community": args.community, "shards": args.shards}
        queries: dict[str, Any] = {}
        for query, events in events_by_query.items():
            own = {**options, **(q2_options if query == "q2" else {})}
            oracle = reference[query]
            make = oracle if query == "q1" else (
                lambda evs, o=oracle: o(evs, args.k, args.d, args.community)
            )  # fmt: skip
            ref, ref_lines = run_reference(make, events)
            dist, dist_lines = run_distributed(query, events, own)
            queries[query] = {
                "reference": ref,
                "distributed": dist,
                "lines": len(ref_lines),
                "equal": dist_lines == ref_lines,
                "profile": profile(query, events[: args.profile], own),
            }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "benchmark": "cep",
        "machine": machine(),
        "generated": counts,
        "read": {
            "events": read_events,
            "seconds": read_seconds,
            "rate": read_events / read_seconds,
        },
        "params": vars(args) | {"out": str(args.out)},
        "queries": queries,
    }
    write_results(args.out, "cep", result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    p = result["params"]
    lines = [
        f"# GraphCEP: DEBS 2016 Q1 and Q2, {p['runtime']} runtime, {p['instances']} instances",
        "",
        f"A generated stream of {sum(result['generated'].values()):,} events over {p['days']:g}"
        f" days (seed {p['seed']}); Q2 with k={p['k']}, d={p['d']} s, {p['community']}, "
        f"{p['shards']} shard(s) per instance graph; batches of {p['batch_size']:,}. "
        f"{result['machine']['cpus']} CPUs, shared machine. Reading the files: "
        f"{result['read']['rate']:,.0f} events/s (not included below). Reference points "
        "(GraphCEP, Java, one thread per query): Q1 156-210 k events/s, mean latency 0.046"
        " ms; Q2 219-282 k events/s, 0.071 ms.",
        "",
        "| query | implementation | events | seconds | events/s | latency mean ms | p99 ms |"
        " lines | equal |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for query, q in result["queries"].items():
        for name in ("reference", "distributed"):
            r = q[name]
            lines.append(
                f"| {query.upper()} | {name} | {r['events']:,} | {r['seconds']:.2f} |"
                f" {r['rate']:,.0f} | {r['latency_mean_ms']:.3f} | {r['latency_p99_ms']:.3f} |"
                f" {q['lines']:,} | {q['equal']} |"
            )
    lines += [
        "",
        "Where the distributed run's time goes (driver seconds; instances' busy time):",
        "",
    ]
    lines += ["| query | read + split | waiting on instances | merge + write | instances busy |"]
    lines += ["|---|---:|---:|---:|---|"]
    for query, q in result["queries"].items():
        d = q["distributed"]
        busy = " / ".join(f"{b:.1f}" for b in d["instance_busy_seconds"])
        lines.append(
            f"| {query.upper()} | {d['split_seconds']:.1f} | {d['wait_seconds']:.1f} |"
            f" {d['merge_seconds']:.1f} | {busy} |"
        )
    for query, q in result["queries"].items():
        prof = q["profile"]
        lines += [
            "",
            f"Profile of {query.upper()} in process, one instance, {prof['events']:,} events"
            " (share of own time):",
            "",
            "| package | share |",
            "|---|---:|",
        ]
        lines += [f"| {g} | {s:.0%} |" for g, s in prof["by_package"].items()]
        lines += ["", "| function | share |", "|---|---:|"]
        lines += [f"| `{name}` | {s:.1%} |" for name, s in prof["top_functions"][:8]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
