"""Server side over the wire: load shedding under a burst, seeded faults, FaultAdmin checks."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.events import EventBus
from grpc_resilience_mesh.services.faults.admin import FaultAdminServicer
from grpc_resilience_mesh.services.faults.injection import FaultSpec, FaultTable
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from grpc_resilience_mesh.services.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    profile_pb2,
    profile_pb2_grpc,
)
from tests.integration.resilience.servers import ProfileFake, serving
from tests.support.polling import await_until

GET_PROFILE = "/mesh.v1.ProfileService/GetProfile"
REQUEST = profile_pb2.GetProfileRequest(user_id="u1")


def mount(fake: ProfileFake, faults: FaultTable) -> object:
    def register(server: grpc.aio.Server) -> None:
        profile_pb2_grpc.add_ProfileServiceServicer_to_server(fake, server)
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        admin_pb2_grpc.add_FaultAdminServicer_to_server(FaultAdminServicer(faults), server)

    return register


async def test_burst_beyond_max_in_flight_is_shed_with_pushback() -> None:
    started: list[object] = []

    async def slow(request: object, __: object) -> None:
        started.append(request)
        await asyncio.sleep(0.5)

    bus = EventBus()
    metrics = MeshMetrics(CollectorRegistry(), "profile")
    bus.subscribe(metrics.listener)
    faults = FaultTable()
    policy = ServerPolicy(max_in_flight=4, shed_pushback_ms=200)
    interceptors = server_layers("profile", policy, bus, faults)
    async with serving(mount(ProfileFake(slow), faults), interceptors) as target:  # type: ignore[arg-type]
        async with grpc.aio.insecure_channel(target) as channel:
            stub = profile_pb2_grpc.ProfileServiceStub(channel)

            async def one() -> tuple[grpc.StatusCode, str | None]:
                call = stub.GetProfile(REQUEST, timeout=5.0)
                code = await call.code()
                trailers = dict(await call.trailing_metadata() or ())
                return code, trailers.get("grpc-retry-pushback-ms")

            burst = asyncio.gather(*(one() for _ in range(20)))
            await await_until(lambda: len(started) == 4, what="4 calls in flight")
            health_reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=1.0
            )
            results = await burst
    outcomes = Counter(code for code, _ in results)
    assert outcomes == {grpc.StatusCode.OK: 4, grpc.StatusCode.RESOURCE_EXHAUSTED: 16}
    assert {p for code, p in results if code is not grpc.StatusCode.OK} == {"200"}
    assert health_reply.status == health_pb2.HealthCheckResponse.SERVING
    assert (
        metrics.registry.get_sample_value(
            "mesh_server_shed_total", {"method": GET_PROFILE, "reason": "limit"}
        )
        == 16
    )
    ok = metrics.registry.get_sample_value(
        "mesh_server_calls_total", {"method": GET_PROFILE, "code": "OK"}
    )
    assert ok == 4


async def test_seeded_fault_rate_is_reproducible_and_exempts_admin() -> None:
    seed = 1234
    faults = FaultTable([FaultSpec("*", error_rate=0.3, code=grpc.StatusCode.INTERNAL)], seed)
    interceptors = server_layers("profile", ServerPolicy(), EventBus(), faults)
    async with serving(mount(ProfileFake(), faults), interceptors) as target:  # type: ignore[arg-type]
        async with grpc.aio.insecure_channel(target) as channel:
            stub = profile_pb2_grpc.ProfileServiceStub(channel)
            codes = []
            for _ in range(200):
                call = stub.GetProfile(REQUEST, timeout=5.0)
                codes.append(await call.code())
            listing = await admin_pb2_grpc.FaultAdminStub(channel).ListFaults(
                admin_pb2.ListFaultsRequest(), timeout=5.0
            )
    rng = random.Random(seed)
    expected = sum(rng.random() < 0.3 for _ in range(200))
    assert codes.count(grpc.StatusCode.INTERNAL) == expected
    assert 40 <= expected <= 80
    assert set(codes) == {grpc.StatusCode.OK, grpc.StatusCode.INTERNAL}
    assert [f.method for f in listing.faults] == ["*"]


def test_faults_from_env() -> None:
    table = FaultTable.from_env(
        {
            "MESH_FAULTS": '[{"method": "/mesh.v1.ProfileService/GetProfile", "error_rate": 1,'
            ' "code": "unavailable", "pushback_ms": 100}]',
            "MESH_FAULT_SEED": "7",
        }
    )
    spec = table.lookup(GET_PROFILE)
    assert spec is not None and spec.code is grpc.StatusCode.UNAVAILABLE and spec.pushback_ms == 100
    with pytest.raises(ValueError, match="MESH_FAULTS: error_rate"):
        FaultTable.from_env({"MESH_FAULTS": '[{"method": "*", "error_rate": 2}]'})


@pytest.mark.parametrize(
    ("fault", "field"),
    [
        (admin_pb2.Fault(method="*", code="SLOW"), "fault.code"),
        (admin_pb2.Fault(method="*", error_rate=1.5), "fault.error_rate"),
        (admin_pb2.Fault(method="*", error_rate=-0.1), "fault.error_rate"),
        (admin_pb2.Fault(method="*", delay_s=-1.0), "fault.delay_s"),
        (admin_pb2.Fault(method="", error_rate=0.5), "fault.method"),
    ],
)
async def test_fault_admin_rejects_bad_input_naming_the_field(
    fault: admin_pb2.Fault, field: str
) -> None:
    faults = FaultTable()
    async with serving(mount(ProfileFake(), faults)) as target:  # type: ignore[arg-type]
        async with grpc.aio.insecure_channel(target) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await admin_pb2_grpc.FaultAdminStub(channel).SetFault(
                    admin_pb2.SetFaultRequest(fault=fault), timeout=5.0
                )
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith(field)
    assert faults.list() == []


async def test_fault_admin_sets_applies_and_clears_at_runtime() -> None:
    faults = FaultTable(seed=1)
    interceptors = server_layers("profile", ServerPolicy(), EventBus(), faults)
    async with serving(mount(ProfileFake(), faults), interceptors) as target:  # type: ignore[arg-type]
        async with grpc.aio.insecure_channel(target) as channel:
            admin = admin_pb2_grpc.FaultAdminStub(channel)
            stub = profile_pb2_grpc.ProfileServiceStub(channel)
            fault = admin_pb2.Fault(
                method=GET_PROFILE, error_rate=1.0, code="UNAVAILABLE", pushback_ms=50
            )
            listing = await admin.SetFault(admin_pb2.SetFaultRequest(fault=fault), timeout=5.0)
            assert [f.code for f in listing.faults] == ["UNAVAILABLE"]
            failing = stub.GetProfile(REQUEST, timeout=5.0)
            assert await failing.code() is grpc.StatusCode.UNAVAILABLE
            trailers = dict(await failing.trailing_metadata() or ())
            assert trailers["grpc-retry-pushback-ms"] == "50"
            cleared = await admin.ClearFaults(admin_pb2.ClearFaultsRequest(), timeout=5.0)
            assert list(cleared.faults) == []
            assert await stub.GetProfile(REQUEST, timeout=5.0)
