"""Retry strategy over a fake wire: what is retried, how long it waits, when it stops."""

from __future__ import annotations

import random

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.errors import BreakerOpenError, DeadlineBudgetExhaustedError
from grpc_aio_resilience.events import RetryScheduled, RetrySkipped
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_resilience_mesh.services.v1 import payment_pb2
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import (
    CHARGE,
    GET_PROFILE,
    FakeWire,
    Reply,
    call,
    recording_bus,
)

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


def edge(**retry: object) -> EdgePolicy:
    """Retry (no budget) and deadlines only, unless a test says otherwise."""
    return from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 10.0, "attempt_s": 1.0},
            "retry": {"max_attempts": 3, "budget": {"enabled": False}, **retry},
            "breaker": {"enabled": False},
            "bulkhead": {"enabled": False},
        },
    )


def setup(
    policy: EdgePolicy, reply: Reply | None = None, **wire: float
) -> tuple[Pipeline, FakeWire]:
    clock = FakeClock()
    bus, _ = recording_bus()
    pipeline = build_pipeline(policy, dependency="dep", bus=bus, clock=clock, rng=random.Random(1))
    return pipeline, FakeWire(clock, lambda m, n: reply, **wire)


async def test_transient_failures_are_retried_until_success() -> None:
    clock = FakeClock()
    pipeline = build_pipeline(edge(), dependency="dep", bus=recording_bus()[0], clock=clock)
    wire = FakeWire(clock, lambda m, n: UNAVAILABLE if n < 3 else None)
    assert await call(pipeline, wire) == f"response to {GET_PROFILE}"
    assert wire.counts[GET_PROFILE] == 3
    assert len(clock.sleeps_s) == 2
    assert all(0 <= s <= 0.05 * 2**i for i, s in enumerate(clock.sleeps_s))


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,  # no pushback: the server did not allow a retry
    ],
)
async def test_permanent_failures_are_not_retried(code: grpc.StatusCode) -> None:
    pipeline, wire = setup(edge(), code)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(pipeline, wire)
    assert caught.value.code() is code
    assert wire.counts[GET_PROFILE] == 1


async def test_pushback_sets_a_floor_under_every_backoff() -> None:
    pipeline, wire = setup(edge(), (UNAVAILABLE, "200"))
    with pytest.raises(grpc.aio.AioRpcError):
        await call(pipeline, wire)
    assert wire.counts[GET_PROFILE] == 3
    assert wire.clock.sleeps_s and all(s >= 0.2 for s in wire.clock.sleeps_s)


async def test_resource_exhausted_with_pushback_is_retried_after_it() -> None:
    pipeline, wire = setup(edge(), (grpc.StatusCode.RESOURCE_EXHAUSTED, "150"))
    with pytest.raises(grpc.aio.AioRpcError):
        await call(pipeline, wire)
    assert wire.counts[GET_PROFILE] == 3
    assert all(s >= 0.15 for s in wire.clock.sleeps_s)


@pytest.mark.parametrize("hint", ["-1", "later"])
async def test_negative_or_garbled_pushback_means_do_not_retry(hint: str) -> None:
    pipeline, wire = setup(edge(), (UNAVAILABLE, hint))
    with pytest.raises(grpc.aio.AioRpcError):
        await call(pipeline, wire)
    assert wire.counts[GET_PROFILE] == 1


async def test_zero_pushback_retries_immediately() -> None:
    pipeline, wire = setup(edge(), (UNAVAILABLE, "0"))
    with pytest.raises(grpc.aio.AioRpcError):
        await call(pipeline, wire)
    assert wire.counts[GET_PROFILE] == 3
    assert wire.clock.sleeps_s == []


async def test_charge_without_idempotency_key_is_never_retried() -> None:
    pipeline, wire = setup(edge(), UNAVAILABLE)
    with pytest.raises(grpc.aio.AioRpcError):
        await call(pipeline, wire, CHARGE)
    assert wire.counts[CHARGE] == 1


async def test_charge_with_idempotency_key_is_retried() -> None:
    pipeline, wire = setup(edge(), UNAVAILABLE)
    keyed = payment_pb2.ChargeRequest(user_id="u", amount_cents=1, idempotency_key="key-12345")
    with pytest.raises(grpc.aio.AioRpcError):
        await call(pipeline, wire, CHARGE, request=keyed)
    assert wire.counts[CHARGE] == 3


async def test_budget_exhaustion_stops_retries_for_the_whole_dependency() -> None:
    policy = edge(budget={"enabled": True, "max_tokens": 4, "token_ratio": 0.1})
    clock = FakeClock()
    bus, seen = recording_bus()
    pipeline = build_pipeline(policy, dependency="dep", bus=bus, clock=clock)
    wire = FakeWire(clock, lambda m, n: UNAVAILABLE)
    for _ in range(10):
        with pytest.raises(grpc.aio.AioRpcError):
            await call(pipeline, wire)
    # 4 tokens, retries only above 2: the first call gets one retry, the rest none.
    assert wire.counts[GET_PROFILE] == 11
    skipped = [e.reason for e in seen if isinstance(e, RetrySkipped)]
    assert skipped.count("budget") == 10


async def test_attempts_get_the_attempt_timeout_capped_by_time_left() -> None:
    policy = from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 0.7, "attempt_s": 0.3},
            "retry": {"max_attempts": 5, "base_backoff_s": 0.01, "budget": {"enabled": False}},
            "breaker": {"enabled": False},
            "bulkhead": {"enabled": False},
        },
    )
    pipeline, wire = setup(policy, None, hang_s=60.0)
    started_s = wire.clock.now()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(pipeline, wire)
    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert wire.timeouts_s[:2] == [0.3, 0.3]
    assert all(t is not None and t <= 0.3 for t in wire.timeouts_s)
    assert wire.clock.now() - started_s <= 0.7 + 1e-9


async def test_caller_timeout_caps_the_total_budget() -> None:
    pipeline, wire = setup(edge(), None)
    await call(pipeline, wire, timeout_s=0.25)
    assert wire.timeouts_s == [0.25]


async def test_no_backoff_starts_that_would_outlive_the_deadline() -> None:
    pipeline, wire = setup(edge(), (UNAVAILABLE, "5000"))
    with pytest.raises(DeadlineBudgetExhaustedError) as caught:
        await call(pipeline, wire, timeout_s=1.0)
    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert wire.counts[GET_PROFILE] == 1
    assert wire.clock.sleeps_s == []


async def test_breaker_opening_mid_retry_skips_the_remaining_retries() -> None:
    policy = from_dict(
        EdgePolicy,
        {
            "retry": {"max_attempts": 5, "budget": {"enabled": False}},
            "breaker": {"consecutive_failures": 2, "failure_rate": None},
            "bulkhead": {"enabled": False},
        },
    )
    clock = FakeClock()
    bus, seen = recording_bus()
    pipeline = build_pipeline(policy, dependency="dep", bus=bus, clock=clock)
    wire = FakeWire(clock, lambda m, n: UNAVAILABLE)
    with pytest.raises(BreakerOpenError) as caught:
        await call(pipeline, wire)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert wire.counts[GET_PROFILE] == 2
    assert sum(isinstance(e, RetryScheduled) for e in seen) == 2
