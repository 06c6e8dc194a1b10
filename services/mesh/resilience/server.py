"""Everything a service mounts on its grpc.aio server from this package, in order."""

from __future__ import annotations

from collections.abc import Sequence

import grpc.aio

from mesh.resilience.deadline import inbound_deadline, time_remaining
from mesh.resilience.events import EventBus
from mesh.resilience.fault_admin import FaultAdminServicer
from mesh.resilience.faults import FaultInterceptor, FaultSpec, FaultTable, FaultValidationError
from mesh.resilience.inbound import EXEMPT_PREFIXES, InboundInterceptor
from mesh.resilience.policy import ServerPolicy
from mesh.resilience.shedding import SheddingInterceptor

__all__ = [
    "EXEMPT_PREFIXES",
    "FaultAdminServicer",
    "FaultSpec",
    "FaultTable",
    "FaultValidationError",
    "inbound_deadline",
    "server_interceptors",
    "time_remaining",
]


def server_interceptors(
    service_name: str,
    policy: ServerPolicy,
    bus: EventBus,
    faults: FaultTable,
    admission: Sequence[grpc.aio.ServerInterceptor] = (),
) -> list[grpc.aio.ServerInterceptor]:
    """Outermost first: deadline capture (and call counting) -> admission -> shedding -> faults.

    Counting outermost records every attempt received, refused ones included: `admission` (the
    gateway's per-key rate limit) sits inside it so its refusals are counted too. Faults
    innermost act like a slow or failing handler, so shedding sees an injected delay as it
    would a real one.
    """
    return [
        InboundInterceptor(service_name, bus),
        *admission,
        SheddingInterceptor(service_name, policy, bus),
        FaultInterceptor(service_name, faults, bus),
    ]
