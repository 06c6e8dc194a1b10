"""The wait in front of admission over real hops: the mesh's client sends each attempt's
deadline as `resilience-timeout-ms` to a server with an intake gate (to no other), and a server with
`intake: codel` refuses a call whose header says it waited past N, with RESOURCE_EXHAUSTED, a
pushback and the reason counted."""

from __future__ import annotations

import asyncio

import grpc
import grpc.aio
from prometheus_client import CollectorRegistry

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.intake import TIMEOUT_KEY
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from grpc_resilience_mesh.services.v1 import profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving
from tests.integration.resilience.test_deadlines_wire import REQUEST, interceptors, roomy_edge

CODEL = {"discipline": "codel", "codel_target_s": 0.005, "codel_interval_s": 0.1}


async def test_the_mesh_client_sends_each_attempts_deadline_where_it_is_read() -> None:
    bus = EventBus()
    seen: list[str | None] = []

    async def handler(_: object, context: grpc.aio.ServicerContext) -> None:
        seen.append(dict(context.invocation_metadata() or ()).get(TIMEOUT_KEY))

    async with serving(profile_servicer(ProfileFake(handler)), interceptors("b", bus)) as b:
        for wait_header in (True, False):  # False: the server has no intake gate
            pipeline = build_pipeline(
                roomy_edge(), dependency="b", bus=bus, clock=SystemClock(), wait_header=wait_header
            )
            channel = resilient_channel(
                b, ResilienceInterceptor(pipeline, dependency="b", clock=SystemClock())
            )
            stub = profile_pb2_grpc.ProfileServiceStub(channel)
            await stub.GetProfile(REQUEST, timeout=1.5)
            await channel.close()
    assert seen == ["1500", None]


async def test_a_call_that_waited_past_n_is_refused_and_a_fresh_one_served() -> None:
    bus = EventBus()
    metrics = MeshMetrics(CollectorRegistry(), "profile")
    bus.subscribe(metrics.listener)
    served: list[object] = []

    async def handler(request: object, _: object) -> None:
        served.append(request)

    policy = from_dict(ServerPolicy, {"max_in_flight": 16, "intake": CODEL})
    layers = server_layers("profile", policy, bus, FaultTable())
    async with serving(profile_servicer(ProfileFake(handler)), layers) as target:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = profile_pb2_grpc.ProfileServiceStub(channel)
            # Sent with 2 s of deadline 0.3 s ago, as a call held in a queue would report.
            late = stub.GetProfile(REQUEST, timeout=2.0, metadata=((TIMEOUT_KEY, "2300"),))
            assert await late.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            trailers = dict(await late.trailing_metadata() or ())
            assert trailers.get("grpc-retry-pushback-ms") == "200"
            fresh = stub.GetProfile(REQUEST, timeout=2.0, metadata=((TIMEOUT_KEY, "2000"),))
            assert await fresh.code() == grpc.StatusCode.OK
            unknown = stub.GetProfile(REQUEST, timeout=2.0)  # no header: no wait known
            assert await unknown.code() == grpc.StatusCode.OK
    await asyncio.sleep(0)
    assert len(served) == 2
    sample = metrics.registry.get_sample_value(
        "mesh_server_shed_total",
        {"method": "/mesh.v1.ProfileService/GetProfile", "reason": "intake"},
    )
    assert sample == 1.0
