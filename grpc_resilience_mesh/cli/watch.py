"""`mesh watch`: the edge table of `mesh status`, redrawn in place until Ctrl-C."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.live import Live

from grpc_resilience_mesh.cli.status import StateDirOpt, console, edge_view, running_state
from grpc_resilience_mesh.cli.suggest import mesh_program
from grpc_resilience_mesh.console.view import MeshView


def idle_note(snapshot: dict[str, Any], window_s: float) -> str | None:
    """A line saying the zeros mean no traffic, and how to make some, when no edge saw a call
    over the window (None while any did)."""
    if any(e["stats"]["calls_per_s"] > 0 for e in snapshot["edges"]):
        return None
    return (
        f"no calls in the last {window_s:g} s: start load with "
        f"`{mesh_program()} load start --rate 20` (or `{mesh_program()} call home`)"
    )


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
    window_s = max(5.0, interval * 2)
    view = MeshView(state, window_s=window_s)
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
                note = idle_note(snap, window_s)
                shown = (
                    edge_view(snap, title) if note is None else Group(edge_view(snap, title), note)
                )
                live.update(shown, refresh=True)
                done += 1
    except KeyboardInterrupt:
        pass
    finally:
        view.close()
