"""`mesh load`: the console's background load from the command line (start, stop, status), through
the running console's own API, so the page and the terminal see and steer one and the same load."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated, Any

import typer

from grpc_resilience_mesh.cli.status import StateDirOpt
from grpc_resilience_mesh.client.state import STATE_DIR
from grpc_resilience_mesh.console import address
from grpc_resilience_mesh.console.background_load import MAX_RATE_PER_S

app = typer.Typer(
    help="Background load on the running mesh (the console's): start, stop, status.",
    no_args_is_help=True,
)


def _ask(state_dir: Path | None, path: str, body: dict[str, Any] | None = None) -> Any:
    """One call to the running console's API; exit 2 with one line when there is none or it
    refuses."""
    where = state_dir or Path(STATE_DIR.read())
    found = address.find(where)
    if found is None:
        typer.echo(
            f"mesh load: no console runs for the mesh in {where} (the load runs in `mesh up`'s "
            "console: start the mesh with `mesh up`, without --no-console, or pass --state-dir)",
            err=True,
        )
        raise typer.Exit(2)
    request = urllib.request.Request(found.url.rstrip("/") + path)
    request.add_header("Authorization", f"Bearer {found.token}")
    if body is not None:
        request.data = json.dumps(body).encode()
        request.add_header("Content-Type", "application/json")
        request.add_header("X-Mesh-Console", "1")
    try:
        with urllib.request.urlopen(request, timeout=15) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as err:
        reason = json.loads(err.read() or b"{}").get("error", err.reason)
        typer.echo(f"mesh load: the console refused: {reason}", err=True)
    except (urllib.error.URLError, OSError, ValueError) as err:
        typer.echo(f"mesh load: cannot reach the console at {found.url}: {err}", err=True)
    raise typer.Exit(2)


def describe(load: dict[str, Any]) -> str:
    """One line: what runs (or ran), and its calls so far by outcome."""
    codes = ", ".join(f"{code} {n}" for code, n in sorted(load.get("codes", {}).items()))
    if "rate_per_s" not in load:
        return "load: stopped"
    mix = f"home {load['home']} : checkout {load['checkout']}"
    limit = f" for {load['for_s']:g} s" if load.get("for_s") else " until stopped"
    state = "running" if load.get("running") else "stopped"
    return f"load: {state}, {load['rate_per_s']:g}/s ({mix}){limit}; calls: {codes or 'none yet'}"


@app.command()
def start(
    rate: Annotated[
        float, typer.Option(min=0.1, max=MAX_RATE_PER_S, help="Calls per second offered.")
    ] = 20.0,
    home: Annotated[int, typer.Option(min=0, max=100, help="Share of GetHome calls.")] = 3,
    checkout: Annotated[int, typer.Option(min=0, max=100, help="Share of Checkout calls.")] = 1,
    for_s: Annotated[
        float | None,
        typer.Option("--for", min=0.1, max=86_400, help="Stop by itself after this many seconds."),
    ] = None,
    state_dir: StateDirOpt = None,
) -> None:
    """Offer steady load to the gateway from `mesh up`'s console, replacing any running.

    It runs until `mesh load stop` (or for --for seconds); `mesh watch`, `mesh status` and the
    console show what it does. Example: mesh load start --rate 20 --for 60"""
    body = {"rate_per_s": rate, "home": home, "checkout": checkout, "for_s": for_s}
    typer.echo(describe(_ask(state_dir, "/api/load", body)))


@app.command()
def stop(state_dir: StateDirOpt = None) -> None:
    """Stop the background load (whoever started it: this command or the console's page)."""
    _ask(state_dir, "/api/load/stop", {})
    typer.echo("load: stopped")


@app.command()
def status(state_dir: StateDirOpt = None) -> None:
    """Whether background load runs, at what rate and mix, and its calls so far by outcome."""
    typer.echo(describe(_ask(state_dir, "/api/state")["load"]))
