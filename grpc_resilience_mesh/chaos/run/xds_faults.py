"""An experiment's `xds` fault (gRFC A33), set and removed through the mesh's xDS control
plane (grpc_resilience_mesh.launch.xds_faults), owned "experiment" so the kill switch removes it and
leaves the policy's own `xds.faults` alone."""

from __future__ import annotations

import asyncio

from grpc_resilience_mesh.chaos.experiment.model import XdsFault
from grpc_resilience_mesh.launch.xds_faults import PlaneAdmin, xds_edge

OWNER = "experiment"


def _plane(admin_url: str | None, token: str | None) -> PlaneAdmin:
    if admin_url is None:
        raise RuntimeError(
            "an xds fault needs the mesh under xDS: a variant with `xds: true`, "
            "`mesh chaos run --xds`, or a --target started by `mesh up --xds`"
        )
    return PlaneAdmin(admin_url, token)


async def set_xds_fault(
    admin_url: str | None, fault: XdsFault, on: bool, token: str | None = None
) -> None:
    """Push the fault (on) or remove it from its route (off); `token`: the run's admin token."""
    plane = _plane(admin_url, token)
    edge = xds_edge(fault.edge)
    if not on:
        await asyncio.to_thread(plane.remove, edge, fault.method)
        return
    abort = (fault.abort_percent, fault.abort_code) if fault.abort_percent > 0 else None
    delay = (fault.delay_percent, fault.delay_s) if fault.delay_percent > 0 else None
    await asyncio.to_thread(plane.add, edge, fault.route_method, OWNER, abort, delay)


async def reset_xds_faults(admin_url: str | None, token: str | None = None) -> None:
    """Every fault set at run time removed from the plane (none: the mesh is not under xDS)."""
    if admin_url is not None:
        await asyncio.to_thread(PlaneAdmin(admin_url, token).remove)
