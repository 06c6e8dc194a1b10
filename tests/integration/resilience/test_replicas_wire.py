"""Two real replicas behind one edge: gRPC's round_robin or the ReplicaRouter balances them,
a retry lands on the other replica, and outlier ejection takes a failing one out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import events as ev
from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import replica_router, resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving

REQUEST = profile_pb2.GetProfileRequest(user_id="u-0001")


async def unavailable(_: object, context: grpc.aio.ServicerContext) -> None:
    await context.abort(grpc.StatusCode.UNAVAILABLE, "replica A is broken")


@asynccontextmanager
async def replicas(*fakes: ProfileFake) -> AsyncIterator[list[str]]:
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(serving(profile_servicer(f))) for f in fakes]


def edge_channel(
    addresses: list[str], bus: EventBus, *, outlier: bool, attempts: int = 3
) -> grpc.aio.Channel:
    policy = from_dict(
        EdgePolicy,
        {
            "retry": {"max_attempts": attempts, "budget": {"enabled": False}},
            "breaker": {"enabled": False},
            "deadline": {"total_s": 5.0, "attempt_s": 2.0},
        },
    )
    pipeline = build_pipeline(policy, dependency="profile", bus=bus, clock=SystemClock())
    return resilient_channel(
        ",".join(addresses),
        ResilienceInterceptor(pipeline, dependency="profile", clock=SystemClock()),
        outlier=OutlierPolicy(enabled=outlier, base_ejection_s=30.0),
        bus=bus,
        dependency="profile",
    )


async def close(channel: grpc.aio.Channel) -> None:
    router = replica_router(channel)
    if router is not None:
        await router.close()
    await channel.close()


@pytest.mark.parametrize("outlier", [False, True], ids=["grpc-round-robin", "replica-router"])
async def test_calls_alternate_between_the_replicas(outlier: bool) -> None:
    a, b = ProfileFake(), ProfileFake()
    async with replicas(a, b) as addresses:
        channel = edge_channel(addresses, EventBus(), outlier=outlier)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        for _ in range(20):
            await stub.GetProfile(REQUEST, timeout=5)
        await close(channel)
    # round_robin starts once both subchannels are READY; before that the first one may take
    # a few calls. Both must serve a fair share.
    assert len(a.arrivals_s) + len(b.arrivals_s) == 20
    assert min(len(a.arrivals_s), len(b.arrivals_s)) >= 5


@pytest.mark.parametrize("outlier", [False, True], ids=["grpc-round-robin", "replica-router"])
async def test_a_retry_after_a_failure_on_one_replica_lands_on_the_other(outlier: bool) -> None:
    broken, healthy = ProfileFake(unavailable), ProfileFake()
    bus = EventBus()
    retries: list[Any] = []
    bus.subscribe(lambda e: retries.append(e) if isinstance(e, ev.RetryScheduled) else None)
    async with replicas(broken, healthy) as addresses:
        channel = edge_channel(addresses, bus, outlier=outlier, attempts=5)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        # round_robin rotates over READY subchannels: until both are, every pick goes to the
        # one that connected first. Warm up until both have served.
        for _ in range(50):
            if broken.arrivals_s and healthy.arrivals_s:
                break
            await stub.GetProfile(REQUEST, timeout=5)
        served, met, retried = len(healthy.arrivals_s), len(broken.arrivals_s), len(retries)
        for _ in range(10):
            reply = await stub.GetProfile(REQUEST, timeout=5)
            assert reply.profile.user_id == "u-0001"
        await close(channel)
    # Every failure on the broken replica was followed by a retry that the healthy one served:
    # no call failed, and each call that met the broken one made exactly one retry.
    assert len(healthy.arrivals_s) - served == 10
    assert len(retries) - retried == len(broken.arrivals_s) - met >= 1
    assert all(r.attempt == 1 for r in retries[retried:])


async def test_a_failing_replica_is_ejected_and_traffic_moves_to_the_other() -> None:
    broken, healthy = ProfileFake(unavailable), ProfileFake()
    bus = EventBus()
    seen: list[Any] = []
    bus.subscribe(seen.append)
    async with replicas(broken, healthy) as addresses:
        channel = edge_channel(addresses, bus, outlier=True)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        for _ in range(40):
            await stub.GetProfile(REQUEST, timeout=5)
        await close(channel)
    ejected = [e for e in seen if isinstance(e, ev.ReplicaEjected)]
    assert [(e.replica, e.reason, e.ejection_s) for e in ejected] == [
        (addresses[0], "consecutive_failures", 30.0)
    ]
    # 5 consecutive failures eject it (OutlierPolicy's default); after that it gets nothing.
    assert len(broken.arrivals_s) == 5
    assert len(healthy.arrivals_s) == 40


async def test_concurrent_calls_each_retry_on_the_other_replica() -> None:
    """Other calls move the rotation between a call's attempts; its retry still avoids the
    replica its last attempt failed on (ejection never fires here: 1000 failures in a row)."""
    broken, healthy = ProfileFake(unavailable), ProfileFake()
    bus = EventBus()
    retries: list[Any] = []
    bus.subscribe(lambda e: retries.append(e) if isinstance(e, ev.RetryScheduled) else None)
    async with replicas(broken, healthy) as addresses:
        policy = from_dict(
            EdgePolicy,
            {
                "retry": {"max_attempts": 2, "budget": {"enabled": False}},
                "breaker": {"enabled": False},
                "deadline": {"total_s": 5.0, "attempt_s": 2.0},
            },
        )
        pipeline = build_pipeline(policy, dependency="profile", bus=bus, clock=SystemClock())
        channel = resilient_channel(
            ",".join(addresses),
            ResilienceInterceptor(pipeline, dependency="profile", clock=SystemClock()),
            outlier=OutlierPolicy(enabled=True, consecutive_failures=1000),
            bus=bus,
            dependency="profile",
        )
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        for _ in range(5):  # 2 attempts at most: a retry that met the broken one again fails
            await asyncio.gather(*(stub.GetProfile(REQUEST, timeout=5) for _ in range(16)))
        await close(channel)
    assert len(healthy.arrivals_s) == 80
    assert len(retries) == len(broken.arrivals_s) >= 1


async def test_a_policy_swap_turns_ejection_on_in_place() -> None:
    """Without ejection gRPC's round_robin balances and nothing is ejected; the same channel's
    router then takes on a policy with ejection and ejects the broken replica."""
    broken, healthy = ProfileFake(unavailable), ProfileFake()
    bus = EventBus()
    seen: list[Any] = []
    bus.subscribe(lambda e: seen.append(e) if isinstance(e, ev.ReplicaEjected) else None)
    async with replicas(broken, healthy) as addresses:
        channel = edge_channel(addresses, bus, outlier=False)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        for _ in range(20):
            await stub.GetProfile(REQUEST, timeout=5)
        assert seen == [] and len(broken.arrivals_s) >= 1
        router = replica_router(channel)
        assert router is not None
        router.use(OutlierPolicy(enabled=True, consecutive_failures=2, base_ejection_s=30.0))
        met = len(broken.arrivals_s)
        for _ in range(20):
            await stub.GetProfile(REQUEST, timeout=5)
        await close(channel)
    assert [e.replica for e in seen] == [addresses[0]]
    assert len(broken.arrivals_s) - met == 2
