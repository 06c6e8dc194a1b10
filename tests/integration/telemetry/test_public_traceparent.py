"""The gateway with MESH_PUBLIC_TRACEPARENT=link (round 4, item 10): a public client's
traceparent chose the trace id and sampled flag of every span its call caused, in every service
(10 GetHome with a chosen id: all 100 spans of gateway, profile and recommendation carried it;
with flags 00 none was recorded). Now each call starts a trace of the gateway's own, the
client's trace id is kept as `mesh.client_trace_id`, and the services behind the gateway
continue the gateway's context as before."""

from __future__ import annotations

import json
import secrets
from collections import defaultdict
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from grpc_resilience_mesh.services.telemetry import names as n
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing, server_tracing
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    profile_pb2,
    profile_pb2_grpc,
)
from tests.integration.hardening import inproc_services
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving

KEY = "public-traceparent-key"
GET_HOME = "Recv.mesh.v1.Gateway.GetHome"


def spans_in(traces_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every span written, by the file (service) it is in."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(traces_dir.glob("*.jsonl")):
        found[path.stem] = [json.loads(line) for line in path.read_text().splitlines() if line]
    return found


async def get_homes(addr: str, flags: str, calls: int) -> list[str]:
    """`calls` GetHome, each with a traceparent of a fresh trace id and `flags`; the ids sent."""
    sent = []
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        for i in range(calls):
            trace_id = secrets.token_hex(16)
            sent.append(trace_id)
            await stub.GetHome(
                gateway_pb2.GetHomeRequest(user_id=f"u-{i + 1:04d}", limit=5),
                timeout=5,
                metadata=(
                    ("authorization", f"Bearer {KEY}"),
                    ("traceparent", f"00-{trace_id}-{secrets.token_hex(8)}-{flags}"),
                ),
            )
    return sent


async def test_the_gateway_starts_its_own_trace_and_keeps_the_clients_id(tmp_path: Path) -> None:
    env = {
        "MESH_API_KEYS": KEY,
        "MESH_TRACING": "1",
        "MESH_TRACES_DIR": str(tmp_path),
        "MESH_PUBLIC_TRACEPARENT": "link",
    }
    async with inproc_services.serving(env=env) as served:
        sampled = await get_homes(served.listen["gateway"], "01", 5)
        unsampled = await get_homes(served.listen["gateway"], "00", 5)
    spans = spans_in(tmp_path)  # the services flushed their spans as they stopped
    every = [span for found in spans.values() for span in found]
    roots = [span for span in spans["gateway"] if span["name"] == GET_HOME]
    by_trace: dict[str, set[str]] = defaultdict(set)
    for service, found in spans.items():
        for span in found:
            by_trace[span["trace_id"]].add(service)

    assert not {span["trace_id"] for span in every} & {*sampled, *unsampled}
    assert sorted(root["attributes"][n.CLIENT_TRACE_ID] for root in roots) == sorted(
        [*sampled, *unsampled]
    )
    assert all(root["parent_span_id"] is None for root in roots), roots
    own = {root["trace_id"] for root in roots}
    assert len(own) == 10
    for trace_id in own:  # the callees continue the gateway's trace: one trace per call
        assert by_trace[trace_id] == {"gateway", "profile", "recommendation"}, trace_id
    served_calls = {span["trace_id"] for span in spans["gateway"] if span["kind"] == "SERVER"}
    assert served_calls == own  # (the gateway's warm-up at start is a trace of its own)


async def test_with_the_sdks_spans_the_clients_context_is_a_link() -> None:
    """Spans the SDK makes (OTLP, another sampler or processor) carry the client's context as a
    span link too, and a header that is not a valid traceparent is kept nowhere."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    layers = server_tracing(MeshTracing(provider), own_traces=True)
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    async with serving(profile_servicer(ProfileFake()), layers) as target:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = profile_pb2_grpc.ProfileServiceStub(channel)
            for traceparent in (f"00-{trace_id}-{span_id}-00", "00-not-a-traceparent-01"):
                await stub.GetProfile(
                    profile_pb2.GetProfileRequest(user_id="u-0001"),
                    timeout=5,
                    metadata=(("traceparent", traceparent),),
                )
    linked, unlinked = exporter.get_finished_spans()
    assert linked.parent is None and linked.context.trace_id != int(trace_id, 16)
    assert linked.attributes is not None
    assert linked.attributes[n.CLIENT_TRACE_ID] == trace_id
    assert [(link.context.trace_id, link.context.span_id) for link in linked.links] == [
        (int(trace_id, 16), int(span_id, 16))
    ]
    assert unlinked.attributes is not None and n.CLIENT_TRACE_ID not in unlinked.attributes
    assert not unlinked.links
