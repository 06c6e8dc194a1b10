"""A service started with MESH_ADMIN_TOKEN: its FaultAdmin and PolicyAdmin answer only callers
holding the token; anyone else gets UNAUTHENTICATED saying how to send it, and changes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.services.profile import servicer as profile
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.runtime.server import serve
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc

TOKEN = "t0k3n-for-this-test-only-0123456789"
FAULT = admin_pb2.Fault(method="*", error_rate=1.0, code="UNAVAILABLE")


@pytest.fixture
async def admin() -> AsyncIterator[grpc.aio.Channel]:
    listen, admin_addr, metrics = (f"127.0.0.1:{p}" for p in free_ports(3))
    env = {
        "LISTEN_ADDR": listen,
        "ADMIN_ADDR": admin_addr,
        "METRICS_ADDR": metrics,
        "MESH_TRACING": "0",
        "MESH_ADMIN_TOKEN": TOKEN,
    }
    stop = asyncio.Event()
    task = asyncio.create_task(serve("profile", profile.build, env, stop_event=stop))
    try:
        async with grpc.aio.insecure_channel(listen) as channel:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), wait_for_ready=True, timeout=15
            )
        async with grpc.aio.insecure_channel(admin_addr) as channel:
            yield channel
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=20)


async def refused(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value


@pytest.mark.parametrize(
    "metadata",
    [(), admin_metadata("wrong-token-of-the-right-length"), (("authorization", TOKEN),)],
    ids=["missing", "wrong", "not-bearer"],
)
async def test_admin_calls_without_the_token_are_unauthenticated_and_change_nothing(
    admin: grpc.aio.Channel, metadata: tuple[tuple[str, str], ...]
) -> None:
    faults = admin_pb2_grpc.FaultAdminStub(admin)
    policies = admin_pb2_grpc.PolicyAdminStub(admin)
    before = await policies.GetPolicy(
        admin_pb2.GetPolicyRequest(), timeout=5, metadata=admin_metadata(TOKEN)
    )
    calls = [
        faults.SetFault(admin_pb2.SetFaultRequest(fault=FAULT), timeout=5, metadata=metadata),
        faults.ListFaults(admin_pb2.ListFaultsRequest(), timeout=5, metadata=metadata),
        faults.ClearFaults(admin_pb2.ClearFaultsRequest(), timeout=5, metadata=metadata),
        policies.SetPolicy(
            admin_pb2.SetPolicyRequest(yaml="name: x\n"), timeout=5, metadata=metadata
        ),
        policies.GetPolicy(admin_pb2.GetPolicyRequest(), timeout=5, metadata=metadata),
    ]
    for call in calls:
        err = await refused(call)
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "authorization: Bearer <token>" in (err.details() or "")
        assert TOKEN not in (err.details() or "")
    listing = await faults.ListFaults(
        admin_pb2.ListFaultsRequest(), timeout=5, metadata=admin_metadata(TOKEN)
    )
    assert list(listing.faults) == []
    after = await policies.GetPolicy(
        admin_pb2.GetPolicyRequest(), timeout=5, metadata=admin_metadata(TOKEN)
    )
    assert after == before


async def test_with_the_token_admin_calls_work_and_reflection_stays_open(
    admin: grpc.aio.Channel,
) -> None:
    faults = admin_pb2_grpc.FaultAdminStub(admin)
    md = admin_metadata(TOKEN)
    listing = await faults.SetFault(admin_pb2.SetFaultRequest(fault=FAULT), timeout=5, metadata=md)
    assert [f.code for f in listing.faults] == ["UNAVAILABLE"]
    cleared = await faults.ClearFaults(admin_pb2.ClearFaultsRequest(), timeout=5, metadata=md)
    assert list(cleared.faults) == []

    stub = reflection_pb2_grpc.ServerReflectionStub(admin)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    replies = [r async for r in stub.ServerReflectionInfo(iter([request]), timeout=5)]
    names = {s.name for s in replies[0].list_services_response.service}
    assert {"mesh.v1.FaultAdmin", "mesh.v1.PolicyAdmin"} <= names
