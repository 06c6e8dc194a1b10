"""`mesh topology up FILE`: a topology held up (grpc_resilience_mesh/chaos/topology/held.py) for
drivers that start no processes, such as Chaos Toolkit running an exported topology experiment."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.topology.held import DEFAULT_STATE, STATE_VAR, HeldTopology
from grpc_resilience_mesh.chaos.topology.proxies import ProxyError
from grpc_resilience_mesh.chaos.topology.services import ServiceNotReady

app = typer.Typer(help="A topology of your own services, held up.", no_args_is_help=True)
console = Console(stderr=True)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@app.command("up")
def up(
    file: Annotated[Path, typer.Argument(help="A topology file, or a topology experiment.")],
    state: Annotated[
        Path,
        typer.Option(envvar=STATE_VAR.name, help="Where to write what is up (addresses, token)."),
    ] = DEFAULT_STATE,
) -> None:
    """Start the topology as `mesh chaos run` does (Toxiproxy, a proxy per edge, the command
    services), write STATE and stay in the foreground until Ctrl-C; exit 2 on bad input.

    `chaos run` of an exported topology experiment (`mesh chaos export FILE`) finds it through
    STATE (MESH_TOPOLOGY_STATE). On Ctrl-C, SIGTERM or SIGHUP every process it started is
    stopped by its PID and STATE removed."""
    stop = threading.Event()
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda *_: stop.set())
    try:
        with HeldTopology(file, state) as held:
            console.print(
                f"topology {escape(str(held.topology))} up; state in {escape(str(state))}"
            )
            console.print(f"toxiproxy {held.toxiproxy}")
            for edge, listen in held.wiring.proxies.items():
                console.print(f"  {edge}: {listen} -> {held.wiring.upstreams[edge]}")
            console.print("Ctrl-C stops it")
            while not stop.wait(0.5):
                pass
    except (ExperimentError, ProxyError, ServiceNotReady) as err:
        console.print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True)
        raise typer.Exit(2) from None
    console.print("topology stopped")
