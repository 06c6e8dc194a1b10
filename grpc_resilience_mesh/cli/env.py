"""`mesh env`: the running mesh's Toxiproxy API address and token as shell lines, so that
curl and any Toxiproxy client can reach an API that wants the token (`eval "$(mesh env)"`)."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from grpc_resilience_mesh.cli.status import StateDirOpt
from grpc_resilience_mesh.client.state import STATE_DIR, STATE_FILE, MeshState
from grpc_resilience_mesh.embedded_toxiproxy.api_token import TOKEN_ENV

URL_ENV = "TOXIPROXY_URL"
"""The name toxiproxy-cli reads its API address from (its --host)."""


def env_lines(toxiproxy: str, token: str | None) -> list[str]:
    """`export` lines for a POSIX shell; an empty token when the API is open
    (MESH_ADMIN_AUTH=off), which the API then ignores."""
    return [
        f"export {URL_ENV}={shlex.quote(toxiproxy)}",
        f"export {TOKEN_ENV}={shlex.quote(token or '')}",
    ]


def _fail(message: str) -> typer.Exit:
    """An error on stderr only: stdout is meant for `eval`."""
    typer.echo(f"mesh env: {message}", err=True)
    return typer.Exit(2)


def env(state_dir: StateDirOpt = None) -> None:
    """Print the running mesh's Toxiproxy API address and token as `export` lines:
    eval "$(mesh env)", then curl or any Toxiproxy client can reach the API.

    TOXIPROXY_URL is the address (the name toxiproxy-cli reads), MESH_TOXIPROXY_TOKEN the token
    (empty under MESH_ADMIN_AUTH=off, when the API is open). Errors go to stderr only."""
    where = state_dir or Path(STATE_DIR.read())
    try:
        state = MeshState.load(where)
    except (OSError, ValueError, TypeError) as err:
        raise _fail(f"{where / STATE_FILE}: unreadable ({err})") from None
    if state is None:
        raise _fail(f"no running mesh: {where / STATE_FILE} not found (start one with `mesh up`)")
    if state.toxiproxy is None:
        raise _fail("this mesh runs without Toxiproxy (mesh up --direct)")
    for line in env_lines(state.toxiproxy, state.admin_token):
        typer.echo(line)
