"""Hedging against one slow replica of two, on real grpc.aio servers: the tail it cuts, the
extra attempts it spends, and the losers the servers see cancelled."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import replica_router, resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import Event, EventBus, HedgeStarted
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving, wait_until

FAST_S = 0.020
SLOW_S = 0.500
SLOW_EVERY = 10
"""The slow replica serves every 10th of its calls in SLOW_S: its p99 is 500 ms."""
HEDGING_DELAY_S = 0.050
CALLS = 200
IN_FLIGHT = 1
"""One call at a time: a stall of the machine delays one call, not several at once."""
ROUNDS = 20
MAX_TOKENS = 10.0
TOKEN_RATIO = 0.1
SLACK_S = 0.020
"""What starting a hedge may add on this machine (a task and a timer): the bound's slack."""


class Replica:
    """Answers in FAST_S, or SLOW_S every SLOW_EVERYth call when slow; records each call's
    user id, the ids of its slow runs, and those whose caller cancelled them."""

    def __init__(self, slow: bool) -> None:
        self.slow = slow
        self.user_ids: list[str] = []
        self.slow_runs: list[str] = []
        self.cancelled: set[str] = set()
        self.seen: dict[str, int] = {}
        self.fake = ProfileFake(self.serve)

    async def serve(
        self, request: profile_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> None:
        self.user_ids.append(request.user_id)
        # Every SLOW_EVERYth call of each channel (its user ids' tag) is slow: counted over all
        # channels, which calls meet the tail would hang on how their calls interleave.
        tag = request.user_id.partition("/")[0]
        self.seen[tag] = self.seen.get(tag, 0) + 1
        tail = self.slow and self.seen[tag] % SLOW_EVERY == 0
        if tail:
            self.slow_runs.append(request.user_id)
        try:
            await asyncio.sleep(SLOW_S if tail else FAST_S)
        except asyncio.CancelledError:
            self.cancelled.add(request.user_id)
            raise


def edge_channel(addresses: list[str], bus: EventBus, *, hedging: bool) -> grpc.aio.Channel:
    policy = from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 5.0, "attempt_s": 1.5},
            "retry": {"budget": {"max_tokens": MAX_TOKENS, "token_ratio": TOKEN_RATIO}},
            "hedging": {
                "enabled": hedging,
                "hedging_delay_s": HEDGING_DELAY_S,
                "max_attempts": 2,
            },
        },
    )
    clock = SystemClock()
    pipeline = build_pipeline(policy, dependency="profile", bus=bus, clock=clock)
    interceptor = ResilienceInterceptor(pipeline, dependency="profile", clock=clock)
    return resilient_channel(",".join(addresses), interceptor, bus=bus, dependency="profile")


@asynccontextmanager
async def channel_to(
    addresses: list[str], bus: EventBus, hedging: bool
) -> AsyncIterator[profile_pb2_grpc.ProfileServiceStub]:
    channel = edge_channel(addresses, bus, hedging=hedging)
    try:
        yield profile_pb2_grpc.ProfileServiceStub(channel)
    finally:
        router = replica_router(channel)
        if router is not None:
            await router.close()
        await channel.close()


async def latencies_s(
    stub: profile_pb2_grpc.ProfileServiceStub, tag: str, calls: int
) -> list[float]:
    """`calls` calls, IN_FLIGHT at a time, each with its own user id; their latencies."""
    took: list[float] = []

    async def worker(w: int) -> None:
        for i in range(w, calls, IN_FLIGHT):
            started = time.perf_counter()
            request = profile_pb2.GetProfileRequest(user_id=f"{tag}-{i}")
            await stub.GetProfile(request, timeout=5)
            took.append(time.perf_counter() - started)

    await asyncio.gather(*(worker(w) for w in range(IN_FLIGHT)))
    return took


def percentile(samples_s: list[float], q: float) -> float:
    """Nearest rank: the smallest sample at or above a fraction q of them."""
    return sorted(samples_s)[math.ceil(q * len(samples_s)) - 1]


@pytest.mark.slow  # about 20 s: 600 calls one at a time, so one stall of the machine delays one
async def test_hedging_cuts_one_slow_replicas_tail_within_the_budget() -> None:
    fast, slow = Replica(slow=False), Replica(slow=True)
    seen: list[Event] = []
    bus = EventBus()
    bus.subscribe(seen.append)
    took: dict[str, list[float]] = {"fast": [], "unhedged": [], "hedged": []}
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(serving(profile_servicer(fast.fake)))
        b = await stack.enter_async_context(serving(profile_servicer(slow.fake)))
        stubs = {
            "fast": await stack.enter_async_context(channel_to([a], EventBus(), False)),
            "unhedged": await stack.enter_async_context(channel_to([a, b], EventBus(), False)),
            "hedged": await stack.enter_async_context(channel_to([a, b], bus, True)),
        }
        for name, stub in stubs.items():  # connected before anything is measured
            await latencies_s(stub, f"warm-{name}", IN_FLIGHT)
        seen.clear()
        # Interleaved rounds, so the machine's load falls on the three alike.
        for r in range(ROUNDS):
            for name, stub in stubs.items():
                took[name] += await latencies_s(stub, f"{name}/{r}", CALLS // ROUNDS)
        losers = [uid for uid in slow.slow_runs if uid.startswith("hedged/")]
        await wait_until(lambda: slow.cancelled.issuperset(losers))
    figures = {f"{name}_{q}": percentile(s, q / 100) for name, s in took.items() for q in (50, 99)}
    hedges = sum(isinstance(e, HedgeStarted) for e in seen)
    print({k: round(v * 1000, 1) for k, v in figures.items()}, "hedges", hedges, "of", CALLS)
    # Without hedging 1 call in 20 meets the slow replica's tail: p99 is that tail.
    assert figures["unhedged_99"] >= SLOW_S
    # A hedged call waits at most the hedging delay for its first attempt, then one attempt on
    # the other replica (the fast one) answers it; the slack covers starting that hedge.
    assert figures["hedged_99"] <= HEDGING_DELAY_S + figures["fast_99"] + SLACK_S
    # Each hedge spends a token and may start only above half the bucket; each answered call
    # gives back TOKEN_RATIO: at most MAX_TOKENS / 2 + TOKEN_RATIO * CALLS extra attempts.
    assert 1 <= hedges <= MAX_TOKENS / 2 + TOKEN_RATIO * CALLS
    # Every slow run of a hedged call lost and was cancelled on the server (waited for above);
    # no hedged call's two attempts met on one replica.
    assert losers
    for replica in (fast, slow):
        ids = [uid for uid in replica.user_ids if uid.startswith("hedged/")]
        assert len(set(ids)) == len(ids)
