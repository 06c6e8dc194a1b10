"""`mesh demo`: the whole experiment catalogue on the embedded mesh, with its verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from grpc_resilience_mesh.cli import chaos_cmd, chaos_run
from grpc_resilience_mesh.cli.chaos_results import PageOpt, ResultsPage
from grpc_resilience_mesh.cli.json_out import JsonOpt, human_output_to_stderr
from grpc_resilience_mesh.services.topology import INSTANCES, PEERS, SERVICES

console = Console()


def demo(
    reports: Annotated[Path, typer.Option(help="Folder for the reports.")] = Path("reports"),
    state_dir: Annotated[Path, typer.Option(help="State of the demo mesh.")] = Path("var/chaos"),
    json_path: JsonOpt = Path("reports/demo.json"),
    results_page: PageOpt = None,
) -> None:
    """Start the embedded mesh, run every experiment of the catalogue, print the verdict.

    The experiments run in the order the lesson builds: deadlines and timeouts, retries,
    retry storms, breakers, bulkheads, shedding, then the background jobs. Exits 0 when every
    experiment ran (whether or not its hypothesis held: the verdict says which did);
    `mesh chaos run --all` exits 1 when one did not hold. Without mesh-xds built (`make
    xds-plane`) the demo leaves out the variants that need it and names them. Ctrl-C, SIGTERM
    and SIGHUP stop the mesh, then exit 130, 143 or 129; a second one within 5 s stops at once.
    """
    # Names only: the session loads and checks every file once, before the mesh starts (a
    # second load here cost 2.4 s of policy parsing before the banner).
    names = chaos_cmd.catalogue_names()
    page = None
    if results_page is not None:
        page = ResultsPage(results_page, f"mesh demo --results {results_page}")
    with human_output_to_stderr(json_path, console, chaos_cmd.console):
        console.print(
            f"[bold]mesh demo[/bold]: {len(names)} experiments on the embedded mesh "
            f"({len(SERVICES)} services in {len(INSTANCES)} processes with the replicas, and "
            f"{' and '.join(p.name for p in PEERS)}, behind the embedded Toxiproxy, every "
            "process on 127.0.0.1), "
            "from deadlines to background jobs"
        )
        results = chaos_run.execute(
            names,
            None,
            json_path,
            reports,
            state_dir,
            short_sweeps=True,
            page=page,
            leave_out_xds=True,
        )
        broken = [r.name for r in results if r.aborted]
        if broken:
            console.print(f"[red]aborted: {', '.join(broken)}[/red]")
            raise typer.Exit(1)
