"""A variant with `xds: true`: the embedded mesh's services restarted into `mesh up --xds`'s
wiring (the gateway and recommendation dialling xds:/// targets, mesh-xds serving them), and
out of it again for the next variant that does not ask for it."""

from __future__ import annotations

import asyncio
import logging

from grpc_resilience_mesh.chaos.experiment.model import Variant
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.xds_plane import XDS_BINARY, missing_extra

log = logging.getLogger("chaos.runner")


def xds_missing() -> str:
    """What this machine lacks to run an `xds: true` variant (mesh-xds built, the xds extra),
    or "": a run skips those variants then, and its plan and progress leave them out."""
    if not XDS_BINARY.is_file():
        return f"needs {XDS_BINARY}: run `make peers` (needs go)"
    return missing_extra() or ""


async def wire_xds(mesh: Mesh | None, variant: Variant, policy: str) -> str:
    """Restart the services into or out of xDS when the variant asks otherwise than the mesh
    runs; why the variant cannot run, or ""."""
    running = mesh is not None and mesh.xds is not None
    if variant.xds == running:
        return ""
    if mesh is None:
        return "an xds variant needs the embedded mesh (its services restart into xDS)"
    missing = xds_missing() if variant.xds else ""
    if missing:
        return f"an xds variant {missing}"
    way = "into" if variant.xds else "out of"
    log.info("%s: restarting the services %s xDS", variant.name, way)
    await asyncio.to_thread(mesh.restart_services, policy, variant.xds)
    return ""
