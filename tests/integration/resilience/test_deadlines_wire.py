"""Deadline propagation and cancellation across two real hops: client -> A -> B."""

from __future__ import annotations

import asyncio
import time

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving
from tests.support.polling import await_until

REQUEST = profile_pb2.GetProfileRequest(user_id="u1")


def roomy_edge() -> EdgePolicy:
    """Own budgets far above the caller's, so only the propagated deadline can bind."""
    return from_dict(
        EdgePolicy, {"deadline": {"total_s": 30.0, "attempt_s": 30.0}, "retry": {"max_attempts": 1}}
    )


def interceptors(name: str, bus: EventBus) -> list[grpc.aio.ServerInterceptor]:
    return server_layers(name, ServerPolicy(), bus, FaultTable())


class TwoHops:
    """A forwards every GetProfile to B through resilient_channel, recording time remaining."""

    def __init__(self, b_target: str, bus: EventBus) -> None:
        pipeline = build_pipeline(roomy_edge(), dependency="b", bus=bus, clock=SystemClock())
        self.channel = resilient_channel(
            b_target, ResilienceInterceptor(pipeline, dependency="b", clock=SystemClock())
        )
        self.stub = profile_pb2_grpc.ProfileServiceStub(self.channel)
        self.a_remaining_s: list[float] = []

    async def handle(
        self, request: profile_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> profile_pb2.GetProfileResponse:
        self.a_remaining_s.append(context.time_remaining())
        await asyncio.sleep(0.05)  # A's own work before it calls B
        return await self.stub.GetProfile(request)  # type: ignore[no-any-return]


async def test_b_sees_the_deadline_a_was_given_minus_time_spent() -> None:
    bus = EventBus()
    b_remaining_s: list[float] = []

    async def b_handler(_: object, context: grpc.aio.ServicerContext) -> None:
        b_remaining_s.append(context.time_remaining())

    async with serving(profile_servicer(ProfileFake(b_handler)), interceptors("b", bus)) as b:
        hops = TwoHops(b, bus)
        async with serving(profile_servicer(ProfileFake(hops.handle)), interceptors("a", bus)) as a:
            async with grpc.aio.insecure_channel(a) as channel:
                await profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=2.0)
        await hops.channel.close()
    # grpc-timeout goes on the wire rounded up to its unit, so A may see a few ms more than 2 s.
    assert hops.a_remaining_s[0] <= 2.05
    assert 1.5 < b_remaining_s[0] < hops.a_remaining_s[0] - 0.04


async def lag_until_b_is_cancelled_s(how: str) -> float:
    """Seconds from the caller giving up (deadline or cancel) to B's handler being cancelled."""
    bus = EventBus()
    b_cancelled_at_s: list[float] = []

    async def b_handler(_: object, context: grpc.aio.ServicerContext) -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            b_cancelled_at_s.append(time.monotonic())
            raise

    async with serving(profile_servicer(ProfileFake(b_handler)), interceptors("b", bus)) as b:
        hops = TwoHops(b, bus)
        async with serving(profile_servicer(ProfileFake(hops.handle)), interceptors("a", bus)) as a:
            async with grpc.aio.insecure_channel(a) as channel:
                stub = profile_pb2_grpc.ProfileServiceStub(channel)
                started_s = time.monotonic()
                if how == "deadline":
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await stub.GetProfile(REQUEST, timeout=0.3)
                    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
                    gave_up_s = started_s + 0.3
                else:
                    call = stub.GetProfile(REQUEST)
                    await asyncio.sleep(0.3)
                    gave_up_s = time.monotonic()
                    call.cancel()
                await await_until(lambda: b_cancelled_at_s, timeout_s=3.0, what="B cancelled")
        await hops.channel.close()
    assert b_cancelled_at_s, "B's handler was never cancelled"
    return b_cancelled_at_s[0] - gave_up_s


@pytest.mark.parametrize("how", ["deadline", "cancel"])
async def test_b_is_cancelled_within_100ms_of_the_caller_giving_up(how: str) -> None:
    # Three runs: every one must cancel B long before its 10 s of work would end, and the
    # fastest within 100 ms (a scheduler stall on a busy machine can delay one run, not three).
    lags_s = [await lag_until_b_is_cancelled_s(how) for _ in range(3)]
    assert max(lags_s) < 2.0, lags_s
    assert min(lags_s) < 0.1, lags_s
