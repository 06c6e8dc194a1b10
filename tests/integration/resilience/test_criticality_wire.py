"""Criticality crosses real hops like the deadline: a call made while serving a SHEDDABLE call
carries SHEDDABLE on; the gateway sets its own per RPC and ignores what its client sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.criticality import METADATA_KEY
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.services.gateway import servicer as gateway
from grpc_resilience_mesh.services.runtime.server import serve
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    profile_pb2,
    profile_pb2_grpc,
    recommendation_pb2,
    recommendation_pb2_grpc,
)
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving
from tests.integration.resilience.test_deadlines_wire import (
    REQUEST,
    interceptors,
    roomy_edge,
)
from tests.support.polling import await_until


def criticality_of(context: grpc.aio.ServicerContext) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == METADATA_KEY:
            return str(value)
    return None


async def b_sees(sent: str | None) -> list[str | None]:
    """client -(sent)-> A -> B, through real servers and A's resilient channel: what B saw."""
    bus = EventBus()
    seen: list[str | None] = []

    async def b_handler(_: object, context: grpc.aio.ServicerContext) -> None:
        seen.append(criticality_of(context))

    async with serving(profile_servicer(ProfileFake(b_handler)), interceptors("b", bus)) as b:
        pipeline = build_pipeline(roomy_edge(), dependency="b", bus=bus, clock=SystemClock())
        channel = resilient_channel(
            b, ResilienceInterceptor(pipeline, dependency="b", clock=SystemClock())
        )
        stub = profile_pb2_grpc.ProfileServiceStub(channel)

        async def a_handler(request: Any, _: grpc.aio.ServicerContext) -> Any:
            return await stub.GetProfile(request)

        async with serving(profile_servicer(ProfileFake(a_handler)), interceptors("a", bus)) as a:
            async with grpc.aio.insecure_channel(a) as client:
                metadata = () if sent is None else ((METADATA_KEY, sent),)
                await profile_pb2_grpc.ProfileServiceStub(client).GetProfile(
                    REQUEST, timeout=5.0, metadata=metadata
                )
        await channel.close()
    return seen


async def test_a_call_made_while_serving_a_sheddable_call_carries_sheddable_on() -> None:
    assert await b_sees("SHEDDABLE") == ["SHEDDABLE"]


async def test_a_call_that_named_no_criticality_passes_none_on() -> None:
    assert await b_sees(None) == [None]


async def test_an_unknown_value_is_not_passed_on() -> None:
    assert await b_sees("URGENT!!") == [None]


