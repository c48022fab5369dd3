"""Whole programs: ``chronoray demo``, ``pipeline`` and ``bench`` (the benchmarks of a
source checkout, run as a program of their own)."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import click

from chronoray.cli.app import main
from chronoray.cli.options import TIME_HELP, EventTime, PathArg
from chronoray.cli.rendering import console, note_driver_log

__all__ = ["bench", "demo", "pipeline", "run_checkout_module"]


@main.command(
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> None:
    """Evaluation runs of a source checkout: WORKLOAD [--sizes ...] [--compare
    raphtory,networkx,spark] [--out DIR] (python -m bench; --help for all)."""
    sys.exit(run_checkout_module("bench", args, "chronoray bench"))


def run_checkout_module(module: str, args: Sequence[str], command: str) -> int:
    """Run ``python -m module args`` of the chronoray source checkout in the working
    directory (the benchmarks are a tool of the repository, not a part of the installed
    package: they use chronoray, chronoray does not import them); its exit code."""
    import subprocess

    if not (Path.cwd() / "bench" / "__main__.py").exists():
        raise click.ClickException(
            f"{command} runs from a chronoray source checkout: cd into one and run again"
        )
    return subprocess.run([sys.executable, "-m", module, *args], check=False).returncode


@main.command()
@click.option(
    "--out",
    type=PathArg(path_type=Path),
    default=Path("chronoray-demo"),
    help="Where logs and pictures go (its logs are replaced).",
)
@click.option("--shards", type=click.IntRange(min=1), default=2, help="Shard actors of the graph.")
def demo(out: Path, shards: int) -> None:
    """The main job: ingest CollegeMsg into a local Ray cluster, summarise, draw, travel back
    in time, and run PageRank in Spark on a past snapshot."""
    from chronoray.datasets import collegemsg_path
    from chronoray.demo import run_demo

    log_dir = out / "logs"
    if log_dir.exists():
        shutil.rmtree(log_dir)
    started = time.perf_counter()
    run_demo(collegemsg_path(), out, shards, console)
    console.print(f"[green]demo done[/] in {time.perf_counter() - started:.1f} s; output in {out}/")
    note_driver_log()


@main.command()
@click.option(
    "--out",
    type=PathArg(path_type=Path),
    default=Path("chronoray-pipeline"),
    help="Where the graph's logs and the result go (its logs are replaced).",
)
@click.option(
    "--data",
    type=PathArg(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Ratings CSV (SRC,DST,RATING,TIME)  [default: the shipped Bitcoin OTC copy]",
)
@click.option(
    "--at",
    type=EventTime(),
    default=None,
    help=f"Time of the snapshot Spark analyses: {TIME_HELP}"
    "  [default: 1400000000, 2014-05-13T16:53:20Z]",
)
@click.option("--shards", type=click.IntRange(min=1), default=2, help="Shard actors of the graph.")
def pipeline(out: Path, data: Path | None, at: float | None, shards: int) -> None:
    """Spark as the data pipeline: read Bitcoin OTC with Spark, derive a column, ingest
    it with a live PageRank running, take a snapshot at T, analyse it in Spark, write
    OUT/trust.parquet -- one program, one Spark session."""
    from chronoray.datasets import bitcoinotc_path
    from chronoray.pipeline import AT, run_pipeline

    log_dir = out / "logs"
    if log_dir.exists():
        shutil.rmtree(log_dir)
    run_pipeline(data or bitcoinotc_path(), out, at=AT if at is None else at, shards=shards)
    note_driver_log()
