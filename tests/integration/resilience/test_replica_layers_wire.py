"""A call over two real replicas, the router picking, crosses no client interceptor: the
replica's own call starts from the pipeline the channel's call object runs in the caller's
task (grpc_aio_resilience.direct), a stream's from its own task, with no router interceptor
between."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import FrameType
from typing import Any

import grpc.aio
import pytest
from grpc.aio import _channel

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import replica_router, resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc, recommendation_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving
from tests.integration.resilience.test_streams_wire import REQUEST, StreamFake, register

Register = Callable[[grpc.aio.Server], None]


def interceptor_frames(kind: str) -> int:
    """Client interceptor methods (`intercept_<kind>`) on the stack that is running now."""
    frame: FrameType | None = sys._getframe()
    found = 0
    while frame is not None:
        found += frame.f_code.co_name == f"intercept_{kind}"
        frame = frame.f_back
    return found


def record_layers(monkeypatch: pytest.MonkeyPatch, multicallable: type, kind: str) -> list[int]:
    """For every call started on any channel, the interceptor frames it started under."""
    layers: list[int] = []
    started: Callable[..., Any] = multicallable.__call__

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        layers.append(interceptor_frames(kind))
        return started(self, *args, **kwargs)

    monkeypatch.setattr(multicallable, "__call__", recording)
    return layers


@asynccontextmanager
async def over_replicas(first: Register, second: Register) -> AsyncIterator[grpc.aio.Channel]:
    """An edge channel over two real replicas, ejection on: the router picks each attempt's."""
    async with serving(first) as one, serving(second) as two:
        policy = from_dict(
            EdgePolicy,
            {"breaker": {"enabled": False}, "deadline": {"total_s": 5.0, "attempt_s": 2.0}},
        )
        bus = EventBus()
        pipeline = build_pipeline(policy, dependency="dep", bus=bus, clock=SystemClock())
        channel = resilient_channel(
            f"{one},{two}",
            ResilienceInterceptor(pipeline, dependency="dep", clock=SystemClock()),
            outlier=OutlierPolicy(enabled=True),
            bus=bus,
            dependency="dep",
        )
        router = replica_router(channel)
        assert router is not None
        try:
            yield channel
        finally:
            await router.close()
            await channel.close()


async def test_a_unary_call_reaches_its_replica_through_no_interceptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = ProfileFake(), ProfileFake()
    layers = record_layers(monkeypatch, _channel.UnaryUnaryMultiCallable, "unary_unary")
    async with over_replicas(profile_servicer(a), profile_servicer(b)) as channel:
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        for _ in range(6):
            await stub.GetProfile(profile_pb2.GetProfileRequest(user_id="u1"), timeout=5)
    attempts = len(a.arrivals_s) + len(b.arrivals_s)
    assert min(len(a.arrivals_s), len(b.arrivals_s)) >= 2
    # Only each attempt's start on its replica's channel, under no interceptor.
    assert layers == [0] * attempts


async def test_a_stream_reaches_its_replica_through_no_router_interceptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = StreamFake(), StreamFake()
    layers = record_layers(monkeypatch, _channel.UnaryStreamMultiCallable, "unary_stream")
    async with over_replicas(register(a), register(b)) as channel:
        stub = recommendation_pb2_grpc.RecommendationServiceStub(channel)
        for _ in range(4):
            assert len([item async for item in stub.StreamRecommend(REQUEST, timeout=5)]) == 5
    assert min(a.attempts, b.attempts) >= 1
    assert layers == [0] * (4 + a.attempts + b.attempts)
