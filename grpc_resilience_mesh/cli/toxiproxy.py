"""`mesh toxiproxy`: the embedded Toxiproxy-compatible server on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from grpc_resilience_mesh.launch.real_toxiproxy import TOXIPROXY, RealToxiproxyError, use_server

ServerChoice = Annotated[
    str,
    typer.Option(
        "--toxiproxy",
        envvar=TOXIPROXY.name,
        help="embedded (the default), or real: Toxiproxy 2.12 from .peers/bin (`make peers`).",
    ),
]
"""`--toxiproxy embedded|real` (MESH_TOXIPROXY), shared by `mesh up` and `mesh chaos run`."""


def choose_server(choice: str, command: str, console: Console) -> None:
    """Select the Toxiproxy server for this run; a bad choice or a missing binary exits 2."""
    try:
        use_server(choice)
    except RealToxiproxyError as err:
        console.print(f"[red]{command}:[/red] {err}", soft_wrap=True)
        raise typer.Exit(2) from None


def toxiproxy(
    host: Annotated[
        str, typer.Option(help="Admin API address; keep it on loopback.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Admin API port.")] = 8474,
    config: Annotated[
        Path | None, typer.Option(help="JSON list of proxies to create at start (like -config).")
    ] = None,
    allow_non_loopback: Annotated[
        bool,
        typer.Option(
            "--allow-non-loopback",
            help="Let proxies listen on non-loopback addresses (refused by default, unlike "
            "Toxiproxy).",
        ),
    ] = False,
    server: Annotated[
        str,
        typer.Option(
            envvar=TOXIPROXY.name,
            help="embedded, or real: exec real Toxiproxy 2.12 from .peers/bin (`make peers`).",
        ),
    ] = "embedded",
) -> None:
    """Run the embedded Toxiproxy server (same HTTP API as Toxiproxy 2.12) until Ctrl-C.

    With MESH_TOXIPROXY_TOKEN set, API requests (but GET /version) must send `Authorization:
    Bearer <token>` or get 401; unset (the default), the API is open, as Toxiproxy's."""
    from grpc_resilience_mesh.embedded_toxiproxy.api_token import token_from_env
    from grpc_resilience_mesh.embedded_toxiproxy.server import proxy_loop, run_loop, serve_forever
    from grpc_resilience_mesh.launch.real_toxiproxy import SERVERS

    if config is not None and not config.is_file():
        typer.echo(f"error: --config {config}: no such file", err=True)
        raise typer.Exit(2)
    if server not in SERVERS:
        typer.echo(f"error: --server {server}: expected embedded or real", err=True)
        raise typer.Exit(2)
    token = token_from_env()
    if server == "real":
        _exec_real(host, port, config, token)
    try:
        loop = proxy_loop()
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    run_loop(
        serve_forever(
            host,
            port,
            str(config) if config else None,
            allow_non_loopback=allow_non_loopback,
            token=token,
        ),
        loop,
    )


def _exec_real(host: str, port: int, config: Path | None, token: str | None) -> None:
    """Replace this process with real Toxiproxy (returns only if it cannot: exit 2)."""
    from grpc_resilience_mesh.embedded_toxiproxy.api_token import TOKEN_ENV
    from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxyError, exec_real

    if token:
        typer.echo(f"warning: real Toxiproxy ignores {TOKEN_ENV}: its API is open", err=True)
    try:
        exec_real(host, port, config)
    except RealToxiproxyError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
