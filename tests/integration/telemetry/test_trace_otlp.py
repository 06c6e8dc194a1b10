"""A degraded request told by its trace alone: spans from every hop reach an OTLP receiver."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator

import grpc.aio
import pytest

from grpc_resilience_mesh.services.runtime.logging import JsonFormatter
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.telemetry.inproc_mesh import in_process_mesh
from tests.integration.telemetry.otlp_receiver import ReceivedSpan, Receiver, start_receiver

GET_HOME = "Recv.mesh.v1.Gateway.GetHome"
SENT_RECOMMEND = "Sent.mesh.v1.RecommendationService.Recommend"
RECV_RECOMMEND = "Recv.mesh.v1.RecommendationService.Recommend"
UNAVAILABLE = 14


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    server, rec, endpoint = await start_receiver()
    try:
        yield rec, endpoint
    finally:
        await server.stop(None)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter("test"))
        self.lines: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


async def _get_home(gateway: str, trace_id: str, parent_id: str) -> gateway_pb2.GetHomeResponse:
    # What the load generator does: its own W3C traceparent per request.
    md = (("traceparent", f"00-{trace_id}-{parent_id}-01"),)
    async with grpc.aio.insecure_channel(gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        reply: gateway_pb2.GetHomeResponse = await stub.GetHome(
            gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3), timeout=5, metadata=md
        )
        return reply


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"{name}: {[s.name for s in spans]}"
    return found[0]


async def test_retried_call_is_one_trace_with_attempts_and_backoffs(
    receiver: tuple[Receiver, str],
) -> None:
    rec, endpoint = receiver
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    lines = _Lines()
    async with in_process_mesh(endpoint, fail_first=2) as mesh:
        logging.getLogger().addHandler(lines)
        try:
            reply = await _get_home(mesh.gateway, trace_id, parent_id)
        finally:
            logging.getLogger().removeHandler(lines)
    assert not reply.degraded and reply.recommendations

    spans = rec.trace(trace_id)
    assert {s.service for s in spans} == {"gateway", "recommendation", "profile"}
    root = _one(spans, GET_HOME)
    assert (root.parent_span_id, root.kind, root.service) == (parent_id, "SERVER", "gateway")
    assert "mesh.degraded" not in root.attributes

    call = _one(spans, SENT_RECOMMEND)
    assert call.parent_span_id == root.span_id and call.status == "STATUS_CODE_UNSET"
    assert call.attributes["mesh.attempts_sent"] == 3
    assert call.attributes["mesh.call_budget_s"] > 0  # noted by attempt 1, written at the end
    attempts = rec.children(call)
    assert [a.attributes["mesh.attempt"] for a in attempts] == [1, 2, 3]
    assert [a.attributes["mesh.previous_attempts"] for a in attempts] == [0, 1, 2]
    assert [a.attributes["rpc.grpc.status_code"] for a in attempts] == [UNAVAILABLE] * 2 + [0]
    assert [a.status for a in attempts] == ["STATUS_CODE_ERROR"] * 2 + ["STATUS_CODE_UNSET"]
    assert all(0 < a.attributes["mesh.attempt_timeout_s"] <= 0.35 for a in attempts)

    retries = [e for e in call.events if e[0] == "retry scheduled"]
    assert len(retries) == 2
    for (_, at_ns, attrs), before, after in zip(retries, attempts[:-1], attempts[1:], strict=True):
        assert attrs["mesh.reason"] == "UNAVAILABLE" and attrs["mesh.delay_s"] >= 0
        assert before.end_ns <= at_ns <= after.start_ns

    servers = [rec.children(a) for a in attempts]
    assert [[s.name for s in kids] for kids in servers] == [[RECV_RECOMMEND]] * 3
    assert [kids[0].attributes["rpc.grpc.status_code"] for kids in servers] == [14, 14, 0]
    # The successful attempt's server span goes one hop further, to profile.
    inner_call = _one(rec.children(servers[2][0]), "Sent.mesh.v1.ProfileService.GetProfile")
    inner_server = rec.children(rec.children(inner_call)[0])[0]
    assert (inner_server.service, inner_server.kind) == ("profile", "SERVER")

    # Log lines written while a server span is current carry its ids.
    logged = [x for x in lines.lines if x["msg"] == "recommend received"]
    assert [x["trace_id"] for x in logged] == [trace_id] * 3
    assert [x["span_id"] for x in logged] == [kids[0].span_id for kids in servers]


async def test_breaker_rejection_and_fallback_are_events(receiver: tuple[Receiver, str]) -> None:
    rec, endpoint = receiver
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    overrides = {"MESH_POLICY__GATEWAY_TO_RECOMMENDATION__BREAKER__CONSECUTIVE_FAILURES": "2"}
    async with in_process_mesh(endpoint, fail_first=10**6, extra_env=overrides) as mesh:
        reply = await _get_home(mesh.gateway, trace_id, parent_id)
    assert [d.part for d in reply.degraded] == ["recommendations"]

    spans = rec.trace(trace_id)
    root = _one(spans, GET_HOME)
    assert root.attributes["mesh.degraded"] is True
    assert root.attributes["mesh.degraded_parts"] == ["recommendation"]
    fallback = [attrs for name, _, attrs in root.events if name == "fallback served"]
    assert len(fallback) == 1 and fallback[0]["mesh.code"] == "UNAVAILABLE"
    assert fallback[0]["mesh.served_by"] in ("popular", "cached-popular")

    call = _one(spans, SENT_RECOMMEND)
    assert call.event_names() == [
        "retry scheduled",
        "breaker opened",
        "retry scheduled",
        "breaker rejected call",
    ] or call.event_names() == [
        "retry scheduled",
        "breaker opened",
        "breaker rejected call",
    ], call.event_names()
    assert call.status == "STATUS_CODE_ERROR"
    assert call.attributes["mesh.error_type"] == "BreakerOpenError"
    assert call.attributes["mesh.attempts_sent"] == 2
    assert len(rec.children(call)) == 2
