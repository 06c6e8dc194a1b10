"""An attempt span names the criticality the attempt carried; a throttle's local rejection is an
event on the call's span (that attempt never had a span of its own)."""

from __future__ import annotations

from random import Random
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from grpc_aio_resilience import criticality
from grpc_aio_resilience.context import CallContext
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import ClientThrottledError
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_aio_resilience.throttle import AdaptiveThrottle
from grpc_resilience_mesh.services.policy.loading import load_policy_text
from grpc_resilience_mesh.services.telemetry import names as n
from grpc_resilience_mesh.services.telemetry.tracing import spans as sp
from grpc_resilience_mesh.services.telemetry.tracing.span_events import tracing_listener
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import GET_PROFILE, REQUESTS, FakeCall

POLICY = "edge_defaults: {throttle: {enabled: true, min_requests: 0}}"


class MetadataWire:
    def __init__(self) -> None:
        self.sent: list[list[tuple[str, str | bytes]]] = []

    async def continuation(self, details: grpc.aio.ClientCallDetails, request: Any) -> FakeCall:
        self.sent.append(list(details.metadata or ()))
        return FakeCall("ok", None)


def traced_pipeline(exporter: InMemorySpanExporter) -> Pipeline:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    factory = sp.SpanFactory(provider.get_tracer("mesh"))
    bus = EventBus()
    bus.subscribe(tracing_listener)
    policy = load_policy_text(POLICY, "p.yaml", {}).edge("gateway_to_profile")
    return build_pipeline(
        policy,
        dependency="profile",
        bus=bus,
        clock=FakeClock(),
        rng=Random(1),
        attempt_observer=factory.attempt_observer,
        call_observer=factory.call_observer,
    )


async def one_call(pipeline: Pipeline, wire: MetadataWire) -> None:
    details = grpc.aio.ClientCallDetails(GET_PROFILE.encode(), None, None, None, None)
    ctx = CallContext("profile", GET_PROFILE, REQUESTS[GET_PROFILE], details, wire.continuation)
    await (await pipeline.run(ctx))


async def test_the_attempt_span_carries_the_criticality_the_wire_got() -> None:
    exporter = InMemorySpanExporter()
    pipeline, wire = traced_pipeline(exporter), MetadataWire()
    token = criticality.set_current(Criticality.SHEDDABLE)
    try:
        await one_call(pipeline, wire)
    finally:
        criticality.reset_current(token)
    assert (criticality.METADATA_KEY, "SHEDDABLE") in wire.sent[0]
    attempt = next(s for s in exporter.get_finished_spans() if s.name.startswith("Attempt."))
    assert attempt.attributes is not None
    assert attempt.attributes[n.CRITICALITY] == "SHEDDABLE"


async def test_a_throttled_call_shows_the_decision_on_its_span() -> None:
    exporter = InMemorySpanExporter()
    pipeline, wire = traced_pipeline(exporter), MetadataWire()
    throttle = pipeline.strategy("throttle")
    assert isinstance(throttle, AdaptiveThrottle)
    for _ in range(1000):
        throttle.window.record(accepted=False)
    with pytest.raises(ClientThrottledError):
        await one_call(pipeline, wire)
    assert wire.sent == []
    (call,) = exporter.get_finished_spans()
    (event,) = [e for e in call.events if e.name == n.EV_CLIENT_THROTTLED]
    assert event.attributes is not None
    assert event.attributes[n.REQUESTS] == 1001  # its own rejection counts as a request
    assert event.attributes[n.ACCEPTS] == 0
    assert call.attributes is not None and call.attributes[n.ATTEMPTS_SENT] == 0
