"""The results page: ``bench/results/README.md`` and its PNG plots, made anew from the
JSON results under ``results/framework/`` (``python -m bench page``). Every table and
figure names its workload, configuration, machine, versions and date; nothing on the
page is typed by hand."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.run import RESULTS

__all__ = ["main", "write_page"]

# why each phase comes out as it does: structural, so it holds whatever the numbers are
_WHY = {
    "load": "chronoray runs every event through a Python vertex behaviour on a shard actor "
    "and logs it to RocksDB before acknowledging it (durable, replayable, live); Raphtory "
    "bulk-loads Arrow columns in Rust; networkx and Spark only read the Parquet file here",
    "view at T": "chronoray rebuilds the cut from its shard logs on Ray (any past T, "
    "consistent, off the live path); Raphtory's view is a filter over its in-memory "
    "temporal index; networkx builds the graph at T in Python; Spark plans and runs jobs",
    "pagerank": "chronoray picks its engine by the snapshot's size (a vectorized kernel "
    "over the snapshot's Arrow tables in the driver for graphs that fit, Pregel on Ray "
    "beyond) and first fetches the tables from the shards' object store; networkx uses "
    "scipy sparse matrices on a graph it holds; Raphtory runs compiled Rust; Spark pays "
    "scheduling per iteration",
    "components": "as PageRank: chronoray's engine chosen by size, its tables fetched first, "
    "against compiled or in-process code",
}
_PHASES = ("load", "view at T", "pagerank", "components")
_ALIASES = {"ingest": "load"}  # chronoray's load is its ingest of the stream


def _ctx(result: dict[str, Any]) -> str:
    c, config = result["context"], result["config"]
    m = c["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in c["versions"].items())
    load = " / ".join(f"{x:.1f}" for x in c["load"])
    return (
        f"{result['workload']} ({result['summary']}); runtime {config['runtime']}, "
        f"{config['shards']} shards, rate {config['rate'] or 'as fast as possible'}, "
        f"{config['trials']} trials; {m['cpus']} CPUs, {m['memory_gib']} GiB, {m['system']}, "
        f"Python {m['python']}, load average {load} at the start; {versions}; {c['date']}"
    )


def _interval(value: dict[str, Any] | None, scale: float = 1.0, digits: int = 0) -> str:
    if not value:
        return ""
    fmt = f"{{:,.{digits}f}}"
    return (
        f"{fmt.format(value['median'] * scale)} "
        f"[{fmt.format(value['low'] * scale)}, {fmt.format(value['high'] * scale)}]"
    )


def _replay_table(result: dict[str, Any]) -> list[str]:
    lines = [
        "| events | updates/s | executions/s | marker latency p50 / p99 ms | RSS B/vertex "
        "| RSS B/edge | log B/event | snapshot at mid T s (first) | reopen s | CPU us/update |",
        "|---:|---:|---:|---|---:|---:|---:|---|---:|---|",
    ]
    for entry in result["sizes"]:
        r = entry["replay"]
        cpu = ", ".join(f"{k} {v['median']:.0f}" for k, v in r["cpu_us_per_update"].items())
        first = _interval(r.get("snapshot_mid_cold_seconds"), digits=2)
        cold = f"({first})" if first else ""
        lines.append(
            f"| {entry['stream']['events']:,} | {_interval(r.get('updates_per_second'))} "
            f"| {_interval(r.get('executions_per_second'))} "
            f"| {_interval(r.get('latency_p50_ms'), digits=1)} / "
            f"{_interval(r.get('latency_p99_ms'), digits=1)} "
            f"| {_interval(r.get('rss_bytes_per_vertex'))} "
            f"| {_interval(r.get('rss_bytes_per_edge'))} "
            f"| {_interval(r.get('log_bytes_per_event'))} "
            f"| {_interval(r.get('snapshot_mid_seconds'), digits=2)} {cold} "
            f"| {_interval(r.get('reopen_seconds'), digits=1)} | {cpu} |"
        )
    return lines


def _phase(run: dict[str, Any], phase: str) -> float | None:
    seconds = {_ALIASES.get(k, k): v for k, v in run["seconds"].items()}
    return seconds.get(phase)


def _compare_table(entry: dict[str, Any]) -> list[str]:
    cmp = entry["compare"]
    lines = [
        f"Cut T = {cmp['at_time']} (after {cmp['at_fraction']:.0%} of the events): "
        f"{cmp['oracle']['vertices']:,} vertices, {cmp['oracle']['edges']:,} edges"
        f"{', edges removed on the way' if cmp['removals'] else ''}. Every answer below equals "
        "the oracle (networkx on the input, in the runner): vertex and edge sets, components, "
        "PageRank within 1e-6 per vertex.",
        "",
        "| system | load / ingest s | view at T s | PageRank s | components s | memory MiB "
        "| max PageRank diff | other |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, run in cmp["runs"].items():
        check = cmp["checks"][name]
        memory = (run["notes"].get("shard_rss_bytes", 0) + run["peak_rss_bytes"]) / 2**20
        other = {
            k: v
            for k, v in run["seconds"].items()
            if _ALIASES.get(k, k) not in _PHASES and k not in ("stop", "memory")
        }
        cells = [f"{_phase(run, p):.3f}" if _phase(run, p) is not None else "" for p in _PHASES]
        lines.append(
            f"| {name} {_version(run)} | {' | '.join(cells)} | {memory:,.0f} "
            f"| {check['max_rank_error']:.1e} "
            f"| {', '.join(f'{k} {v:.2f} s' for k, v in other.items())} |"
        )
    if "chronoray-spark" in cmp["checks"]:
        lines.append(
            f"| chronoray Spark analyses (RayDP) | | | (in other) | (in other) | "
            f"| {cmp['checks']['chronoray-spark']['max_rank_error']:.1e} | |"
        )
    return lines


def _version(run: dict[str, Any]) -> str:
    return " ".join(str(v) for v in run["versions"].values())


def _verdict(entry: dict[str, Any]) -> list[str]:
    """Where chronoray wins and where it loses, phase by phase, against each system, and
    why."""
    runs = entry["compare"]["runs"]
    lines = []
    for phase in _PHASES:
        mine = _phase(runs["chronoray"], phase)
        others = {n: _phase(r, phase) for n, r in runs.items() if n != "chronoray"}
        others = {n: v for n, v in others.items() if v is not None and v > 0}
        if mine is None or not others:
            continue
        wins = [f"{n} {v:.3f} s (x{v / mine:.1f})" for n, v in others.items() if v > mine]
        losses = [f"{n} {v:.3f} s (x{mine / v:.1f})" for n, v in others.items() if v <= mine]
        lines.append(
            f"- **{phase}** -- chronoray {mine:.3f} s; faster than: {', '.join(wins) or 'none'}; "
            f"slower than: {', '.join(losses) or 'none'}. Why: {_WHY[phase]}."
        )
    return lines


def _plot_compare(entry: dict[str, Any], result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = entry["compare"]["runs"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(runs)
    for i, (name, run) in enumerate(runs.items()):
        values = [_phase(run, p) or 0.0 for p in _PHASES]
        ax.bar([x + i * width for x in range(len(_PHASES))], values, width, label=name)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(_PHASES))], _PHASES)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (log)")
    ax.legend()
    _title(fig, f"side by side, {entry['stream']['events']:,} events", result)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _title(fig: Any, what: str, result: dict[str, Any]) -> None:
    import textwrap

    fig.suptitle(f"{result['workload']}: {what}", fontsize=11)
    fig.text(0.01, 0.005, "\n".join(textwrap.wrap(_ctx(result), 150)), fontsize=6, va="bottom")
    fig.subplots_adjust(bottom=0.25, top=0.9)


def _workload_section(result: dict[str, Any], out: Path) -> list[str]:
    name = result["workload"]
    lines = [f"## {name}", "", f"_{_ctx(result)}_", "", "### Replay into chronoray", ""]
    lines += [
        "Median [95 % interval] of the trials (distribution-free; with 5 trials "
        "[min, max], 93.8 %). Marker latency: from offering the last update before a marker "
        "to its being logged (local: run). RSS: growth of the shard processes over the run "
        "(local: this process). CPU: driver = the replayer (and with ray the source feeding "
        "from it), shards, gateway.",
        "",
        *_replay_table(result),
        "",
    ]
    for entry in result["sizes"]:
        if "compare" not in entry:
            continue
        png = f"framework/{name}-compare-{entry['stream']['events']}.png"
        _plot_compare(entry, result, out / png)
        lines += [
            f"### Side by side, {entry['stream']['events']:,} events",
            "",
            *_compare_table(entry),
            "",
            *_verdict(entry),
            "",
            f"![{name} side by side]({png})",
            "",
        ]
    return lines


def write_page(out: Path = RESULTS) -> Path:
    """Make ``out/README.md`` (and the PNGs) from ``out/framework/*.json``."""
    results = [
        json.loads(p.read_text())
        for p in sorted((out / "framework").glob("*.json"))
        if p.name != "curves.json"
    ]
    lines = [
        "# chronoray evaluation results",
        "",
        "Made by `python -m bench page` from `framework/*.json` (written by `python -m bench "
        "WORKLOAD ...` / `chronoray bench`, and `python -m bench curves`; `python -m bench all` "
        "runs every section again as recorded, then this page); do not edit by hand. "
        "Each section names its workload, configuration, machine, load, versions and date. "
        "The machine is a shared 2-CPU VM: compare figures within one run, not across runs.",
        "",
    ]
    curves = out / "framework" / "curves.json"
    if curves.exists():
        from bench.curves import curves_section

        lines += curves_section(json.loads(curves.read_text()), out)
    for result in results:
        lines += _workload_section(result, out)
    page = out / "README.md"
    page.write_text("\n".join(lines).rstrip("\n") + "\n")
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench page", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="Results directory.")
    args = parser.parse_args(argv)
    print(f"wrote {write_page(args.out)}")
    return 0