class RecommendationFake(recommendation_pb2_grpc.RecommendationServiceServicer):
    """Records the criticality of each call by method; Recommend fails when told to."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.recommend_fails = False

    async def Recommend(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.seen.append(("Recommend", criticality_of(context)))
        if self.recommend_fails:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no picks today")
        return recommendation_pb2.RecommendResponse(source="personalised")

    async def StreamRecommend(
        self, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        self.seen.append(("StreamRecommend", criticality_of(context)))
        product = recommendation_pb2.Product(product_id="p1", title="t")
        yield recommendation_pb2.RankedProduct(product=product, rank=1)

    async def Popular(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.seen.append(("Popular", criticality_of(context)))
        product = recommendation_pb2.Product(product_id="p1", title="t")
        return recommendation_pb2.RecommendResponse(products=[product], source="popular")


@asynccontextmanager
async def gateway_before(
    recs: RecommendationFake, profile_seen: list[str | None] | None = None
) -> AsyncIterator[str]:
    """The real gateway (serve(), policy full, fallback cache never fresh) before fakes."""

    async def profile_handler(_: profile_pb2.GetProfileRequest, context: Any) -> None:
        if profile_seen is not None:
            profile_seen.append(criticality_of(context))

    register_recs = lambda s: recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(  # noqa: E731
        recs, s
    )
    async with (
        serving(register_recs) as recommendation,
        serving(profile_servicer(ProfileFake(profile_handler))) as profile,
    ):
        listen = f"127.0.0.1:{free_port()}"
        env = {
            "LISTEN_ADDR": listen,
            "ADMIN_ADDR": "127.0.0.1:0",
            "METRICS_ADDR": "127.0.0.1:0",
            "MESH_POLICY": "full",
            "MESH_POLICY__FALLBACKS__POPULAR_TTL_S": "0",
            "SHUTDOWN_GRACE_S": "0.5",
            "MESH_AUTH": "off",
            "RECOMMENDATION_ADDR": recommendation,
            "PROFILE_ADDR": profile,
            "PAYMENT_ADDR": f"127.0.0.1:{free_port()}",
        }
        stop = asyncio.Event()
        task = asyncio.create_task(serve("gateway", gateway.build, env, stop_event=stop))
        try:
            await await_until(lambda: bool(recs.seen), timeout_s=10.0, what="the warm-up")
            yield listen
        finally:
            stop.set()
            await asyncio.wait_for(task, timeout=20)


async def get_home(target: str, criticality: str | None = None) -> gateway_pb2.GetHomeResponse:
    metadata = () if criticality is None else ((METADATA_KEY, criticality),)
    async with grpc.aio.insecure_channel(target) as channel:
        reply = await gateway_pb2_grpc.GatewayStub(channel).GetHome(
            gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3), timeout=5.0, metadata=metadata
        )
    return reply  # type: ignore[no-any-return]


async def test_get_home_is_critical_and_the_popular_refresh_sheddable_at_recommendation() -> None:
    recs = RecommendationFake()
    profile_seen: list[str | None] = []
    async with gateway_before(recs, profile_seen) as target:
        assert recs.seen == [("Popular", "SHEDDABLE")]  # the start-up warm-up
        recs.seen.clear()
        await get_home(target)
        recs.recommend_fails = True
        reply = await get_home(target)
    assert [d.served_by for d in reply.degraded] == ["popular"]
    assert recs.seen == [
        ("Recommend", "CRITICAL"),
        ("Recommend", "CRITICAL"),
        ("Popular", "SHEDDABLE"),  # refreshed for the degraded answer, shed first
    ]
    assert profile_seen == ["CRITICAL", "CRITICAL"]


async def test_a_public_client_cannot_raise_its_criticality_at_the_gateway() -> None:
    recs = RecommendationFake()
    async with gateway_before(recs) as target:
        recs.seen.clear()
        await get_home(target, "CRITICAL_PLUS")
        await get_home(target, "SHEDDABLE")
    assert recs.seen == [("Recommend", "CRITICAL"), ("Recommend", "CRITICAL")]


async def test_a_stream_through_the_gateway_carries_the_gateways_criticality() -> None:
    recs = RecommendationFake()
    async with gateway_before(recs) as target:
        recs.seen.clear()
        async with grpc.aio.insecure_channel(target) as channel:
            stream = gateway_pb2_grpc.GatewayStub(channel).StreamRecommendations(
                gateway_pb2.GetHomeRequest(user_id="u-0001", limit=1),
                timeout=5.0,
                metadata=((METADATA_KEY, "CRITICAL_PLUS"),),
            )
            items = [item async for item in stream]
    assert len(items) == 1
    assert recs.seen == [("StreamRecommend", "CRITICAL")]  # the policy's default


async def test_the_reserve_goes_by_the_criticality_the_server_settled() -> None:
    """The admission layer sheds by the criticality the inbound layer settled: where a service
    assigns its own (the gateway), a client that claims CRITICAL_PLUS is still what the service
    said, so the places kept for critical calls stay theirs; elsewhere the caller's value
    counts, SHEDDABLE included (the lowest level is not "none")."""
    from grpc_aio_resilience.admission_policy import LimitPolicy, ServerPolicy
    from grpc_aio_resilience.criticality import Criticality
    from grpc_aio_resilience.inbound import AssignCriticality
    from grpc_resilience_mesh.services.faults.injection import FaultTable
    from grpc_resilience_mesh.services.runtime.server_chain import server_layers

    async def handler(_: object, __: grpc.aio.ServicerContext) -> None:
        return None

    def assigning(level: Criticality) -> AssignCriticality:
        return lambda _method: level

    # One place in all, and all of it kept for critical calls: a sheddable call never gets in.
    policy = ServerPolicy(max_in_flight=1, limit=LimitPolicy(critical_reserve=0.9))
    cases: list[tuple[str, AssignCriticality | None, str]] = [
        (
            "assigned SHEDDABLE, claims CRITICAL_PLUS",
            assigning(Criticality.SHEDDABLE),
            "CRITICAL_PLUS",
        ),
        ("assigned CRITICAL, claims SHEDDABLE", assigning(Criticality.CRITICAL), "SHEDDABLE"),
        ("caller's SHEDDABLE", None, "SHEDDABLE"),
        ("caller's CRITICAL", None, "CRITICAL"),
    ]
    codes: dict[str, str] = {}
    for case, assign, sent in cases:
        layers = server_layers("a", policy, EventBus(), FaultTable(), assign_criticality=assign)
        async with serving(profile_servicer(ProfileFake(handler)), layers) as target:
            async with grpc.aio.insecure_channel(target) as client:
                try:
                    await profile_pb2_grpc.ProfileServiceStub(client).GetProfile(
                        REQUEST, timeout=5.0, metadata=((METADATA_KEY, sent),)
                    )
                    codes[case] = "OK"
                except grpc.aio.AioRpcError as err:
                    codes[case] = err.code().name
    assert codes == {
        "assigned SHEDDABLE, claims CRITICAL_PLUS": "RESOURCE_EXHAUSTED",
        "assigned CRITICAL, claims SHEDDABLE": "OK",
        "caller's SHEDDABLE": "RESOURCE_EXHAUSTED",
        "caller's CRITICAL": "OK",
    }, codes
