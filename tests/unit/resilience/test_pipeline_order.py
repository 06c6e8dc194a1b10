"""The declared strategy order, pinned for every preset and edge."""

from __future__ import annotations

import pytest

from mesh.resilience.channel import resilient_channel
from mesh.resilience.clock import FakeClock
from mesh.resilience.interceptor import ResilienceInterceptor
from mesh.resilience.pipeline import PIPELINE_ORDER, build_pipeline
from mesh.resilience.policy import PRESETS, load_policy
from mesh.topology import EDGES
from tests.unit.resilience.unit_fakes import recording_bus

FULL = ("bulkhead", "total_deadline", "retry", "breaker", "attempt_timeout", "attempt_hook")
EXPECTED = {
    "full": FULL,
    "retry-only": ("total_deadline", "retry", "attempt_timeout", "attempt_hook"),
    "unprotected": ("total_deadline", "attempt_timeout", "attempt_hook"),
}


def test_declared_order_is_outermost_bulkhead_to_innermost_attempt_hook() -> None:
    assert PIPELINE_ORDER == FULL


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
        assert channel._unary_unary_interceptors == [interceptor]
        assert interceptor.pipeline.names == FULL
    finally:
        await channel.close()
