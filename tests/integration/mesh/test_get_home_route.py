"""The GetHome route docs/architecture.md lists is made of files a GetHome really runs: one call
through the real gateway, recommendation and profile (serve(), in this process), traced."""

from __future__ import annotations

import grpc.aio

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.hardening.inproc_services import serving
from tests.support.call_trace import files_run_by
from tests.support.doc_routes import get_home_route


async def test_every_file_of_the_get_home_route_runs_on_a_get_home() -> None:
    async with serving(env={"MESH_AUTH": "off", "MESH_POLICY": "full"}) as served:
        async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            request = gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3)
            await stub.GetHome(request)  # warm: the popular cache, first connections

            async def one_get_home() -> None:
                reply = await stub.GetHome(request)
                assert reply.profile.user_id == "u-0001"
                assert list(reply.degraded) == []

            ran = await files_run_by(one_get_home)
    route = get_home_route()
    assert [f for f in route if f not in ran] == []
    assert "grpc_resilience_mesh/services/profile/servicer.py" in ran  # the call reached profile
