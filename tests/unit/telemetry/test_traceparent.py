"""The hand-read traceparent gives the SDK propagator's answer for every header, good or bad."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from grpc_resilience_mesh.services.telemetry.tracing.traceparent import (
    extract_parent,
    parse_traceparent,
)

_SDK = TraceContextTextMapPropagator()
TID = "0af7651916cd43dd8448eb211c80319c"
SID = "b7ad6b7169203331"

HEADERS = [
    f"00-{TID}-{SID}-01",  # valid, sampled
    f"00-{TID}-{SID}-00",  # valid, not sampled
    f"00-{TID.upper()}-{SID}-01",  # upper case hex: invalid
    f"00-{'0' * 32}-{SID}-01",  # all-zero trace id: invalid
    f"00-{TID}-{'0' * 16}-01",  # all-zero span id: invalid
    f"ff-{TID}-{SID}-01",  # version ff: invalid
    f"00-{TID}-{SID}-01-extra",  # version 00 with more fields: invalid
    f"01-{TID}-{SID}-01-extra",  # a future version may add fields: valid
    f"01-{TID}-{SID}-01",
    f"00-{TID}-{SID}-0g",  # bad flags hex
    f"00-{TID[:-1]}x-{SID}-01",  # bad trace id hex
    f"00-{TID}-{SID}_1-01"[:55],  # underscore (int() would take it)
    f"00-{TID[:8]}_{TID[9:]}-{SID}-01",
    f"00_{TID}-{SID}-01",  # wrong separator
    f"00-{TID}-{SID}-1",  # too short
    f" 00-{TID}-{SID}-01",  # leading whitespace (the SDK tolerates it)
    f"00-{TID}-{SID}-01 ",
    "",
    "garbage",
    "x" * 600,
]


def _sdk_parent(carrier: dict[str, str]) -> trace.SpanContext | None:
    ctx = trace.get_current_span(_SDK.extract(carrier)).get_span_context()
    return ctx if ctx.is_valid else None


def _ours(carrier: dict[str, str]) -> trace.SpanContext | None:
    parent = extract_parent(carrier, _SDK, w3c_only=True)
    if parent is None:
        return None
    ctx = trace.get_current_span(parent).get_span_context()
    return ctx if ctx.is_valid else None


@pytest.mark.parametrize("header", HEADERS)
def test_every_header_reads_as_the_sdk_reads_it(header: str) -> None:
    carrier = {"traceparent": header}
    assert _ours(carrier) == _sdk_parent(carrier)


def test_a_valid_header_is_a_remote_parent_with_its_flags() -> None:
    sampled = parse_traceparent(f"00-{TID}-{SID}-01")
    assert sampled is not None
    assert (sampled.trace_id, sampled.span_id) == (int(TID, 16), int(SID, 16))
    assert sampled.is_remote and sampled.trace_flags.sampled
    unsampled = parse_traceparent(f"00-{TID}-{SID}-00")
    assert unsampled is not None and not unsampled.trace_flags.sampled


def test_tracestate_and_baggage_go_through_the_propagator() -> None:
    carrier = {"traceparent": f"00-{TID}-{SID}-01", "tracestate": "vendor=1"}
    ours = _ours(carrier)
    assert ours == _sdk_parent(carrier)
    assert ours is not None and ours.trace_state.get("vendor") == "1"


def test_no_carrier_means_no_parent() -> None:
    assert extract_parent({}, _SDK, w3c_only=True) is None
