"""A chaos run's id, sent as W3C baggage (`mesh.chaos.run_id=<id>`), is on the SERVER span of
every hop the call causes: the first service records it, baggage carries it to the next one
(whose span is the first hop's attempt's child), and a call without baggage gets no such
attribute. With either recorder: the SDK's (OTLP, in-memory) and the light one (JSON lines)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from grpc_aio_resilience import (
    EdgePolicy,
    EventBus,
    ResilienceInterceptor,
    SystemClock,
    build_pipeline,
    resilient_channel,
)
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing, setup_tracing
from tests.integration.resilience.servers import serving

RUN_ID = "20261205T204500-a1b2c3"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
FRONT = "/chain.v1.Front/Get"
BACK = "/chain.v1.Back/Get"


def _tracing(kind: str, service: str, traces: Path) -> tuple[MeshTracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    if kind == "sdk":
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        found = setup_tracing(service, {"MESH_TRACES_DIR": str(traces)})
        assert found is not None
        provider = found
    return MeshTracing(provider), exporter


def _service(name: str, behaviour: Any) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        name, {"Get": grpc.unary_unary_rpc_method_handler(behaviour)}
    )


@asynccontextmanager
async def chain(kind: str, traces: Path) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """front -> back, each traced as a service mounts it; yields front's address and, once the
    block ends, fills the list with every span as {name, attributes, span_id, parent_id}."""
    front_tracing, front_spans = _tracing(kind, "front", traces)
    back_tracing, back_spans = _tracing(kind, "back", traces)
    spans: list[dict[str, Any]] = []

    async def back_get(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return b"back:" + request

    pipeline = build_pipeline(
        EdgePolicy(),
        dependency="back",
        bus=EventBus(),
        clock=SystemClock(),
        attempt_observer=front_tracing.attempt_observer,
        call_observer=front_tracing.call_observer,
    )
    async with AsyncExitStack() as stack:
        back = await stack.enter_async_context(
            serving(
                lambda s: s.add_generic_rpc_handlers((_service("chain.v1.Back", back_get),)),
                [back_tracing.server_interceptor()],
            )
        )
        channel = resilient_channel(
            back, ResilienceInterceptor(pipeline, dependency="back", clock=SystemClock())
        )
        stack.push_async_callback(channel.close)

        async def front_get(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            answer: bytes = await channel.unary_unary(BACK)(request, timeout=5)
            return answer

        front = await stack.enter_async_context(
            serving(
                lambda s: s.add_generic_rpc_handlers((_service("chain.v1.Front", front_get),)),
                [front_tracing.server_interceptor()],
            )
        )
        yield front, spans
    for tracing in (front_tracing, back_tracing):
        await tracing.shutdown()
    spans.extend(_finished(kind, traces, front_spans, back_spans))


def _finished(kind: str, traces: Path, *exporters: InMemorySpanExporter) -> list[dict[str, Any]]:
    if kind == "sdk":
        return [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "span_id": f"{s.context.span_id:016x}" if s.context else None,
                "parent_id": f"{s.parent.span_id:016x}" if s.parent else None,
            }
            for e in exporters
            for s in e.get_finished_spans()
        ]
    lines = [
        json.loads(line) for f in traces.glob("*.jsonl") for line in f.read_text().splitlines()
    ]
    return [
        {
            "name": line["name"],
            "attributes": line["attributes"],
            "span_id": line["span_id"],
            "parent_id": line["parent_span_id"],
        }
        for line in lines
    ]


def _one(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, (name, [s["name"] for s in spans])
    return found[0]


@pytest.mark.parametrize("kind", ["sdk", "jsonl"])
async def test_the_run_id_in_baggage_is_on_the_server_span_of_every_hop(
    kind: str, tmp_path: Path
) -> None:
    async with chain(kind, tmp_path) as (front, spans):
        async with grpc.aio.insecure_channel(front) as channel:
            metadata = (("traceparent", TRACEPARENT), ("baggage", f"mesh.chaos.run_id={RUN_ID}"))
            assert await channel.unary_unary(FRONT)(b"k", timeout=5, metadata=metadata) == (
                b"back:k"
            )
    front_span = _one(spans, "Recv.chain.v1.Front.Get")
    back_span = _one(spans, "Recv.chain.v1.Back.Get")
    attempt = _one(spans, "Attempt.chain.v1.Back.Get")
    assert front_span["attributes"]["mesh.chaos.run_id"] == RUN_ID
    assert back_span["attributes"]["mesh.chaos.run_id"] == RUN_ID
    assert back_span["parent_id"] == attempt["span_id"]


@pytest.mark.parametrize("kind", ["sdk", "jsonl"])
async def test_a_call_without_baggage_has_no_run_id(kind: str, tmp_path: Path) -> None:
    async with chain(kind, tmp_path) as (front, spans):
        async with grpc.aio.insecure_channel(front) as channel:
            for metadata in ((("traceparent", TRACEPARENT),), (("baggage", "tenant=t1"),), ()):
                await channel.unary_unary(FRONT)(b"k", timeout=5, metadata=metadata)
    servers = [s for s in spans if s["name"].startswith("Recv.")]
    assert len(servers) == 6
    assert all("mesh.chaos.run_id" not in s["attributes"] for s in servers)
