"""`mesh demo`: bring the mesh up, drive a bounded load through the gateway, summarise."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from chaos.launcher import LaunchError, Mesh, Ports
from chaos.load import LoadResult, run_load

console = Console()


def summary_table(title: str, result: LoadResult) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("requests", "OK", "errors by code", "degraded", "total s", "p50 ms", "p95 ms",
                "p99 ms"):
        table.add_column(col, justify="right")
    codes = result.codes()
    errors = ", ".join(f"{k} {v}" for k, v in sorted(codes.items()) if k != "OK") or "-"
    degraded = sum(1 for o in result.outcomes if o.degraded)
    table.add_row(str(len(result.outcomes)), str(codes.get("OK", 0)), errors, str(degraded),
                  f"{result.elapsed_s:.2f}", f"{result.latency_ms(50):.1f}",
                  f"{result.latency_ms(95):.1f}", f"{result.latency_ms(99):.1f}")
    return table


def demo(
    requests: Annotated[int, typer.Option(help="Requests to send (bounded).")] = 400,
    concurrency: Annotated[int, typer.Option(help="Requests in flight.")] = 8,
    state_dir: Annotated[Path, typer.Option(help="Where the demo mesh keeps its files.")]
    = Path("var/demo"),
) -> None:
    """Start the embedded mesh on free ports, send a bounded mixed load, print the summary."""
    mesh = Mesh(state_dir=state_dir, ports=Ports.auto())
    with console.status("starting the mesh (4 services behind the embedded Toxiproxy)..."):
        try:
            state = mesh.start()
        except LaunchError as err:
            console.print(f"[red]could not start the mesh:[/red] {err}")
            raise typer.Exit(1) from None
    try:
        with Progress(console=console) as progress:
            task = progress.add_task("GetHome + Checkout through the gateway", total=requests)
            result = asyncio.run(run_load(
                state.gateway, requests=requests, concurrency=concurrency,
                rpc_mix=("home", "home", "home", "checkout"), timeout_s=2.0,
                on_outcome=lambda _: progress.advance(task),
            ))
    finally:
        codes = mesh.stop()
    console.print(summary_table("steady state (no faults)", result))
    console.print("stopped: " + ", ".join(f"{k} ({v})" for k, v in codes.items()))
    if result.codes().get("OK", 0) != len(result.outcomes):
        raise typer.Exit(1)
