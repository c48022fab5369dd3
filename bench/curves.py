"""Scaling curves (``python -m bench curves``; a long runner: minutes per point at
10 M events), drawn as PNGs on the results page:

* **stream growth** -- CollegeMsg copies (the graph stays 1,899 vertices / 20,296 edges
  while the stream grows) at each of ``--sizes`` events, replayed into chronoray on Ray:
  ingest time, shard memory, log size and the latency of a snapshot at the middle time;
* **shards** -- the same stream at ``--shard-size`` events with 1, 2 and 4 shards;
* **Spark versus networkx** -- the social stream at each of ``--graph-sizes`` events (the
  graph grows), compared side by side (:func:`bench.compare.compare`): PageRank plus
  components in networkx, plain Spark on Parquet and chronoray (its Ray analyses and its
  Spark analyses through RayDP), so the size where Spark pays off shows.

One trial per point (the curves' shape, not a point's spread, is the result). Each part
is written to ``OUT/framework/curves.json`` as soon as it is done.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.compare import compare
from bench.envs import ensure
from bench.generators import workload
from bench.replay import replay_once
from bench.run import RESULTS, context

__all__ = ["curves_section", "main"]

_MIB = 2**20


def _stream_point(size: int, shards: int, work: Path) -> dict[str, Any]:
    stream = workload("college-copies").write(work / f"copies-{size}.tides", size)
    started = time.perf_counter()
    run = replay_once(stream, "ray", shards=shards, workdir=work / "run")
    stream.path.unlink()
    return {
        "events": stream.events,
        "shards": shards,
        "wall": time.perf_counter() - started,
        "load": os.getloadavg()[0],  # the machine is shared: its load at each point
        **run,
    }


def _spark_point(size: int, work: Path) -> dict[str, Any]:
    stream = workload("social").write(work / f"social-{size}.tides", size)
    result = compare(stream, ["networkx", "spark"], work / f"cmp-{size}")
    stream.path.unlink()
    shutil.rmtree(work / f"cmp-{size}", ignore_errors=True)
    return {"events": stream.events, **result}


def _save(out: Path, data: dict[str, Any]) -> None:
    (out / "framework").mkdir(parents=True, exist_ok=True)
    (out / "framework" / "curves.json").write_text(json.dumps(data, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench curves", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", default="100000,300000,1000000,3000000,10000000")
    parser.add_argument("--shard-size", type=int, default=1_000_000)
    parser.add_argument("--graph-sizes", default="10000,100000,1000000")
    parser.add_argument("--parts", default="stream,shards,spark", help="Which curves.")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    path = args.out / "framework" / "curves.json"
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    work = Path(tempfile.mkdtemp(prefix="chronoray-curves-"))
    try:
        if "stream" in parts:
            data["stream"] = {
                "context": context(
                    "college-copies, ray, 2 shards, as fast as possible, 1 trial per point"
                ),
                "points": [],
            }
            for size in (int(s) for s in args.sizes.split(",")):
                data["stream"]["points"].append(_stream_point(size, 2, work))
                _save(args.out, data)
                print("stream", size, "done", flush=True)
        if "shards" in parts:
            data["shards"] = {
                "context": context(
                    f"college-copies, {args.shard_size:,} events, ray, as fast as possible"
                ),
                "points": [],
            }
            for shards in (1, 2, 4):
                data["shards"]["points"].append(_stream_point(args.shard_size, shards, work))
                _save(args.out, data)
                print("shards", shards, "done", flush=True)
        if "spark" in parts:
            for system in ("networkx", "spark"):
                ensure(system)
            data["spark"] = {"context": context("social, compared side by side"), "points": []}
            for size in (int(s) for s in args.graph_sizes.split(",")):
                data["spark"]["points"].append(_spark_point(size, work))
                _save(args.out, data)
                print("spark", size, "done", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    from bench.page import write_page

    print(f"wrote {write_page(args.out)}")
    return 0


# -- the page's section --------------------------------------------------------------------------


def _figure(
    title: str,
    ctx: dict[str, Any],
    panels: list[tuple[str, str, list[tuple[str, list[float], list[float]]]]],
    path: Path,
) -> None:
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), squeeze=False)
    for ax, (xlabel, ylabel, series) in zip(axes[0], panels, strict=True):
        for label, xs, ys in series:
            ax.plot(xs, ys, marker="o", label=label)
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if len(series) > 1:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=11)
    versions = ", ".join(f"{k} {v}" for k, v in ctx["versions"].items())
    m = ctx["machine"]
    note = (
        f"{ctx['note']}; {m['cpus']} CPUs, {m['memory_gib']} GiB, {m['system']}, "
        f"load {ctx['load'][0]:.1f}; {versions}; {ctx['date']}"
    )
    fig.text(0.01, 0.005, "\n".join(textwrap.wrap(note, 170)), fontsize=6, va="bottom")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _ctx_line(ctx: dict[str, Any]) -> str:
    m = ctx["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in ctx["versions"].items())
    return (
        f"_{ctx['note']}; {m['cpus']} CPUs, {m['memory_gib']} GiB, {m['system']}, "
        f"load average {' / '.join(f'{x:.1f}' for x in ctx['load'])}; {versions}; "
        f"{ctx['date']}_"
    )


def curves_section(data: dict[str, Any], out: Path) -> list[str]:
    """The page's scaling section (tables and PNGs) from ``curves.json``."""
    lines = ["## Scaling curves", ""]
    if "stream" in data and data["stream"]["points"]:
        pts = data["stream"]["points"]
        xs = [p["events"] for p in pts]
        _figure(
            "chronoray as the stream grows (CollegeMsg copies, ray, 2 shards)",
            data["stream"]["context"],
            [
                ("events", "ingest seconds", [("ingest", xs, [p["seconds"] for p in pts])]),
                (
                    "events",
                    "shard RSS growth MiB",
                    [("rss", xs, [p["rss_growth_bytes"] / _MIB for p in pts])],
                ),
                ("events", "log MiB", [("log", xs, [p["log_bytes"] / _MIB for p in pts])]),
                (
                    "events",
                    "snapshot at mid T, s",
                    [("snapshot", xs, [p["snapshot_mid_seconds"] for p in pts])],
                ),
            ],
            out / "framework" / "curve-stream.png",
        )
        lines += [
            "### As the stream grows",
            "",
            _ctx_line(data["stream"]["context"]),
            "",
            "| events | ingest s | updates/s | shard RSS growth MiB | log MiB | log B/event "
            "| snapshot at mid T s | reopen s | load average |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {p['events']:,} | {p['seconds']:.1f} | {p['updates_per_second']:,.0f} "
            f"| {p['rss_growth_bytes'] / _MIB:,.0f} | {p['log_bytes'] / _MIB:,.1f} "
            f"| {p['log_bytes_per_event']:.0f} | {p['snapshot_mid_seconds']:.2f} "
            f"| {p['reopen_seconds']:.1f} | {_load(p)} |"
            for p in pts
        ]
        lines += ["", "![stream growth](framework/curve-stream.png)", ""]
    if "shards" in data and data["shards"]["points"]:
        pts = data["shards"]["points"]
        xs = [p["shards"] for p in pts]
        _figure(
            "chronoray as shards grow (CollegeMsg copies, ray)",
            data["shards"]["context"],
            [
                (
                    "shards",
                    "updates/s",
                    [("updates/s", xs, [p["updates_per_second"] for p in pts])],
                ),
                (
                    "shards",
                    "snapshot at mid T, s",
                    [("snapshot", xs, [p["snapshot_mid_seconds"] for p in pts])],
                ),
            ],
            out / "framework" / "curve-shards.png",
        )
        lines += [
            "### As shards grow",
            "",
            _ctx_line(data["shards"]["context"]),
            "",
            "| shards | events | ingest s | updates/s | shard CPU us/update "
            "| snapshot at mid T s |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {p['shards']} | {p['events']:,} | {p['seconds']:.1f} "
            f"| {p['updates_per_second']:,.0f} "
            f"| {p['cpu_us_per_update']['shards']:.0f} | {p['snapshot_mid_seconds']:.2f} |"
            for p in pts
        ]
        lines += ["", "![shards](framework/curve-shards.png)", ""]
    if "spark" in data and data["spark"]["points"]:
        lines += _spark_section(data["spark"], out)
    return lines


