"""`mesh up`: the four services (and the embedded Toxiproxy) as local processes."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from chaos.launcher import LaunchError, Mesh, MeshState, Ports

console = Console()


def state_table(state: MeshState) -> Table:
    table = Table(title=f"mesh is up (policy: {state.policy})", title_justify="left")
    table.add_column("service")
    table.add_column("gRPC")
    table.add_column("admin (loopback)")
    table.add_column("metrics")
    table.add_column("pid", justify="right")
    for name, addrs in state.services.items():
        table.add_row(
            name, addrs["listen"], addrs["admin"], addrs["metrics"], str(state.pids.get(name, ""))
        )
    return table


def proxy_table(state: MeshState) -> Table:
    table = Table(
        title=f"edges (Toxiproxy API {state.toxiproxy or 'off: --direct'})", title_justify="left"
    )
    table.add_column("proxy / edge")
    table.add_column("caller connects to")
    table.add_column("upstream")
    for name, p in state.proxies.items():
        table.add_row(name, p["listen"], p["upstream"])
    return table


def up(
    policy: Annotated[
        str, typer.Option(help="Preset (unprotected, retry-only, full) or YAML file.")
    ] = "full",
    direct: Annotated[bool, typer.Option("--direct", help="Skip the Toxiproxy proxies.")] = False,
    gateway_port: Annotated[int, typer.Option(help="Gateway port on 127.0.0.1.")] = 50051,
    auto_ports: Annotated[
        bool, typer.Option("--auto-ports", help="Pick free ports for everything.")
    ] = False,
    state_dir: Annotated[Path, typer.Option(help="Ledger, logs, traces and mesh.json.")] = Path(
        "var"
    ),
) -> None:
    """Start the mesh on 127.0.0.1, wait until all of it is SERVING, stay in the foreground.

    Ctrl-C or SIGTERM stops every process cleanly.
    """
    ports = Ports.auto() if auto_ports else Ports.default(gateway_port)
    mesh = Mesh(state_dir=state_dir, ports=ports, direct=direct, policy=policy)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with console.status("starting the mesh..."):
        try:
            state = mesh.start()
        except LaunchError as err:
            console.print(f"[red]mesh up failed:[/red] {err}")
            console.print("nothing was left running.")
            raise typer.Exit(1) from None
    console.print(state_table(state))
    console.print(proxy_table(state))
    console.print(
        f"\ntry:  [bold]mesh call home --user u-0001[/bold]   "
        f"(gateway {state.gateway}; state in {state_dir / 'mesh.json'})"
    )
    if state.api_key:
        console.print(
            "\nthe gateway wants an API key (generated for this run unless MESH_API_KEYS is set):\n"
            f"  export MESH_API_KEY={state.api_key}   # `mesh call` also finds it in mesh.json\n"
            f"  grpcurl -plaintext -H 'authorization: Bearer {state.api_key}' "
            f'-d \'{{"user_id": "u-0001"}}\' {state.gateway} mesh.v1.Gateway/GetHome'
        )
    if mesh.tls_dir is not None:
        console.print(f"TLS between services: on (certificates in {mesh.tls_dir})")
    console.print("Ctrl-C stops everything.")
    while not stop.wait(0.5):
        dead = [p.name for p in mesh.procs if p.popen.poll() is not None]
        if dead:
            console.print(f"[red]{', '.join(dead)} exited unexpectedly; stopping the mesh[/red]")
            mesh.stop()
            raise typer.Exit(1)
    codes = mesh.stop()
    console.print("stopped: " + ", ".join(f"{k} ({v})" for k, v in codes.items()))
