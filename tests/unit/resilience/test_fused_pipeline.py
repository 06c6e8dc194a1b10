"""The common composition runs fused (grpc_aio_resilience.fused): no strategy's layer of its own,
and call for call the same outcomes, events and strategy state as the layered chain."""

from __future__ import annotations

import asyncio
import random
from functools import partial
from typing import Any, get_args

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import events as ev
from grpc_aio_resilience import from_dict
from grpc_aio_resilience.attempt import AttemptHook, send_on_wire
from grpc_aio_resilience.breaker import BreakerStrategy
from grpc_aio_resilience.bulkhead import Bulkhead
from grpc_aio_resilience.deadline import AttemptTimeout, TotalDeadline
from grpc_aio_resilience.edge_policy import EdgePolicy, RetryPolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_aio_resilience.retry import Retry
from grpc_aio_resilience.throttle import AdaptiveThrottle
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import CHARGE, GET_PROFILE, FakeWire, Reply, call

Code = grpc.StatusCode
STRATEGIES = (Bulkhead, TotalDeadline, Retry, AdaptiveThrottle, BreakerStrategy, AttemptTimeout)
REPLIES: tuple[Reply, ...] = (
    None,
    None,
    None,
    Code.UNAVAILABLE,
    Code.UNAVAILABLE,
    (Code.RESOURCE_EXHAUSTED, "20"),
    (Code.UNAVAILABLE, "0"),
    (Code.UNAVAILABLE, "-1"),
    Code.INTERNAL,
    Code.NOT_FOUND,
    Code.DEADLINE_EXCEEDED,
)
QUIET = (ev.AttemptStarted, ev.AttemptFinished, ev.CallFinished)
"""The events whose listeners give the call or its attempts a layer of observation."""


def _edge(**changes: Any) -> EdgePolicy:
    return from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 1.0, "attempt_s": 0.3},
            "retry": {"max_attempts": 3, "base_backoff_s": 0.02},
            "breaker": {
                "consecutive_failures": 4,
                "window_size": 10,
                "min_calls": 5,
                "open_s": 0.5,
                "half_open_max_probes": 2,
                "half_open_successes": 1,
            },
            "bulkhead": {"max_concurrent": 3},
            "throttle": {"enabled": True, "k": 1.5, "window_s": 5, "min_requests": 5},
            **changes,
        },
    )


def _counting_executes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    entered: list[str] = []
    for kind in (*STRATEGIES, AttemptHook):
        original = kind.execute

        def execute(self: Any, ctx: Any, inner: Any, _original: Any = original) -> Any:
            entered.append(self.name)
            return _original(self, ctx, inner)

        monkeypatch.setattr(kind, "execute", execute)
    return entered


async def test_the_default_composition_enters_no_strategy_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered = _counting_executes(monkeypatch)
    clock = FakeClock()
    pipeline = build_pipeline(_edge(), dependency="dep", bus=EventBus(), clock=clock)
    wire = FakeWire(clock, lambda m, n: Code.UNAVAILABLE if n < 2 else None)
    assert await call(pipeline, wire) == f"response to {GET_PROFILE}"
    assert wire.counts[GET_PROFILE] == 2
    assert entered == []
    assert pipeline.fused is not None


@pytest.mark.parametrize(
    "edge",
    [
        _edge(order="breaker-outside-retry"),
        _edge(hedging={"enabled": True}, retry={"max_attempts": 1}),
    ],
    ids=["breaker-outside-retry", "hedging"],
)
async def test_other_compositions_keep_their_layers(
    monkeypatch: pytest.MonkeyPatch, edge: EdgePolicy
) -> None:
    entered = _counting_executes(monkeypatch)
    clock = FakeClock()
    pipeline = build_pipeline(edge, dependency="dep", bus=EventBus(), clock=clock)
    assert await call(pipeline, FakeWire(clock, lambda m, n: None)) is not None
    assert pipeline.fused is None
    assert "breaker" in entered


def test_a_strategy_of_the_users_own_or_another_wire_keeps_the_layers() -> None:
    class Mine(Retry):
        pass

    clock, bus = FakeClock(), EventBus()
    built = build_pipeline(_edge(), dependency="dep", bus=bus, clock=clock)
    mine = Mine(RetryPolicy(), 0.005, None, clock, bus, random.Random())
    strategies = [mine if isinstance(s, Retry) else s for s in built.strategies]
    assert Pipeline(strategies, bus, clock).fused is None
    assert built.with_wire(partial(send_on_wire)).fused is None


