"""``chronoray serve``: a gRPC gateway in front of a running graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from chronoray.cli.app import Settings, main
from chronoray.cli.options import PathArg
from chronoray.cli.rendering import console, note_driver_log
from chronoray.config import env_name

__all__ = ["serve"]

F = TypeVar("F", bound=Callable[..., Any])


def gateway_setting(field: str, *decls: str, **kwargs: Any) -> Callable[[F], F]:
    """An option that sets the ``GatewaySettings`` field ``field``, read from the same
    env name (``CHRONORAY_GATEWAY_<FIELD>``) and, below both, the settings file's
    ``[gateway]`` table; its help says its default as ``[default: ...]``."""
    return click.option(
        *decls,
        field,
        envvar=env_name(field, "CHRONORAY_GATEWAY_"),
        show_envvar=True,
        default=None,
        show_default=False,
        **kwargs,
    )


@main.command()
@click.option(
    "--graph",
    "graph_name",
    envvar="CHRONORAY_GRAPH",
    show_envvar=True,
    default=None,
    help="The running named graph to serve (see chronoray ls).",
)
@gateway_setting("host", "--host", help="Address to listen on  [default: 127.0.0.1]")
@gateway_setting("port", "--port", type=click.IntRange(0, 65535), help="Port  [default: 50051]")
@gateway_setting("auth", "--auth/--no-auth", help="Token authentication  [default: --auth]")
@gateway_setting(
    "token_file",
    "--token-file",
    type=PathArg(dir_okay=False),
    help="File holding the token  [default: ~/.chronoray/gateway-token, made if missing]",
)
@gateway_setting(
    "tls_cert",
    "--tls-cert",
    type=PathArg(exists=True, dir_okay=False),
    help="PEM certificate chain; with --tls-key the gateway speaks TLS only.",
)
@gateway_setting(
    "tls_key",
    "--tls-key",
    type=PathArg(exists=True, dir_okay=False),
    help="The PEM key of --tls-cert.",
)
@gateway_setting(
    "max_message_bytes",
    "--max-message-bytes",
    type=int,
    help="Largest message in bytes  [default: 16777216 (16 MiB)]",
)
@gateway_setting(
    "rate_limit",
    "--rate-limit",
    type=float,
    help="Requests per second per client address  [default: 1000]",
)
@gateway_setting(
    "output_dir",
    "--output-dir",
    help="Where snapshots and analyses asked for are written  [default: chronoray-gateway]",
)
@gateway_setting(
    "ingest_window",
    "--ingest-window",
    type=click.IntRange(min=1),
    help="Batches of an ingestion stream taken ahead of their acknowledgement  [default: 4]",
)
@gateway_setting(
    "grace", "--grace", type=float, help="Seconds calls get at shutdown  [default: 10]"
)
@click.option("--detach", is_flag=True, help="Run the gateway as a Ray actor of the graph.")
@click.option("--stop", "stop_actor", is_flag=True, help="Stop the graph's gateway actor.")
@click.pass_obj
def serve(
    settings: Settings, /, graph_name: str | None, detach: bool, stop_actor: bool, **given: Any
) -> None:
    """Serve a running graph over gRPC (chronoray.v1: ingestion, queries, snapshots,
    subscriptions, analyses) until Ctrl-C or the graph stops; or, with --detach, from a
    Ray actor of the graph that lives as long as it does."""
    from chronoray import gateway

    if graph_name is None:
        raise click.UsageError("give --graph NAME (a running graph; see chronoray ls)")
    config = settings.config()
    if stop_actor:
        found = gateway.stop_gateway_actor(graph_name, config)
        console.print(f"stopped the gateway of {graph_name}" if found else "no gateway actor")
        return
    gateway_settings = gateway.GatewaySettings.load(settings.config_file, **given)
    if detach:
        line = gateway.start_gateway_actor(graph_name, gateway_settings, config)
        address = f" --address {config.ray_address}" if config.ray_address else ""
        stop = f"chronoray{address} serve --graph {graph_name} --stop"
        console.print(f"{line}, from a Ray actor (stop it: {stop})")
        return
    served = gateway.serve(graph_name, gateway_settings, config, announce=console.print)
    counters = served.service.counters
    console.print(
        f"stopped: {counters.records:,} records in {counters.batches:,} batches acknowledged"
    )
    note_driver_log()
