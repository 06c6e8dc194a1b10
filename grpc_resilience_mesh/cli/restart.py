"""`mesh restart SERVICE`: restart one process of the running `mesh up`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from grpc_resilience_mesh.client.state import STATE_DIR, STATE_FILE, MeshState
from grpc_resilience_mesh.launch.control import ControlUnavailable, request

console = Console()


def restart(
    service: Annotated[
        str,
        typer.Argument(
            help="gateway, profile, recommendation, payment, notification, redis, smtp or "
            "toxiproxy."
        ),
    ],
    state_dir: Annotated[
        Path,
        typer.Option(envvar=STATE_DIR.name, help="The state dir `mesh up` was given."),
    ] = Path("var"),
    timeout_s: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for it to serve again.")
    ] = 90.0,
) -> None:
    """Restart one process of the mesh `mesh up` runs (found through <state dir>/mesh.json):
    SIGTERM, SIGKILL after 10 s if it has not exited, started again on the same ports under
    the same policy. Exit 0 once it serves again, 1 if it does not, 2 for an unknown service
    or when no mesh runs."""
    control = _control_socket(state_dir)
    try:
        reply = request(control, {"op": "restart", "service": service}, timeout_s)
    except ControlUnavailable:
        _refuse(
            f"no mesh is running on {state_dir} ({state_dir / STATE_FILE} is left over "
            "from one that did not stop cleanly); start one with `mesh up`"
        )
    except (OSError, ValueError) as err:
        console.print(f"[red]mesh restart:[/red] no answer from the mesh: {err}", soft_wrap=True)
        raise typer.Exit(1) from None
    if reply.get("unknown"):
        _refuse(str(reply.get("error")))
    if not reply.get("ok"):
        console.print(f"[red]{service} did not come back:[/red] {reply.get('error')}")
        raise typer.Exit(1)
    console.print(
        f"{service} restarted: pid {reply.get('old_pid')} -> {reply.get('pid')}, "
        f"serving again after {float(reply.get('seconds', 0)):.1f} s",
        soft_wrap=True,
    )


def _control_socket(state_dir: Path) -> str:
    """Where the running mesh listens, from its mesh.json; exit 2 when no mesh runs there."""
    try:
        state = MeshState.load(state_dir)
    except (OSError, ValueError, TypeError) as err:
        _refuse(f"cannot read {state_dir / STATE_FILE}: {err}")
    if state is None:
        _refuse(f"no mesh is running on {state_dir} (no {STATE_FILE}); start one with `mesh up`")
    if not state.control:
        _refuse(
            f"the mesh on {state_dir} was not started by `mesh up` (pid {state.owner_pid}): "
            "nothing there restarts services"
        )
    return state.control


def _refuse(message: str) -> NoReturn:
    console.print(f"[red]mesh restart:[/red] {message}", soft_wrap=True)
    raise typer.Exit(2)
