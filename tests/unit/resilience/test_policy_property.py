"""Any policy the validator accepts keeps an edge working: a real pipeline (fake clock, fake
wire) never ends a call with UNKNOWN, and serves again once the dependency is back."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
from typing import Any

import grpc
import grpc.aio
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpc_aio_resilience import PipelineOrder
from grpc_aio_resilience.breaker import BreakerStrategy
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import BreakerState, CallFinished
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.policy.loading import (
    PRESETS,
    PolicyError,
    load_policy,
    load_policy_text,
)
from grpc_resilience_mesh.services.topology import EDGES
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import GET_PROFILE, FakeWire, Reply, call, recording_bus

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
FAILURES: dict[str, tuple[Reply, float]] = {
    # name: (what each attempt gets, after how long: 1 ms lets a burst overlap in the bulkhead)
    "unavailable": (UNAVAILABLE, 0.001),
    "unavailable-pushback": ((UNAVAILABLE, "25"), 0.001),
    "exhausted-pushback": ((grpc.StatusCode.RESOURCE_EXHAUSTED, "0"), 0.001),
    "no-retry-pushback": ((UNAVAILABLE, "-1"), 0.001),
    "internal": (grpc.StatusCode.INTERNAL, 0.001),
    "hang": (None, 10_000.0),  # every attempt ends on its own timeout
}


WILD: list[float] = [math.inf, -math.inf, math.nan, 1e20, 10**20, -1.0, 0.0]
"""Values outside every documented range (the issue's .inf and 1e20 among them)."""


def within(low: float, high: float) -> st.SearchStrategy[float]:
    """Floats in [low, high], with the ends themselves drawn often."""
    return st.sampled_from([low, high]) | st.floats(low, high, allow_nan=False)


def small_or_any(low: int, high: int) -> st.SearchStrategy[int]:
    """Often a value the scenario's 23 failing calls can reach (so breakers open and bulkheads
    fill), else anything in the range."""
    return st.integers(max(low, 1), 6) | st.integers(low, high)


@st.composite
def edge_policies(draw: st.DrawFn) -> dict[str, Any]:
    """Raw EdgePolicy documents across the documented ranges, each number replaced by a wild
    one now and then: most pass the rules, some must be refused."""

    def pick(strategy: st.SearchStrategy[Any]) -> Any:
        value = draw(strategy)
        return draw(st.sampled_from(WILD)) if draw(st.integers(0, 29)) == 17 else value

    total = draw(within(0.001, 300))
    attempt = draw(within(0.001, total))
    window = draw(small_or_any(1, 1000))
    probes = draw(small_or_any(1, 100))
    base = draw(within(1e-6, 60))
    return {
        "order": draw(st.sampled_from(["retry-outside-breaker", "breaker-outside-retry"])),
        "deadline": {
            "total_s": pick(st.just(total)),
            "attempt_s": pick(st.just(attempt)),
            "min_attempt_s": pick(within(0, min(10, attempt / 2))),
        },
        "retry": {
            "max_attempts": pick(st.integers(1, 10)),
            "base_backoff_s": pick(st.just(base)),
            "max_backoff_s": pick(within(base, 60)),
            "budget": {
                "enabled": draw(st.booleans()),
                "max_tokens": pick(within(1e-3, 1000)),
                "token_ratio": pick(within(1e-3, 1)),
            },
        },
        "breaker": {
            "enabled": draw(st.booleans()),
            "scope": draw(st.sampled_from(["method", "dependency"])),
            "consecutive_failures": pick(small_or_any(0, 1000)),
            "failure_rate": pick(st.none() | within(1e-3, 1)),
            "window_size": pick(st.just(window)),
            "min_calls": pick(st.integers(1, window)),
            "open_s": pick(within(1e-3, 300)),
            "half_open_max_probes": pick(st.just(probes)),
            "half_open_successes": pick(st.integers(1, probes)),
        },
        "bulkhead": {
            "enabled": draw(st.booleans()),
            "max_concurrent": pick(small_or_any(1, 10_000)),
            "mode": draw(st.sampled_from(["reject", "queue"])),
            "max_wait_s": pick(within(0, 60)),
        },
    }


def accepted(raw: dict[str, Any]) -> EdgePolicy | None:
    """The edge policy as the services would load it (YAML text, safe_yaml, validator)."""
    try:
        policy = load_policy_text(yaml.safe_dump({"edge_defaults": raw}), "prop.yaml", {})
    except PolicyError:
        return None
    return policy.edge_defaults


async def outcome(pipeline: Any, wire: FakeWire) -> grpc.StatusCode:
    try:
        await call(pipeline, wire, GET_PROFILE)
    except grpc.aio.AioRpcError as err:
        return err.code()
    return grpc.StatusCode.OK


async def scenario(policy: EdgePolicy, failure: str, seed: int) -> None:
    clock = FakeClock()
    bus, seen = recording_bus()
    pipeline = build_pipeline(
        policy, dependency="dep", bus=bus, clock=clock, rng=random.Random(seed)
    )
    wire = FakeWire(clock, lambda method, n: None)

    healthy = [await outcome(pipeline, wire) for _ in range(5)]
    assert set(healthy) == {grpc.StatusCode.OK}

    reply, hang_s = FAILURES[failure]
    wire.reply, wire.hang_s = (lambda method, n: reply), hang_s
    failing = [await outcome(pipeline, wire) for _ in range(15)]
    failing += await asyncio.gather(*(outcome(pipeline, wire) for _ in range(8)))
    assert grpc.StatusCode.OK not in failing
    assert grpc.StatusCode.UNKNOWN not in failing

    wire.reply, wire.hang_s = (lambda method, n: None), 0.0
    clock.advance(policy.breaker.open_s + policy.deadline.total_s + 1.0)
    calls = policy.breaker.half_open_successes + 2
    recovered = [await outcome(pipeline, wire) for _ in range(calls)]
    assert set(recovered) == {grpc.StatusCode.OK}, recovered
    if policy.breaker.enabled:
        breaker = pipeline.strategy("breaker")
        assert isinstance(breaker, BreakerStrategy)
        assert {b.state for b in breaker.breakers.values()} == {BreakerState.CLOSED}
    finished = [e.outcome for e in seen if isinstance(e, CallFinished)]
    assert len(finished) == 5 + 15 + 8 + calls and "UNKNOWN" not in finished


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(edge_policies(), st.sampled_from(sorted(FAILURES)), st.integers(0, 2**16))
def test_an_accepted_policy_never_yields_unknown_and_recovers(
    raw: dict[str, Any], failure: str, seed: int
) -> None:
    policy = accepted(raw)
    if policy is None:
        return  # refused: nothing to run (the rules themselves are pinned in test_policy.py)
    asyncio.run(scenario(policy, failure, seed))


@pytest.mark.parametrize("order", ["retry-outside-breaker", "breaker-outside-retry"])
@pytest.mark.parametrize("preset", PRESETS)
def test_every_edge_of_the_shipped_presets_passes_the_same_scenario(
    preset: str, order: PipelineOrder
) -> None:
    policy = load_policy(preset, {})
    for edge in EDGES:
        edge_policy = dataclasses.replace(policy.edge(edge.name), order=order)
        for failure in sorted(FAILURES):
            asyncio.run(scenario(edge_policy, failure, 1))


# Whatever a document holds, the validator answers with a policy or a PolicyError.

SECRET = "s3cr3t-value"
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", "x", "1e20", ".inf", "nan", "reject", "UNAVAILABLE", SECRET])
)
KEYS = [
    *(f.name for f in dataclasses.fields(EdgePolicy)),
    "total_s",
    "attempt_s",
    "min_attempt_s",
    "max_attempts",
    "open_s",
    "window_size",
    "min_calls",
    "pool",
    "enabled",
    "retryable_codes",
]
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["edge_defaults", "edges", "servers", "x"]), documents))
def test_any_document_gives_a_policy_or_a_policy_error(doc: dict[str, Any]) -> None:
    text = yaml.safe_dump(doc)
    try:
        policy = load_policy_text(text, "fuzz.yaml", {})
    except PolicyError as err:
        message = str(err)
        assert message.startswith("fuzz.yaml: ") and "\n" not in message
        assert "input_value" not in message and SECRET not in message
        return
    for value in (policy.edge_defaults.deadline.total_s, policy.edge_defaults.breaker.open_s):
        assert math.isfinite(value)


@pytest.mark.parametrize(
    "raw",
    [
        {"breaker": {"window_size": 10**20}},
        {"breaker": {"open_s": math.inf}},
        {"deadline": {"min_attempt_s": math.inf}},
    ],
)
def test_the_issues_examples_never_reach_a_pipeline(raw: dict[str, Any]) -> None:
    assert accepted(raw) is None
