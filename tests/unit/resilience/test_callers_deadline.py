"""A caller's own deadline is not the dependency's failure: what the server marks, what the client
trusts, and what the edge's shared breaker, throttle and retry budget make of it."""

from __future__ import annotations

import asyncio
from random import Random
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import classify
from grpc_aio_resilience.breaker import BreakerStrategy
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import CALLER_DEADLINE_KEY, PUSHBACK_KEY, ShedError
from grpc_aio_resilience.events import (
    BreakerState,
    BreakerStateChanged,
    ReplicaEjected,
    RetryScheduled,
)
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_aio_resilience.retry import Retry
from grpc_aio_resilience.throttle import AdaptiveThrottle
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.runtime.relay import relayed_code
from grpc_resilience_mesh.services.v1 import recommendation_pb2
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.test_admission import admission, waiting
from tests.unit.resilience.test_replica_router import FakeReplica, Setup
from tests.unit.resilience.unit_fakes import (
    RECOMMEND,
    FakeCall,
    FakeWire,
    call,
    recording_bus,
)

SHORT_S = 0.04
"""A caller's deadline below the gateway->recommendation edge's attempt_s (0.35 s in full)."""
NORMAL_S = 2.0


def error(code: grpc.StatusCode, *trailers: tuple[str, str]) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailers), "x")


UNMEETABLE = error(
    grpc.StatusCode.RESOURCE_EXHAUSTED, (PUSHBACK_KEY, "200"), (CALLER_DEADLINE_KEY, "deadline")
)
"""What recommendation's deadline-aware admission answers a call it cannot serve in time."""


def test_the_marker_and_an_expiry_are_the_callers_only_on_less_than_the_edge_allows() -> None:
    expired = error(grpc.StatusCode.DEADLINE_EXCEEDED)
    assert classify.callers_deadline(UNMEETABLE, own_timeout=False)
    assert classify.callers_deadline(expired, own_timeout=False)
    # With the edge's whole attempt timeout it is the dependency that is too slow, marker or not.
    assert not classify.callers_deadline(UNMEETABLE, own_timeout=True)
    assert not classify.callers_deadline(expired, own_timeout=True)
    shed = error(grpc.StatusCode.RESOURCE_EXHAUSTED, (PUSHBACK_KEY, "200"))
    assert not classify.callers_deadline(shed, own_timeout=False)  # a plain overload refusal
    assert not classify.callers_deadline(error(grpc.StatusCode.UNAVAILABLE), own_timeout=False)


def edge(clock: FakeClock) -> Pipeline:
    policy = load_policy("full", {}).edge("gateway_to_recommendation")
    bus, _ = recording_bus()
    return build_pipeline(policy, dependency="recommendation", bus=bus, clock=clock, rng=Random(1))


class ScriptedWire(FakeWire):
    """Every attempt fails with `err`."""

    def __init__(self, clock: FakeClock, err: grpc.aio.AioRpcError) -> None:
        super().__init__(clock, lambda method, n: None)
        self.err = err

    async def continuation(self, details: grpc.aio.ClientCallDetails, request: Any) -> FakeCall:
        self.counts[details.method.decode()] += 1
        return FakeCall(None, self.err)


async def failed_calls(pipeline: Pipeline, wire: FakeWire, timeout_s: float, n: int) -> None:
    for _ in range(n):
        with pytest.raises(grpc.aio.AioRpcError):
            await call(pipeline, wire, RECOMMEND, timeout_s=timeout_s)


def opened(pipeline: Pipeline) -> bool:
    breaker = pipeline.strategy("breaker")
    assert isinstance(breaker, BreakerStrategy)
    return any(b.peek()[0] is BreakerState.OPEN for b in breaker.breakers.values())


async def test_unmeetable_refusals_of_short_deadlines_leave_the_shared_edge_as_it_was() -> None:
    clock = FakeClock()
    pipeline = edge(clock)
    wire = ScriptedWire(clock, UNMEETABLE)
    bus_events: list[object] = []
    pipeline.bus.subscribe(bus_events.append)
    await failed_calls(pipeline, wire, SHORT_S, 100)
    throttle, retry = pipeline.strategy("throttle"), pipeline.strategy("retry")
    assert isinstance(throttle, AdaptiveThrottle) and isinstance(retry, Retry)
    assert not opened(pipeline)
    assert not any(isinstance(e, BreakerStateChanged) for e in bus_events)
    assert throttle.window.requests == 0  # neither a request refused nor one accepted
    assert wire.counts[RECOMMEND] == 100  # not retried: a retry would have still less time
    assert not any(isinstance(e, RetryScheduled) for e in bus_events)
    assert retry.budget is not None and retry.budget.tokens == retry.budget.max_tokens


