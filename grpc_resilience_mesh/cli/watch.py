"""`mesh watch`: the edge table of `mesh status`, redrawn in place until Ctrl-C."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.live import Live

from grpc_resilience_mesh.cli.status import StateDirOpt, console, edge_view, running_state
from grpc_resilience_mesh.console.view import MeshView


def watch(
    state_dir: StateDirOpt = None,
    interval: Annotated[
        float, typer.Option(min=0.5, max=10.0, help="Seconds between refreshes.")
    ] = 1.0,
    count: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many refreshes.")
    ] = None,
) -> None:
    """A live terminal view of every edge (rates, p50/p99, breakers, bulkheads, budgets,
    faults), refreshed every INTERVAL seconds; Ctrl-C stops it."""
    state = running_state(state_dir, "mesh watch")
    view = MeshView(state, window_s=max(5.0, interval * 2))
    done = 0
    try:
        view.metrics.refresh()
        with Live(console=console, auto_refresh=False, transient=False) as live:
            while count is None or done < count:
                time.sleep(interval)
                snap = view.snapshot()
                title = (
                    f"mesh watch (policy {snap['policy']}; every {interval:g}s; ms; Ctrl-C stops)"
                )
                live.update(edge_view(snap, title), refresh=True)
                done += 1
    except KeyboardInterrupt:
        pass
    finally:
        view.close()
