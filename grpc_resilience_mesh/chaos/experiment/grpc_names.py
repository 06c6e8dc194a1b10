"""The gRPC names an experiment or `mesh fault` may write: a mesh service's methods (from the
generated descriptors) and the status code names, each refusal with the close one."""

from __future__ import annotations

import grpc
import grpc_health.v1.health_pb2  # noqa: F401 - registers grpc.health.v1.Health's descriptor
from google.protobuf import descriptor_pool

import grpc_resilience_mesh.services.v1.gateway_pb2
import grpc_resilience_mesh.services.v1.payment_pb2
import grpc_resilience_mesh.services.v1.profile_pb2
import grpc_resilience_mesh.services.v1.recommendation_pb2  # noqa: F401 - registers the services' descriptors
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.services import topology

STATUS_CODES = tuple(c.name for c in grpc.StatusCode if c is not grpc.StatusCode.OK)
"""Every gRPC status code name a fault may end a call with (OK is no fault)."""


def methods(service: str) -> tuple[str, ...]:
    """The gRPC methods a mesh service serves (from the generated descriptors)."""
    spec = topology.service(service)
    found = descriptor_pool.Default().FindServiceByName(spec.grpc_service)
    return tuple(m.name for m in found.methods)


def check_method(service: str, method: str) -> None:
    """`method` is *, a method `service` serves, or its full /package.Service/Method name."""
    if method == "*":
        return
    served = methods(service)
    short = method
    if method.startswith("/"):
        grpc_service, _, short = method[1:].partition("/")
        wanted = topology.service(service).grpc_service
        if grpc_service != wanted:
            raise ValueError(f"method {shown(method)}: {service} serves /{wanted}/...")
    if short not in served:
        raise ValueError(
            f"method {shown(method)}: {service} serves {', '.join(served)}"
            f"{did_you_mean(short, served)}"
        )


def check_code(code: str) -> str:
    """A status code name other than OK, else ValueError with the close one."""
    if code not in STATUS_CODES:
        why = "is no fault" if code == "OK" else "is not a gRPC status code name"
        raise ValueError(f"code {shown(code)} {why}{did_you_mean(code, STATUS_CODES)}")
    return code
