"""`mesh fault add|rm --xds`: gRFC A33 faults pushed by the mesh's control plane (`mesh up --xds`)
to the caller's own gRPC client, through the plane's admin HTTP (grpc_resilience_mesh.launch.
xds_faults). `mesh fault list` and `reset` use the same plane beside Toxiproxy and FaultAdmin."""

from __future__ import annotations

from typing import Annotated

import typer

from grpc_resilience_mesh.chaos.experiment.fault_kinds import check_xds_edge
from grpc_resilience_mesh.cli.fault_input import FaultInputError, XdsRequest, xds_request
from grpc_resilience_mesh.cli.status import console
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.launch.xds_faults import PlaneAdmin, XdsFaultError

OWNER = "mesh fault"

XdsOpt = Annotated[
    bool,
    typer.Option(
        "--xds",
        help="An A33 fault in the xDS control plane (mesh up --xds): --delay-ms and/or "
        "--abort-code, at --percent, on --method's route or every call of EDGE.",
    ),
]
DelayMsOpt = Annotated[
    float | None, typer.Option("--delay-ms", help="xDS: delay this share of calls by N ms.")
]
AbortCodeOpt = Annotated[
    str | None, typer.Option("--abort-code", help="xDS: abort this share with CODE.")
]
PercentOpt = Annotated[
    float, typer.Option("--percent", help="xDS: the share of calls, in [0, 100].")
]


def fail(message: str) -> None:
    console.print(f"[red]mesh fault:[/red] {message}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def checked(
    edge: str | None,
    method: str | None,
    delay_ms: float | None,
    abort_code: str | None,
    percent: float,
) -> XdsRequest:
    """The xDS fault asked for, every part checked before the mesh is contacted (else exit 2)."""
    if edge is None:
        fail("an xDS fault takes EDGE, e.g. gateway_to_recommendation")
    assert edge is not None
    try:
        return xds_request(edge, method, delay_ms, abort_code, percent)
    except FaultInputError as err:
        fail(str(err))
        raise


def plane_of(state: MeshState) -> PlaneAdmin | None:
    """The running mesh's control plane, or None when it runs without --xds."""
    url = state.extra.get("xds_admin")
    return PlaneAdmin(url, state.admin_token) if url else None


def needed_plane(state: MeshState) -> PlaneAdmin:
    plane = plane_of(state)
    if plane is None:
        fail(
            f"the mesh on {state.state_dir} runs without xDS: an xDS fault needs `mesh up "
            "--xds` (its control plane, mesh-xds, is built by `make peers`)"
        )
    assert plane is not None
    return plane


def describe(asked: XdsRequest) -> str:
    parts = []
    if asked.abort is not None:
        parts.append(f"abort {asked.abort[0]:g}% {asked.abort[1]}")
    if asked.delay is not None:
        parts.append(f"delay {asked.delay[0]:g}% x {asked.delay[1] * 1000:g} ms")
    where = f"{asked.method} calls" if asked.method else "every call"
    return f"{' and '.join(parts)} on {asked.edge.name} ({where})"


def add(state: MeshState, asked: XdsRequest) -> None:
    plane = needed_plane(state)
    try:
        version = plane.add(asked.edge, asked.method, OWNER, asked.abort, asked.delay)
    except XdsFaultError as err:
        fail(str(err))
    typer.echo(f"Pushed xDS fault: {describe(asked)}, version {version}")


def remove(state: MeshState, edge: str, method: str | None) -> None:
    try:
        found = check_xds_edge(edge)
    except ValueError as err:
        fail(f"EDGE: {err}")
    plane = needed_plane(state)
    try:
        removed = plane.remove(found, method)
    except XdsFaultError as err:
        fail(str(err))
    where = f"{edge} {method}" if method else edge
    typer.echo(f"Removed {removed} xDS fault{'' if removed == 1 else 's'} on {where}")
