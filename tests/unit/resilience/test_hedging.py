"""Hedging (gRFC A6) over a scripted wire and a manual clock: when hedges start, which answer
wins, what ends the call, pushback, the retry budget, and what is never hedged."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.context import CallContext
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import Event, EventBus, HedgeSettled, HedgeSkipped, HedgeStarted
from grpc_aio_resilience.hedging_options import HedgingOptionError, HedgingOptions
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.outlier_router import ReplicaRouter
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2
from tests.unit.resilience.manual_clock import ManualClock, settle
from tests.unit.resilience.unit_fakes import CHARGE, GET_PROFILE, REQUESTS, FakeCall, rpc_error

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
Script = dict[int, tuple[float, grpc.StatusCode | tuple[grpc.StatusCode, str] | None]]
"""Attempt number -> (how long it takes, its outcome: None OK, a code, or (code, pushback))."""


class ScriptedWire:
    """Each attempt lasts as its script says (on the manual clock) and records when it started
    and whether it was cancelled before it answered (what the server would see)."""

    def __init__(self, clock: ManualClock, script: Script) -> None:
        self.clock = clock
        self.script = script
        self.t0 = clock.now()
        self.started_s: list[float] = []
        self.cancelled: list[int] = []

    async def continuation(self, details: grpc.aio.ClientCallDetails, request: Any) -> FakeCall:
        n = len(self.started_s) + 1
        self.started_s.append(round(self.clock.now() - self.t0, 6))
        latency_s, outcome = self.script.get(n, (10.0, None))
        try:
            await self.clock.sleep(latency_s)
        except asyncio.CancelledError:
            self.cancelled.append(n)
            raise
        if outcome is None:
            return FakeCall(f"answer {n}", None)
        if isinstance(outcome, tuple):
            return FakeCall(None, rpc_error(outcome[0], outcome[1]))
        return FakeCall(None, rpc_error(outcome))


def edge(budget: dict[str, Any] | None = None, **hedging: Any) -> EdgePolicy:
    return from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 30.0, "attempt_s": 10.0},
            "retry": {"max_attempts": 3, "budget": budget or {"enabled": False}},
            "breaker": {"enabled": False},
            "bulkhead": {"enabled": False},
            "hedging": {"enabled": True, "hedging_delay_s": 0.1, "max_attempts": 3, **hedging},
        },
    )


def setup(policy: EdgePolicy) -> tuple[Pipeline, ManualClock, list[Event]]:
    clock = ManualClock()
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    return build_pipeline(policy, dependency="dep", bus=bus, clock=clock), clock, seen


def start(pipeline: Pipeline, wire: ScriptedWire, method: str = GET_PROFILE) -> asyncio.Task[Any]:
    details = grpc.aio.ClientCallDetails(method.encode(), None, None, None, None)
    ctx = CallContext("dep", method, REQUESTS[method], details, wire.continuation)

    async def one_call() -> Any:
        finished: Awaitable[Any] = await pipeline.run(ctx)
        return await finished

    return asyncio.ensure_future(one_call())


async def test_a_hedge_starts_after_the_delay_and_the_first_answer_wins() -> None:
    pipeline, clock, seen = setup(edge())
    wire = ScriptedWire(clock, {1: (1.0, None), 2: (0.15, None), 3: (1.0, None)})
    task = start(pipeline, wire)
    await clock.advance(0.099)
    assert wire.started_s == [0.0]
    await clock.advance(0.002)
    assert wire.started_s == [0.0, 0.101]
    await clock.advance(0.1)
    await clock.advance(0.1)
    await clock.advance(0.1)  # attempt 2 answered at 0.251; no fourth: max_attempts is 3
    assert wire.started_s == [0.0, 0.101, 0.201]
    assert task.done() and task.result() == "answer 2"
    await settle()
    assert sorted(wire.cancelled) == [1, 3]
    settled = {e.attempt: e.outcome for e in seen if isinstance(e, HedgeSettled)}
    assert settled == {1: "cancelled", 2: "won", 3: "cancelled"}
    assert [(e.attempt, e.trigger) for e in seen if isinstance(e, HedgeStarted)] == [
        (2, "delay"),
        (3, "delay"),
    ]


async def test_a_fatal_code_ends_the_call_at_once_and_cancels_the_others() -> None:
    pipeline, clock, _ = setup(edge())
    wire = ScriptedWire(clock, {1: (1.0, None), 2: (0.05, grpc.StatusCode.INTERNAL)})
    task = start(pipeline, wire)
    await clock.advance(0.101)
    await clock.advance(0.05)
    assert task.done()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        task.result()
    assert caught.value.code() is grpc.StatusCode.INTERNAL
    await settle()
    assert wire.started_s == [0.0, 0.101] and wire.cancelled == [1]


async def test_a_non_fatal_code_starts_the_next_hedge_without_waiting() -> None:
    pipeline, clock, seen = setup(edge(max_attempts=2))
    wire = ScriptedWire(clock, {1: (0.02, UNAVAILABLE), 2: (0.02, UNAVAILABLE)})
    task = start(pipeline, wire)
    await clock.advance(0.02)
    assert wire.started_s == [0.0, 0.02]
    await clock.advance(0.02)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        task.result()
    # Both attempts failed non-fatally: the call ends with the last; retry (3 attempts) let
    # each hedged attempt through untouched, so the wire saw max_attempts, not 2 x 3.
    assert caught.value.code() is UNAVAILABLE
    assert len(wire.started_s) == 2
    assert [e.trigger for e in seen if isinstance(e, HedgeStarted)] == ["UNAVAILABLE"]


async def test_pushback_delays_the_next_hedge() -> None:
    pipeline, clock, seen = setup(edge())
    wire = ScriptedWire(clock, {1: (1.0, None), 2: (0.02, (UNAVAILABLE, "300"))})
    task = start(pipeline, wire)
    await clock.advance(0.101)
    await clock.advance(0.02)  # the hedge failed at 0.121, non-fatally, with a 300 ms pushback
    await clock.advance(0.29)  # past the next hedging delay, not yet past the pushback
    assert wire.started_s == [0.0, 0.101]
    await clock.advance(0.011)
    assert wire.started_s == [0.0, 0.101, 0.422]
    assert [e.trigger for e in seen if isinstance(e, HedgeStarted)] == ["delay", "UNAVAILABLE"]
    task.cancel()


@pytest.mark.parametrize("hint", ["-1", "soon"])
async def test_a_negative_pushback_stops_hedging(hint: str) -> None:
    pipeline, clock, seen = setup(edge())
    wire = ScriptedWire(clock, {1: (0.02, (UNAVAILABLE, hint))})
    task = start(pipeline, wire)
    await clock.advance(0.02)
    await clock.advance(1.0)
    assert task.done() and wire.started_s == [0.0]
    with pytest.raises(grpc.aio.AioRpcError):
        task.result()
    assert [e.reason for e in seen if isinstance(e, HedgeSkipped)] == ["pushback"]


async def test_a_hedge_the_budget_refuses_is_not_sent() -> None:
    # 4 tokens, hedges only while more than 2 are left; each hedge spends 1, each answered
    # call gives back 0.1: calls 1-3 hedge (4 -> 3.1 -> 2.2 -> 1.3), then 1.3 + 0.1 per call
    # stays at or under 2 through call 10.
    pipeline, clock, seen = setup(
        edge({"enabled": True, "max_tokens": 4, "token_ratio": 0.1}, max_attempts=2)
    )
    hedged = []
    for _ in range(10):
        wire = ScriptedWire(clock, {1: (0.5, None), 2: (1.0, None)})
        task = start(pipeline, wire)
        await clock.advance(0.101)
        await clock.advance(0.5)
        assert task.result() == "answer 1"
        hedged.append(len(wire.started_s) == 2)
    assert hedged == [True] * 3 + [False] * 7
    assert [e.reason for e in seen if isinstance(e, HedgeSkipped)] == ["budget"] * 7


async def test_a_method_that_may_not_be_sent_twice_is_never_hedged() -> None:
    pipeline, clock, _ = setup(edge())
    wire = ScriptedWire(clock, {1: (1.0, None)})
    task = start(pipeline, wire, CHARGE)  # no idempotency key
    await clock.advance(0.5)
    await clock.advance(0.6)
    assert task.result() == "answer 1" and wire.started_s == [0.0]


async def test_a_method_hedging_does_not_name_retries_instead() -> None:
    pipeline, clock, seen = setup(edge(methods=["/mesh.v1.ProfileService/Other"]))
    wire = ScriptedWire(clock, {1: (0.02, UNAVAILABLE), 2: (0.02, UNAVAILABLE), 3: (0.02, None)})
    task = start(pipeline, wire)
    for _ in range(20):
        await clock.advance(0.05)
    assert task.result() == "answer 3"
    assert not [e for e in seen if isinstance(e, HedgeStarted)]


def test_options_refuse_a_bad_value_naming_its_field() -> None:
    bad: list[tuple[str, dict[str, Any]]] = [
        ("max_attempts", {"max_attempts": 6}),
        ("max_attempts", {"max_attempts": 1}),
        ("hedging_delay_s", {"hedging_delay_s": -0.1}),
        ("non_fatal_codes", {"non_fatal_codes": ("OK",)}),
        ("methods", {"methods": ("GetProfile",)}),
    ]
    for field, value in bad:
        with pytest.raises(HedgingOptionError) as caught:
            HedgingOptions(**value)
        assert caught.value.field == field
    assert HedgingOptions(non_fatal_codes=("internal",)).non_fatal_codes == ("INTERNAL",)


def test_hedging_is_off_by_default_and_refused_beside_grpc_s_own_retries() -> None:
    assert EdgePolicy().hedging.enabled is False
    assert "hedging" not in build_pipeline(EdgePolicy(), dependency="d", bus=EventBus()).names
    with pytest.raises(ValueError, match=r"hedging\.enabled needs native_retry off"):
        from_dict(
            EdgePolicy,
            {
                "retry": {"max_attempts": 1},
                "native_retry": {"enabled": True},
                "hedging": {"enabled": True},
            },
        )


class SlowReplica:
    """A replica's channel on the manual clock: every call answers after 1 s; it logs which
    user's attempt it received."""

    def __init__(self, address: str, clock: ManualClock, log: list[tuple[str, str]]) -> None:
        self.address = address
        self.clock = clock
        self.log = log

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return grpc.ChannelConnectivity.READY

    async def wait_for_state_change(self, last: grpc.ChannelConnectivity) -> None:
        await asyncio.Event().wait()

    def unary_unary(self, method: str, **_: Any) -> Any:
        def start(request: Any, **__: Any) -> Any:
            self.log.append((request.user_id, self.address))
            return asyncio.ensure_future(self.clock.sleep(1.0))

        return start

    async def close(self) -> None:
        return None


