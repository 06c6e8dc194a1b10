"""The methods no server layer of the mesh refuses, faults, traces or authenticates: the
library's (health, reflection) and FaultAdmin, which must answer when a service is sick."""

from __future__ import annotations

from grpc_aio_resilience import EXEMPT_PREFIXES

EXEMPT: tuple[str, ...] = (*EXEMPT_PREFIXES, "/mesh.v1.FaultAdmin/")


def is_exempt(method: str) -> bool:
    return method.startswith(EXEMPT)
