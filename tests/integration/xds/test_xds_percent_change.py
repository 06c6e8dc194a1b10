"""A33's share changed on a route that has a fault already: grpcio 1.85 ACKs the new percentage and
goes on injecting the old one, so `mesh fault --xds` and the runner push the route without its fault
first (grpc_resilience_mesh.launch.xds_faults.PlaneAdmin.add). The second test pins gRPC's
behaviour: when it fails, gRPC applies a percentage change itself and the extra push can go."""

from __future__ import annotations

import math

import grpc
import pytest

from grpc_resilience_mesh.launch.xds_faults import PlaneAdmin
from grpc_resilience_mesh.services.topology import edge
from grpc_resilience_mesh.services.v1 import profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving
from tests.integration.xds.plane import Plane, listener_name, one_edge, xds_channel
from tests.integration.xds.test_xds_wire import PATH, outcome

pytestmark = pytest.mark.slow
CALLS = 400
FOUR_SIGMA = 4 * math.sqrt(0.3 * 0.7 / CALLS)  # 0.092 of 400 calls at 30%


async def aborted_share(stub: profile_pb2_grpc.ProfileServiceStub) -> float:
    codes = [await outcome(stub) for _ in range(CALLS)]
    return codes.count(grpc.StatusCode.UNAVAILABLE) / CALLS


async def test_mesh_faults_second_push_on_a_route_applies_its_new_share(plane: Plane) -> None:
    async with serving(profile_servicer(ProfileFake())) as addr:
        plane.put({"nodes": {"gateway": {"profile": {"endpoints": [addr]}}}})
        admin, on = PlaneAdmin(f"http://{plane.admin}", plane.token), edge("gateway_to_profile")
        admin.add(on, "GetProfile", "mesh fault", abort=(100.0, "UNAVAILABLE"))
        channel = xds_channel("profile")
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        first = await aborted_share(stub)
        admin.add(on, "GetProfile", "mesh fault", abort=(30.0, "UNAVAILABLE"))
        second = await aborted_share(stub)
        await channel.close()
    assert first == 1.0
    assert abs(second - 0.3) <= FOUR_SIGMA, second


async def test_grpc_keeps_the_old_share_when_only_the_percentage_changes(plane: Plane) -> None:
    name = listener_name()
    async with serving(profile_servicer(ProfileFake())) as addr:
        fault = {"path": PATH, "abort_percent": 100, "abort_code": "UNAVAILABLE"}
        plane.put(one_edge(name, [addr], faults=[fault]))
        channel = xds_channel(name)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        first = await aborted_share(stub)
        plane.put(one_edge(name, [addr], faults=[{**fault, "abort_percent": 30}]))
        second = await aborted_share(stub)
        await channel.close()
    assert first == 1.0
    assert second == 1.0, f"gRPC applied the new share ({second:.3f}): drop the extra push"
