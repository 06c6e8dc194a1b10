"""The declared strategy order, pinned for every preset and edge."""

from __future__ import annotations

import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import (
    BREAKER_OUTSIDE_RETRY_ORDER,
    ORDERS,
    PIPELINE_ORDER,
    build_pipeline,
)
from grpc_resilience_mesh.services.policy.loading import PRESETS, load_policy, load_policy_text
from grpc_resilience_mesh.services.topology import EDGES
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import recording_bus

FULL = (
    "bulkhead",
    "total_deadline",
    "retry",
    "throttle",
    "breaker",
    "attempt_timeout",
    "attempt_hook",
)
SEED_003 = (
    "bulkhead",
    "total_deadline",
    "breaker",
    "retry",
    "throttle",
    "attempt_timeout",
    "attempt_hook",
)
EXPECTED = {
    "full": FULL,
    "retry-only": ("total_deadline", "retry", "attempt_timeout", "attempt_hook"),
    "unprotected": ("total_deadline", "attempt_timeout", "attempt_hook"),
}


def hedging_before_retry(order: tuple[str, ...]) -> tuple[str, ...]:
    """The declared order: hedging (off in every preset) sits just outside retry."""
    at = order.index("retry")
    return (*order[:at], "hedging", *order[at:])


def test_declared_order_is_outermost_bulkhead_to_innermost_attempt_hook() -> None:
    assert PIPELINE_ORDER == hedging_before_retry(FULL)


def test_the_other_declared_order_puts_the_breaker_outside_retry() -> None:
    assert BREAKER_OUTSIDE_RETRY_ORDER == hedging_before_retry(SEED_003)
    assert ORDERS == {
        "retry-outside-breaker": hedging_before_retry(FULL),
        "breaker-outside-retry": hedging_before_retry(SEED_003),
    }


def test_hedging_sits_outside_retry_when_an_edge_turns_it_on() -> None:
    policy = from_dict(EdgePolicy, {"hedging": {"enabled": True}, "throttle": {"enabled": True}})
    pipeline = build_pipeline(policy, dependency="profile", bus=recording_bus()[0])
    assert pipeline.names == hedging_before_retry(FULL)


def test_the_order_field_selects_it_and_defaults_to_the_declared_order() -> None:
    text = (
        "edge_defaults: {throttle: {enabled: true}}\n"
        "edges: {gateway_to_profile: {order: breaker-outside-retry}}"
    )
    policy = load_policy_text(text, "p.yaml", {})
    bus = recording_bus()[0]
    chosen = build_pipeline(policy.edge("gateway_to_profile"), dependency="profile", bus=bus)
    default = build_pipeline(policy.edge("gateway_to_payment"), dependency="payment", bus=bus)
    assert chosen.names == SEED_003
    assert default.names == FULL


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("edge", [e.name for e in EDGES])
def test_every_edge_pipeline_keeps_the_declared_order(preset: str, edge: str) -> None:
    policy = load_policy(preset, {}).edge(edge)
    pipeline = build_pipeline(policy, dependency=edge, bus=recording_bus()[0])
    assert pipeline.names == EXPECTED[preset]


async def test_resilient_channel_has_exactly_one_interceptor_with_that_pipeline() -> None:
    policy = load_policy("full", {}).edge("gateway_to_profile")
    pipeline = build_pipeline(policy, dependency="profile", bus=recording_bus()[0])
    interceptor = ResilienceInterceptor(pipeline, dependency="profile", clock=FakeClock())
    channel = resilient_channel("127.0.0.1:1", interceptor, native_retry=policy.native_retry)
    try:
        # unary calls run the interceptor's pipeline past grpc.aio's interceptor API; streams
        # go through its streams side, the one interceptor on the channel it wraps
        assert channel.interceptor is interceptor
        assert channel.wrapped._unary_unary_interceptors == []
        assert len(channel.wrapped._unary_stream_interceptors) == 1
        assert interceptor.pipeline.names == FULL
    finally:
        await channel.close()