def _load(point: dict[str, Any]) -> str:
    return f"{point['load']:.0f}" if "load" in point else ""


def _analysis_seconds(run: dict[str, Any], prefix: str = "") -> float:
    s = run["seconds"]
    return s[f"{prefix}pagerank"] + s[f"{prefix}components"]


def _spark_section(part: dict[str, Any], out: Path) -> list[str]:
    pts = part["points"]
    xs = [p["oracle"]["edges"] for p in pts]
    series = {
        "networkx": [_analysis_seconds(p["runs"]["networkx"]) for p in pts],
        "Spark on Parquet (local)": [_analysis_seconds(p["runs"]["spark"]) for p in pts],
        "chronoray (Ray)": [_analysis_seconds(p["runs"]["chronoray"]) for p in pts],
        "chronoray Spark (RayDP)": [
            _analysis_seconds(p["runs"]["chronoray"], "spark ") for p in pts
        ],
    }
    _figure(
        "PageRank + components as the graph grows (social stream)",
        part["context"],
        [("edges at T", "seconds", [(k, xs, v) for k, v in series.items()])],
        out / "framework" / "curve-spark.png",
    )
    lines = [
        "### Spark versus networkx as the graph grows",
        "",
        _ctx_line(part["context"]),
        "",
        "PageRank plus components on the graph at T, seconds (every answer checked against "
        "the oracle first).",
        "",
        "| events | vertices at T | edges at T | " + " | ".join(series) + " |",
        "|---:|---:|---:|" + "---:|" * len(series),
    ]
    for i, p in enumerate(pts):
        lines.append(
            f"| {p['events']:,} | {p['oracle']['vertices']:,} | {p['oracle']['edges']:,} | "
            + " | ".join(f"{v[i]:.2f}" for v in series.values())
            + " |"
        )
    faster = [
        p["oracle"]["edges"]
        for i, p in enumerate(pts)
        if series["Spark on Parquet (local)"][i] < series["networkx"][i]
    ]
    lines += [
        "",
        (
            f"Spark pays off from about {min(faster):,} edges on."
            if faster
            else f"Spark did not pay off up to {max(xs):,} edges on this machine: its fixed "
            "cost per job (planning, scheduling, shuffles on 2 CPUs) outweighs its "
            "parallelism, while networkx's scipy kernels stay in one process's memory."
        ),
        "",
        "![spark versus networkx](framework/curve-spark.png)",
        "",
    ]
    return lines
