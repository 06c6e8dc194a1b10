"""Seed 000's trap as a regression test: a primary and its fallback behind one breaker.

Primary (Recommend) always UNAVAILABLE, fallback (Popular) healthy, 2 retries, threshold 5
consecutive failures. The fake dependency fails without yielding, like the seed's fake provider.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import grpc
import grpc.aio

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import BreakerRejected, RetryScheduled
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import POPULAR, RECOMMEND, FakeWire, call, recording_bus


def setup(scope: str) -> tuple[Pipeline, FakeWire, list[object]]:
    policy = from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 10.0, "attempt_s": 1.0},
            "retry": {
                "max_attempts": 3,
                "base_backoff_s": 0.3,
                "max_backoff_s": 8.0,
                "budget": {"enabled": False},
            },
            "breaker": {
                "scope": scope,
                "consecutive_failures": 5,
                "failure_rate": None,
                "open_s": 30.0,
            },
            "bulkhead": {"enabled": False},
        },
    )
    clock = FakeClock()
    bus, seen = recording_bus()
    pipeline = build_pipeline(policy, dependency="recommendation", bus=bus, clock=clock)
    wire = FakeWire(clock, lambda m, n: grpc.StatusCode.UNAVAILABLE if m == RECOMMEND else None)
    return pipeline, wire, seen  # type: ignore[return-value]


async def home(pipeline: Pipeline, wire: FakeWire, served: Counter[str]) -> None:
    """The gateway's logic: primary, else the fallback, else the request fails."""
    try:
        await call(pipeline, wire, RECOMMEND)
        served["primary"] += 1
        return
    except grpc.aio.AioRpcError:
        pass
    try:
        await call(pipeline, wire, POPULAR)
        served["fallback"] += 1
    except grpc.aio.AioRpcError:
        served["failed"] += 1


async def sequential(scope: str) -> tuple[FakeWire, Counter[str], list[object]]:
    pipeline, wire, seen = setup(scope)
    served: Counter[str] = Counter()
    for _ in range(10):
        await home(pipeline, wire, served)
    return wire, served, seen


async def parallel(scope: str) -> tuple[FakeWire, Counter[str], list[object]]:
    pipeline, wire, seen = setup(scope)
    served: Counter[str] = Counter()
    for _ in range(2):
        await asyncio.gather(*(home(pipeline, wire, served) for _ in range(8)))
    return wire, served, seen


async def test_per_method_breakers_sequential_primary_5_calls_all_served() -> None:
    wire, served, _ = await sequential("method")
    assert wire.counts[RECOMMEND] == 5
    assert wire.counts[POPULAR] == 10
    assert served == Counter(fallback=10)


async def test_per_method_breakers_parallel_primary_5_calls_all_served() -> None:
    wire, served, _ = await parallel("method")
    assert wire.counts[RECOMMEND] == 5
    assert served == Counter(fallback=16)


async def test_shared_breaker_sequential_is_a_retry_storm_that_never_opens() -> None:
    wire, served, seen = await sequential("dependency")
    assert wire.counts[RECOMMEND] == 30
    assert sum(isinstance(e, RetryScheduled) for e in seen) == 20
    assert not any(isinstance(e, BreakerRejected) for e in seen)
    assert served == Counter(fallback=10)


async def test_shared_breaker_parallel_opens_and_starves_the_healthy_fallback() -> None:
    wire, served, seen = await parallel("dependency")
    assert wire.counts[POPULAR] == 0
    assert served == Counter(failed=16)
    assert any(isinstance(e, BreakerRejected) for e in seen)
