"""The adaptive throttle against a real grpc.aio server with a fixed capacity: at 10x offered
load the refusals that reach the server stay within K = 2 per accepted call."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

import grpc
import grpc.aio

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.errors import ClientThrottledError
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving

REQUEST = profile_pb2.GetProfileRequest(user_id="u-0001")
CAPACITY_PER_S = 40.0
OVERLOAD = 10
SECONDS = 4.0


@dataclass
class Capacity:
    """Admits CAPACITY_PER_S calls a second (a token bucket, 100 ms of burst); refuses the rest
    with RESOURCE_EXHAUSTED and a pushback, as a server's limit does."""

    tokens: float = 0.0
    last_s: float = 0.0
    admitted: int = 0
    refused: int = 0

    async def handle(self, _: object, context: grpc.aio.ServicerContext) -> None:
        now = time.monotonic()
        elapsed = now - self.last_s if self.last_s else 0.0
        self.tokens = min(CAPACITY_PER_S / 10, self.tokens + CAPACITY_PER_S * elapsed)
        self.last_s = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            self.admitted += 1
            return
        self.refused += 1
        context.set_trailing_metadata((("grpc-retry-pushback-ms", "200"),))
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "over capacity")


def throttled_edge() -> EdgePolicy:
    return from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 2.0, "attempt_s": 2.0},
            "retry": {"max_attempts": 1},
            "breaker": {"enabled": False},
            "bulkhead": {"enabled": False},
            "throttle": {"enabled": True, "k": 2, "window_s": 2, "min_requests": 10},
        },
    )


async def test_at_10x_overload_at_most_two_refusals_reach_the_server_per_accepted_call() -> None:
    capacity = Capacity()
    bus = EventBus()
    clock = SystemClock()
    pipeline = build_pipeline(
        throttled_edge(), dependency="profile", bus=bus, clock=clock, rng=random.Random(5)
    )
    async with serving(profile_servicer(ProfileFake(capacity.handle))) as target:
        channel = resilient_channel(
            target, ResilienceInterceptor(pipeline, dependency="profile", clock=clock)
        )
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        throttled = 0

        async def one() -> None:
            nonlocal throttled
            try:
                await stub.GetProfile(REQUEST, timeout=2.0)
            except ClientThrottledError:
                throttled += 1
            except grpc.aio.AioRpcError:
                pass

        interval_s = 1.0 / (CAPACITY_PER_S * OVERLOAD)
        calls = []
        started_s = time.monotonic()
        warm: tuple[int, int, int, float] | None = None
        for i in range(int(SECONDS * CAPACITY_PER_S * OVERLOAD)):  # bounded in count ...
            calls.append(asyncio.create_task(one()))
            if warm is None and time.monotonic() - started_s >= SECONDS / 2:
                warm = (i, capacity.admitted, capacity.refused, time.monotonic())
            if time.monotonic() - started_s > 3 * SECONDS:  # ... and in time
                break
            delay_s = started_s + (i + 1) * interval_s - time.monotonic()
            await asyncio.sleep(max(delay_s, 0.0))  # paced by the schedule, not the last sleep
        ended_s = time.monotonic()
        await asyncio.gather(*calls)
        await channel.close()
    assert warm is not None
    wanted = len(calls) - warm[0]
    admitted = capacity.admitted - warm[1]
    refused = capacity.refused - warm[2]
    elapsed_s = ended_s - warm[3]
    print(
        f"second half ({elapsed_s:.1f} s): offered {wanted / elapsed_s:.0f}/s "
        f"({wanted / elapsed_s / CAPACITY_PER_S:.1f}x), reached {(admitted + refused) / wanted:.3f}"
        f", refusals per accept {refused / admitted:.2f}, admitted/s {admitted / elapsed_s:.1f}"
    )
    assert throttled > 0
    assert refused <= 2 * admitted
    assert (admitted + refused) / wanted < 0.5  # most of the 10x never left the client
