"""A stream's trace over two real hops: the caller's trace continues in the relaying server's
Recv span (a streaming one), and its Sent span tells which case happened (committed after a
retry, or partial after N messages)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.gateway.streams import relay_stream
from grpc_resilience_mesh.services.runtime.relay import relay_failure
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing, server_tracing
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    recommendation_pb2,
    recommendation_pb2_grpc,
)
from tests.integration.resilience.servers import serving

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


class Ranked(recommendation_pb2_grpc.RecommendationServiceServicer):
    """B: 5 items; the first attempt fails before any when `reset_first`, every attempt after 3
    when `cut_after`."""

    def __init__(self, reset_first: bool = False, cut_after: int | None = None) -> None:
        self.reset_first = reset_first
        self.cut_after = cut_after
        self.attempts = 0

    async def StreamRecommend(
        self, request: recommendation_pb2.RecommendRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        self.attempts += 1
        if self.reset_first and self.attempts == 1:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reset before the first item")
        for n in range(5):
            if n == self.cut_after:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "reset mid-stream")
            yield recommendation_pb2.RankedProduct(rank=n + 1)


class Relay(gateway_pb2_grpc.GatewayServicer):
    """A: the gateway's relay over a traced resilient channel to B."""

    def __init__(self, b_target: str, tracing: MeshTracing, bus: EventBus) -> None:
        policy = from_dict(EdgePolicy, {"retry": {"base_backoff_s": 0.001, "max_backoff_s": 0.002}})
        pipeline = build_pipeline(
            policy,
            dependency="recommendation",
            bus=bus,
            clock=SystemClock(),
            attempt_observer=tracing.attempt_observer,
            call_observer=tracing.call_observer,
        )
        interceptor = ResilienceInterceptor(
            pipeline, dependency="recommendation", clock=SystemClock()
        )
        self.channel = resilient_channel(b_target, interceptor)
        self.stub = recommendation_pb2_grpc.RecommendationServiceStub(self.channel)

    async def StreamRecommendations(
        self, request: gateway_pb2.GetHomeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        async def relay(err: grpc.aio.AioRpcError, trailers: Sequence[tuple[str, str]]) -> None:
            await relay_failure(context, err, "recommendation", True, None, trailers)

        async for item in relay_stream(self.stub, request.user_id, request.limit, relay):
            yield item


async def traced_run(b: Ranked) -> list[ReadableSpan]:
    """One stream read through A with a known traceparent; every span A made."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "gateway"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = MeshTracing(provider)
    bus = EventBus()
    bus.subscribe(tracing.listener)
    register_b = partial(recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server, b)
    async with serving(register_b) as b_target:
        relay = Relay(b_target, tracing, bus)
        interceptors = server_layers(
            "gateway", ServerPolicy(), bus, FaultTable(), tracing=server_tracing(tracing)
        )
        register_a = partial(gateway_pb2_grpc.add_GatewayServicer_to_server, relay)
        async with serving(register_a, interceptors) as a_target:
            async with grpc.aio.insecure_channel(a_target) as channel:
                call = gateway_pb2_grpc.GatewayStub(channel).StreamRecommendations(
                    gateway_pb2.GetHomeRequest(user_id="u-0001", limit=5),
                    timeout=5,
                    metadata=(("traceparent", TRACEPARENT),),
                )
                try:
                    async for _ in call:
                        pass
                except grpc.aio.AioRpcError:
                    pass
        await relay.channel.close()
    provider.shutdown()
    return list(exporter.get_finished_spans())


def named(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def events(span: ReadableSpan) -> dict[str, dict[str, Any]]:
    return {e.name: dict(e.attributes or {}) for e in span.events}


@pytest.mark.parametrize(
    ("b", "outcome", "messages", "attempts", "code"),
    [
        (Ranked(reset_first=True), "retried-before-first-message", 5, 2, 0),
        (Ranked(cut_after=3), "partial", 3, 1, 14),
    ],
)
async def test_the_trace_of_a_stream_says_which_case_happened(
    b: Ranked, outcome: str, messages: int, attempts: int, code: int
) -> None:
    spans = await traced_run(b)
    assert {format(s.context.trace_id, "032x") for s in spans} == {TRACE_ID}
    [recv] = named(spans, "Recv.mesh.v1.Gateway.StreamRecommendations")
    assert recv.attributes is not None
    assert recv.attributes["mesh.messages"] == messages
    assert recv.attributes["rpc.grpc.status_code"] == code
    [sent] = named(spans, "Sent.mesh.v1.RecommendationService.StreamRecommend")
    assert sent.parent is not None and sent.parent.span_id == recv.context.span_id
    ended = events(sent)["stream ended"]
    assert ended["mesh.stream_outcome"] == outcome and ended["mesh.messages"] == messages
    assert events(sent)["stream committed"]["mesh.attempt"] == attempts
    assert len(named(spans, "Attempt.mesh.v1.RecommendationService.StreamRecommend")) == attempts