async def test_each_attempt_of_a_hedged_call_goes_to_another_replica() -> None:
    pipeline, clock, _ = setup(edge(max_attempts=2))
    log: list[tuple[str, str]] = []
    router = ReplicaRouter(
        "dep",
        ["a", "b"],
        lambda address: SlowReplica(address, clock, log),
        OutlierPolicy(),
        EventBus(),
        clock,
        balanced=True,  # gRPC's round_robin would balance: hedging routes all the same
    )
    interceptor = ResilienceInterceptor(pipeline, dependency="dep", clock=clock)
    interceptor.router = router
    details = grpc.aio.ClientCallDetails(GET_PROFILE.encode(), None, None, None, None)

    async def host_channel(*_: Any) -> Any:
        raise AssertionError("a hedged call over replicas went to the host channel")

    calls = [
        asyncio.ensure_future(
            interceptor.intercept_unary_unary(
                host_channel, details, profile_pb2.GetProfileRequest(user_id=user)
            )
        )
        for user in ("x", "y")
    ]
    await clock.advance(0.101)
    # x's first attempt went to one replica, y's to the other; plain rotation would send each
    # hedge back where its call's first attempt is.
    assert sorted(log) == [("x", "a"), ("x", "b"), ("y", "a"), ("y", "b")]
    for task in calls:
        task.cancel()
    await settle()
    await router.close()


def test_the_docs_page_lists_every_option_with_its_default() -> None:
    page = (Path(__file__).parents[3] / "docs" / "patterns" / "hedging.md").read_text("utf-8")

    def shown(value: object) -> str:
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, tuple):
            return "[" + ", ".join(value) + "]"
        return str(value)

    for field in dataclasses.fields(HedgingOptions):
        assert f"| `{field.name}` | `{shown(field.default)}` |" in page, field.name
