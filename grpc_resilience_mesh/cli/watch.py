"""`mesh watch`: the edge table of `mesh status`, redrawn in place until Ctrl-C."""

from __future__ import annotations

import time
from collections.abc import Iterator
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
    try:
        view.metrics.refresh()
        if console.is_terminal:
            with Live(console=console, auto_refresh=False, transient=False) as live:
                for shown in _views(view, interval, count, window_s):
                    live.update(shown, refresh=True)
        else:
            # Piped (`| cat`, `| tee`, a log): Live could not redraw in place and would print
            # only at the end, nothing at all until Ctrl-C; each refresh is printed below the last.
            for shown in _views(view, interval, count, window_s):
                console.print(shown)
                console.file.flush()
    except KeyboardInterrupt:
        pass
    finally:
        view.close()


def _views(view: MeshView, interval: float, count: int | None, window_s: float) -> Iterator[Any]:
    """One rendering of the edge table every `interval` seconds, `count` times (None: forever)."""
    done = 0
    while count is None or done < count:
        time.sleep(interval)
        snap = view.snapshot()
        at = time.strftime("%H:%M:%S")
        title = (
            f"mesh watch at {at} (policy {snap['policy']}; every {interval:g}s; ms; Ctrl-C stops)"
        )
        note = idle_note(snap, window_s)
        yield edge_view(snap, title) if note is None else Group(edge_view(snap, title), note)
        done += 1
