"""Server pushback honoured on the wire: wait at least the hint, -1 stops, 0 retries at once."""

from __future__ import annotations

import time

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving

REQUEST = profile_pb2.GetProfileRequest(user_id="u1")


def failing_first(code: grpc.StatusCode, pushback_ms: str, failures: int = 1) -> ProfileFake:
    fake = ProfileFake()

    async def handler(_: object, context: grpc.aio.ServicerContext) -> None:
        if len(fake.arrivals_s) <= failures:
            await context.abort(code, "busy", (("grpc-retry-pushback-ms", pushback_ms),))

    fake.handler = handler
    return fake


def edge() -> EdgePolicy:
    return from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 5.0, "attempt_s": 2.0},
            "retry": {"max_attempts": 3, "base_backoff_s": 0.01, "max_backoff_s": 0.02},
        },
    )


async def call_once(target: str) -> grpc.StatusCode:
    pipeline = build_pipeline(edge(), dependency="profile", bus=EventBus(), clock=SystemClock())
    channel = resilient_channel(
        target, ResilienceInterceptor(pipeline, dependency="profile", clock=SystemClock())
    )
    try:
        await profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=5.0)
        return grpc.StatusCode.OK
    except grpc.aio.AioRpcError as err:
        return err.code()
    finally:
        await channel.close()


@pytest.mark.parametrize("code", [grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE])
async def test_next_attempt_waits_at_least_the_pushback(code: grpc.StatusCode) -> None:
    fake = failing_first(code, "200")
    async with serving(profile_servicer(fake)) as target:
        assert await call_once(target) is grpc.StatusCode.OK
    assert len(fake.arrivals_s) == 2
    assert fake.arrivals_s[1] - fake.arrivals_s[0] >= 0.2


async def test_negative_pushback_means_no_retry() -> None:
    fake = failing_first(grpc.StatusCode.UNAVAILABLE, "-1")
    async with serving(profile_servicer(fake)) as target:
        assert await call_once(target) is grpc.StatusCode.UNAVAILABLE
    assert len(fake.arrivals_s) == 1


async def test_zero_pushback_retries_immediately_and_does_not_hang() -> None:
    fake = failing_first(grpc.StatusCode.UNAVAILABLE, "0", failures=2)
    async with serving(profile_servicer(fake)) as target:
        started_s = time.monotonic()
        assert await call_once(target) is grpc.StatusCode.OK
        elapsed_s = time.monotonic() - started_s
    assert len(fake.arrivals_s) == 3
    assert elapsed_s < 1.0
