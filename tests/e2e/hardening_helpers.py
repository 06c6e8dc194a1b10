"""Checks shared by the hardening tests."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.launch.mesh import Mesh


def assert_every_service_serving(mesh: Mesh) -> None:
    """After abuse: every service still answers health SERVING and no process has died."""
    assert mesh.state is not None
    for name, addrs in mesh.state.services.items():
        with grpc.insecure_channel(addrs["listen"]) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
    assert len(mesh.alive()) == len(mesh.procs)
