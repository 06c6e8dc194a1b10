"""Seed 000's trap over real grpc.aio: Recommend always UNAVAILABLE, Popular healthy."""

from __future__ import annotations

import asyncio
from collections import Counter

import grpc
import grpc.aio

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import recommendation_pb2, recommendation_pb2_grpc
from tests.integration.resilience.servers import serving


class Recommendations(recommendation_pb2_grpc.RecommendationServiceServicer):
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def Recommend(self, request: object, context: grpc.aio.ServicerContext) -> None:
        self.calls["Recommend"] += 1
        await context.abort(grpc.StatusCode.UNAVAILABLE, "primary down")

    async def Popular(
        self, request: object, context: grpc.aio.ServicerContext
    ) -> recommendation_pb2.RecommendResponse:
        self.calls["Popular"] += 1
        return recommendation_pb2.RecommendResponse(source="popular")


async def scenario(scope: str, parallel: bool) -> tuple[Counter[str], Counter[str]]:
    fake = Recommendations()
    policy = from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 5.0, "attempt_s": 2.0},
            "retry": {"max_attempts": 3, "base_backoff_s": 0.01, "budget": {"enabled": False}},
            "breaker": {
                "scope": scope,
                "consecutive_failures": 5,
                "failure_rate": None,
                "open_s": 60.0,
            },
            "bulkhead": {"enabled": False},
        },
    )
    served: Counter[str] = Counter()

    def register(server: grpc.aio.Server) -> None:
        recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(fake, server)

    async with serving(register) as target:
        pipeline = build_pipeline(
            policy, dependency="recommendation", bus=EventBus(), clock=SystemClock()
        )
        channel = resilient_channel(
            target,
            ResilienceInterceptor(pipeline, dependency="recommendation", clock=SystemClock()),
            native_retry=policy.native_retry,
        )
        stub = recommendation_pb2_grpc.RecommendationServiceStub(channel)

        async def home() -> None:
            try:
                await stub.Recommend(recommendation_pb2.RecommendRequest(user_id="u"))
                served["primary"] += 1
                return
            except grpc.aio.AioRpcError:
                pass
            try:
                await stub.Popular(recommendation_pb2.PopularRequest())
                served["fallback"] += 1
            except grpc.aio.AioRpcError:
                served["failed"] += 1

        if parallel:
            for _ in range(2):
                await asyncio.gather(*(home() for _ in range(8)))
        else:
            for _ in range(10):
                await home()
        await channel.close()
    return fake.calls, served


async def test_per_method_breakers_sequential() -> None:
    calls, served = await scenario("method", parallel=False)
    assert calls["Recommend"] == 5
    assert served == Counter(fallback=10)


async def test_per_method_breakers_parallel_all_served() -> None:
    calls, served = await scenario("method", parallel=True)
    # Over a real wire all 8 first attempts are in flight before any failure returns, so the
    # breaker can only stop what comes after: the 8 first attempts plus, at worst, the retries
    # of the first 4 failures whose backoff ended before the 5th failure opened the breaker;
    # never the 48 of no breaker. (The fake-wire unit test, where failures return one by one,
    # pins the seed's 5.)
    assert calls["Recommend"] <= 12
    assert served == Counter(fallback=16)


async def test_shared_breaker_sequential_never_opens() -> None:
    calls, served = await scenario("dependency", parallel=False)
    assert calls["Recommend"] == 30
    assert served == Counter(fallback=10)


async def test_shared_breaker_parallel_rejects_the_fallback() -> None:
    calls, served = await scenario("dependency", parallel=True)
    assert served["failed"] >= 8
    assert calls["Popular"] < 16
