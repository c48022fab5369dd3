"""Named graphs: ``chronoray start``, ``ls`` and ``stop``."""

from __future__ import annotations

from pathlib import Path

import click

from chronoray.cli.app import Settings, main
from chronoray.cli.options import Output, log_dir_option, output_options, setting, shards_option
from chronoray.cli.rendering import Column, View, console, note_driver_log, print_view

__all__ = ["ls_cmd", "start", "stop"]


@main.command()
@click.argument("name")
@shards_option
@log_dir_option(required=True, exists=False)
@setting(
    "storage",
    "--storage",
    type=click.Choice(["local", "shared"]),
    default=None,
    help="local: each shard's log on its node's disk; shared: LOG_DIR on shared storage"
    "  [default: local]",
)
@setting(
    "placement",
    "--placement",
    type=click.Choice(["spread", "pack"]),
    default=None,
    help="spread: shards over the cluster's nodes; pack: on one node  [default: spread]",
)
@click.pass_obj
def start(
    settings: Settings,
    name: str,
    shards: int | None,
    log_dir: Path,
    storage: str | None,
    placement: str | None,
) -> None:
    """Start the named graph NAME in the Ray cluster (new, or reopened from LOG_DIR). It
    runs until `chronoray stop NAME`; other commands reach it with --graph NAME."""
    from chronoray.connect import cluster_address
    from chronoray.graph import GraphCluster

    if cluster_address(settings.config()) is None:
        raise click.UsageError(
            "a named graph lives in a Ray cluster: give --address (or CHRONORAY_RAY_ADDRESS), "
            "or run this as a `ray job submit` job; a private Ray would stop with this command"
        )
    graph = GraphCluster.create(
        name,
        settings.config(),
        log_dir=str(log_dir),
        num_shards=shards,
        storage=storage,
        placement=placement,
    )
    nodes = ", ".join(graph.manifest.shard_nodes)
    console.print(
        f"graph [bold]{name}[/] started: {graph.num_shards} shards ({graph.config.storage} "
        f"storage) on nodes {nodes}; logs in {graph.log_dir}"
    )
    graph.close()
    note_driver_log()


@main.command("ls")
@output_options(json_help="Print JSON: a list of objects, one per graph.")
@click.pass_obj
def ls_cmd(settings: Settings, output: Output) -> None:
    """The named graphs running in the Ray cluster."""
    from chronoray.graph import GraphCluster

    rows = []
    for name in GraphCluster.running(settings.config()):
        graph = GraphCluster.attach(name, settings.config())
        status = graph.status()
        rows.append(
            {
                "name": name,
                "shards": graph.num_shards,
                "storage": graph.config.storage,
                "nodes": graph.manifest.shard_nodes,
                "log_dir": str(graph.log_dir),
                "sources": sorted(status.sources),
                "problems": status.describe(),
            }
        )
        graph.close()
    joined = ", ".join
    view = View(
        f"{len(rows)} named graph(s)",
        [
            Column("name", wrap=True, justify="left"),
            Column("shards"),
            Column("storage", 3, justify="left"),
            Column("nodes", 4, wrap=True, justify="left", show=joined),
            Column("log dir", 1, wrap=True, justify="left"),
            Column("sources", 2, wrap=True, justify="left", show=joined),
            Column("problems", 0, wrap=True, justify="left", show=lambda p: "; ".join(p) or "none"),
        ],
        [
            [r[k] for k in ("name", "shards", "storage", "nodes", "log_dir", "sources", "problems")]
            for r in rows
        ],  # fmt: skip
    )
    print_view(view, output, rows)


@main.command()
@click.argument("name")
@click.pass_obj
def stop(settings: Settings, name: str) -> None:
    """Stop the named graph NAME (its sources and shard actors; the logs stay)."""
    from chronoray.graph import GraphCluster

    graph = GraphCluster.attach(name, settings.config())
    graph.shutdown()
    console.print(f"stopped graph [bold]{name}[/]; its logs stay in {graph.log_dir}")