async def _script(pipeline: Pipeline, clock: FakeClock, seed: int) -> list[Any]:
    """Calls with scripted replies, pauses and deadlines, some at once: each one's outcome."""
    rng = random.Random(seed)
    replies = [rng.choice(REPLIES) for _ in range(400)]
    wire = FakeWire(clock, lambda method, n: replies[n % len(replies)])
    outcomes: list[Any] = []

    async def one(method: str, timeout_s: float | None) -> None:
        try:
            answer = await call(pipeline, wire, method, timeout_s=timeout_s)
            outcomes.append(("ok", answer))
        except grpc.aio.AioRpcError as err:
            cause = type(err.__cause__).__name__
            sent = getattr(err, "attempts_sent", None)
            outcomes.append((type(err).__name__, err.code(), sent, cause))
        except asyncio.CancelledError:
            outcomes.append(("cancelled", method))

    for _ in range(60):
        method = GET_PROFILE if rng.random() < 0.8 else CHARGE
        timeout_s = rng.choice((None, None, 0.5, 0.01))
        wire.hang_s = rng.choice((0.0, 0.0, 0.001, 0.4))  # 0.4: past the attempt timeout
        if rng.random() < 0.2:
            await asyncio.gather(*(one(method, timeout_s) for _ in range(5)))
        elif rng.random() < 0.15:  # the caller goes away while its attempt is on the wire
            wire.hang_s = 0.4
            task = asyncio.create_task(one(method, timeout_s))
            await asyncio.sleep(0)
            task.cancel()
            await task
        else:
            await one(method, timeout_s)
        clock.advance(rng.choice((0.0, 0.01, 0.2, 0.6)))
    outcomes.append((sorted(wire.counts.items()), wire.timeouts_s, clock.now()))
    return outcomes


def _state(pipeline: Pipeline) -> Any:
    """What the strategies hold after the script: breakers, budget, throttle window, slots."""
    held: dict[str, Any] = {}
    for strategy in pipeline.strategies:
        if isinstance(strategy, BreakerStrategy):
            held["breakers"] = {k: b.peek() for k, b in strategy.breakers.items()}
        elif isinstance(strategy, Retry) and strategy.budget is not None:
            held["tokens"] = strategy.budget.tokens
        elif isinstance(strategy, AdaptiveThrottle):
            held["window"] = (strategy.window.requests, strategy.window.accepts)
        elif isinstance(strategy, Bulkhead):
            held["in_flight"] = strategy.in_flight
    return held


EDGES = {
    "every strategy, bulkhead rejecting": _edge(),
    "every strategy, bulkhead queueing": _edge(
        bulkhead={"max_concurrent": 3, "mode": "queue", "max_wait_s": 0.002}
    ),
    "no bulkhead, retry or throttle": _edge(
        bulkhead={"enabled": False}, retry={"max_attempts": 1}, throttle={"enabled": False}
    ),
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("composition", EDGES)
@pytest.mark.parametrize("listens", ["strategy events", "every event"])
async def test_fused_and_layered_calls_end_alike(seed: int, composition: str, listens: str) -> None:
    runs = []
    for fused in (True, False):
        clock = FakeClock()
        bus = EventBus()
        seen: list[ev.Event] = []
        kinds = None if listens == "every event" else set(get_args(ev.Event)) - set(QUIET)
        bus.subscribe(seen.append, kinds)
        built = build_pipeline(
            EDGES[composition], dependency="dep", bus=bus, clock=clock, rng=random.Random(seed)
        )
        # The same strategies over a wire that is not the unary one by identity: layered.
        pipeline = built if fused else built.with_wire(partial(send_on_wire))
        assert (pipeline.fused is not None) is fused
        outcomes = await _script(pipeline, clock, seed)
        runs.append((outcomes, seen, _state(pipeline)))
    fused_run, layered_run = runs
    assert fused_run[0] == layered_run[0]
    assert fused_run[1] == layered_run[1]
    assert fused_run[2] == layered_run[2]
    ends = {o[0] for o in fused_run[0][:-1]}
    assert {"ok", "AioRpcError", "BreakerOpenError", "cancelled"} <= ends  # the script reaches them