async def test_the_same_refusal_of_a_call_with_the_edges_whole_attempt_counts() -> None:
    clock = FakeClock()
    pipeline = edge(clock)
    await failed_calls(pipeline, ScriptedWire(clock, UNMEETABLE), NORMAL_S, 5)
    assert opened(pipeline)  # the marker hides nothing from calls with a normal deadline


async def test_short_deadlines_running_out_do_not_dilute_real_failures() -> None:
    """Each expiry of a 40 ms call used to count as a success and reset the run of failures."""
    clock = FakeClock()
    pipeline = edge(clock)
    sick = ScriptedWire(clock, error(grpc.StatusCode.INTERNAL))
    expired = ScriptedWire(clock, error(grpc.StatusCode.DEADLINE_EXCEEDED))
    for _ in range(4):
        await failed_calls(pipeline, sick, NORMAL_S, 1)
        await failed_calls(pipeline, expired, SHORT_S, 3)
    assert not opened(pipeline)
    await failed_calls(pipeline, sick, NORMAL_S, 1)
    assert opened(pipeline)  # five real failures in a row, the expiries between them aside


def marker(err: ShedError) -> str | None:
    return dict(err.trailing_metadata()).get(CALLER_DEADLINE_KEY)


async def test_admission_marks_a_refusal_for_the_calls_deadline_and_only_that() -> None:
    adm, _, _ = admission(max_in_flight=1, limit={"deadline_aware": True})
    adm.expected_s = adm.idle_s = 0.05
    with pytest.raises(ShedError) as unmeetable:
        await adm.acquire(RECOMMEND, Criticality.CRITICAL, 0.03)
    assert unmeetable.value.reason == "deadline" and marker(unmeetable.value) == "deadline"
    await adm.acquire(RECOMMEND, Criticality.CRITICAL, 1.0)
    with pytest.raises(ShedError) as full:
        await adm.acquire(RECOMMEND, Criticality.CRITICAL, 1.0)
    assert full.value.reason == "limit" and marker(full.value) is None


async def test_a_queue_wait_the_deadline_cut_short_is_marked_one_the_queue_ended_is_not() -> None:
    adm, clock, _ = admission(max_in_flight=1, queue={"discipline": "fifo", "max_wait_s": 0.1})
    await adm.acquire(RECOMMEND, Criticality.CRITICAL, None)
    cut = asyncio.ensure_future(adm.queue_for(RECOMMEND, Criticality.CRITICAL, 0.02))
    whole = waiting(adm)
    await clock.advance(0.1)
    refusals = [await refusal(t) for t in (cut, whole)]
    assert [(e.reason, marker(e)) for e in refusals] == [
        ("queue_timeout", "queue_timeout"),
        ("queue_timeout", None),
    ]


async def refusal(task: asyncio.Future[Any]) -> ShedError:
    with pytest.raises(ShedError) as info:
        await task
    return info.value


@pytest.mark.parametrize(
    ("left_s", "expected"),
    [
        (0.003, grpc.StatusCode.DEADLINE_EXCEEDED),  # our caller's deadline ran out on the way
        (0.0, grpc.StatusCode.DEADLINE_EXCEEDED),
        (0.2, grpc.StatusCode.UNAVAILABLE),  # our own budget for the dependency ran out
        (None, grpc.StatusCode.UNAVAILABLE),
    ],
)
def test_a_hop_relays_an_expiry_in_its_callers_last_moments_as_the_callers_deadline(
    left_s: float | None, expected: grpc.StatusCode
) -> None:
    expired = error(grpc.StatusCode.DEADLINE_EXCEEDED)
    assert relayed_code(expired, left_s, spent_s=0.005) is expected


class ExpiringReplica(FakeReplica):
    """Every attempt ends DEADLINE_EXCEEDED."""

    def unary_unary(self, method: str, **_: Any) -> Any:
        def start(request: Any, **__: Any) -> FakeCall:
            self.log.append(self.address)
            return FakeCall(None, error(grpc.StatusCode.DEADLINE_EXCEEDED))

        return start


@pytest.mark.parametrize(("timeout_s", "ejected"), [(SHORT_S, False), (0.35, True)])
async def test_attempts_on_a_callers_short_deadline_eject_no_replica(
    timeout_s: float, ejected: bool
) -> None:
    s = Setup(consecutive_failures=3, interval_s=100.0)
    s.replicas["a"] = ExpiringReplica("a", s.log)
    s.router.attempt_s = 0.35  # the edge's own attempt timeout, as its Edge tells it
    details = grpc.aio.ClientCallDetails(RECOMMEND.encode(), timeout_s, None, None, None)
    for _ in range(10):
        await s.router.send(details, recommendation_pb2.RecommendRequest(user_id="u1"))
    assert bool(s.of(ReplicaEjected)) is ejected
    await s.router.close()
