"""The two protection orders through a real pipeline on a fake clock: what the breaker counts,
and what happens to a call's retries when the breaker opens meanwhile."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.breaker import BreakerStrategy
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.errors import BreakerOpenError
from grpc_aio_resilience.events import BreakerState
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_resilience_mesh.services.policy.loading import PolicyError, load_policy_text
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import GET_PROFILE, FakeWire, Reply, call, recording_bus

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
INSIDE, OUTSIDE = "retry-outside-breaker", "breaker-outside-retry"
"""INSIDE: the breaker inside retry (the default); OUTSIDE: the breaker outside retry."""


def policy(order: str, consecutive: int, **deadline: float) -> EdgePolicy:
    return from_dict(
        EdgePolicy,
        {
            "order": order,
            "deadline": {"total_s": 10.0, "attempt_s": 1.0, **deadline},
            "retry": {"max_attempts": 3, "budget": {"enabled": False}},
            "breaker": {
                "consecutive_failures": consecutive,
                "failure_rate": None,
                "open_s": 2.0,
                "half_open_max_probes": 1,
                "half_open_successes": 1,
            },
            "bulkhead": {"enabled": False},
        },
    )


def edge(order: str, consecutive: int, **deadline: float) -> tuple[Pipeline, FakeWire]:
    clock = FakeClock()
    pipeline = build_pipeline(
        policy(order, consecutive, **deadline),
        dependency="dep",
        bus=recording_bus()[0],
        clock=clock,
        rng=random.Random(7),
    )
    return pipeline, FakeWire(clock, lambda method, n: UNAVAILABLE)


async def outcome(pipeline: Pipeline, wire: FakeWire) -> str:
    try:
        await call(pipeline, wire, GET_PROFILE)
    except BreakerOpenError:
        return "rejected"
    except grpc.aio.AioRpcError as err:
        return str(err.code().name)
    return "OK"


def breaker_state(pipeline: Pipeline) -> BreakerState:
    strategy = pipeline.strategy("breaker")
    assert isinstance(strategy, BreakerStrategy)
    return strategy.breaker_for(GET_PROFILE).state


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.parametrize(
    ("order", "wire_attempts", "outcomes"),
    [
        # Every attempt counts: the 5th failed attempt (call 2's second) opens it, and call
        # 2's third attempt is refused: the remaining retries are skipped.
        (INSIDE, 5, ["UNAVAILABLE", "rejected", "rejected", "rejected", "rejected", "rejected"]),
        # A logical call counts once: five calls of 3 attempts each before it opens.
        (OUTSIDE, 15, ["UNAVAILABLE"] * 5 + ["rejected"]),
    ],
)
def test_what_the_breaker_counts_in_each_order(
    order: str, wire_attempts: int, outcomes: list[str]
) -> None:
    pipeline, wire = edge(order, consecutive=5)
    seen = run(_sequential(pipeline, wire, 6))
    assert seen == outcomes
    assert wire.counts[GET_PROFILE] == wire_attempts
    assert breaker_state(pipeline) is BreakerState.OPEN


async def _sequential(pipeline: Pipeline, wire: FakeWire, n: int) -> list[str]:
    return [await outcome(pipeline, wire) for _ in range(n)]


@pytest.mark.parametrize(
    ("order", "wire_attempts", "outcomes"),
    [
        # Two calls interleave; the second's first failure opens the breaker, so both
        # calls' retries are refused before reaching the wire.
        (INSIDE, 2, ["rejected", "rejected"]),
        # Both were admitted while it was closed: each runs all 3 attempts although the
        # breaker opened (on the second call's outcome) before either finished its retries.
        (OUTSIDE, 6, ["UNAVAILABLE", "UNAVAILABLE"]),
    ],
)
def test_when_the_breaker_opens_mid_retry(
    order: str, wire_attempts: int, outcomes: list[str]
) -> None:
    pipeline, wire = edge(order, consecutive=2)

    async def scenario() -> list[str]:
        return list(await asyncio.gather(outcome(pipeline, wire), outcome(pipeline, wire)))

    assert run(scenario()) == outcomes
    assert wire.counts[GET_PROFILE] == wire_attempts
    assert breaker_state(pipeline) is BreakerState.OPEN
    assert run(outcome(pipeline, wire)) == "rejected"
    assert wire.counts[GET_PROFILE] == wire_attempts  # an open breaker: no attempt at all


@pytest.mark.parametrize(
    ("order", "probe", "state", "wire_attempts"),
    [
        # The probe is one attempt: its failure re-opens the breaker and the retry is refused.
        (INSIDE, "rejected", BreakerState.OPEN, 1),
        # The probe is the whole logical call: attempts 1 and 2 fail, 3 succeeds, it closes.
        (OUTSIDE, "OK", BreakerState.CLOSED, 3),
    ],
)
def test_the_half_open_probe(
    order: str, probe: str, state: BreakerState, wire_attempts: int
) -> None:
    pipeline, wire = edge(order, consecutive=1)
    assert run(outcome(pipeline, wire)) in {"rejected", "UNAVAILABLE"}
    assert breaker_state(pipeline) is BreakerState.OPEN
    wire.clock.advance(2.0)
    before = wire.counts[GET_PROFILE]
    replies: list[Reply] = [UNAVAILABLE, UNAVAILABLE, None]
    wire.reply = lambda method, n: replies[min(n - before - 1, 2)]
    assert run(outcome(pipeline, wire)) == probe
    assert breaker_state(pipeline) is state
    assert wire.counts[GET_PROFILE] - before == wire_attempts


def test_outside_retry_a_call_that_runs_out_of_time_after_failed_attempts_counts() -> None:
    # Each attempt hangs: two end on their own 0.4 s timeout, the third gets only the time
    # left and ends on the call's deadline, which alone says nothing about the dependency's
    # health; the call still counts once, as the failure its attempts were.
    pipeline, wire = edge(OUTSIDE, consecutive=2, total_s=1.0, attempt_s=0.4)
    wire.hang_s = 10.0
    assert run(_sequential(pipeline, wire, 3)) == ["DEADLINE_EXCEEDED"] * 2 + ["rejected"]
    assert wire.counts[GET_PROFILE] == 6
    assert breaker_state(pipeline) is BreakerState.OPEN


def test_an_unknown_order_is_refused_naming_the_field() -> None:
    with pytest.raises(PolicyError, match=r"edge_defaults\.order"):
        load_policy_text("edge_defaults: {order: breaker-first}", "p.yaml", {})
