"""The incoming W3C `traceparent` read by hand on the common path (what extract costs ~3 us for).

Only the canonical version-00 header alone (no tracestate, no baggage) takes the fast path;
everything else (other versions, extra fields, whitespace, tracestate) goes through the SDK's
propagator, so the outcome is always the propagator's: a valid header continues the caller's
trace, a malformed one (bad hex, upper case, all-zero ids) starts a new one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import TextMapPropagator

_CANONICAL = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def parse_ids(value: str) -> tuple[int, int, int] | None:
    """(trace id, parent span id, flags) of a canonical version-00 header, or None when it is
    not one (including a well-formed header with an all-zero id, which W3C says to ignore)."""
    match = _CANONICAL.fullmatch(value)
    if match is None:
        return None
    trace_id = int(match[1], 16)
    span_id = int(match[2], 16)
    if not trace_id or not span_id:
        return None
    return trace_id, span_id, int(match[3], 16)


def parse_traceparent(value: str) -> trace.SpanContext | None:
    """The remote parent of a canonical version-00 header, or None when it is not one."""
    ids = parse_ids(value)
    if ids is None:
        return None
    return trace.SpanContext(ids[0], ids[1], is_remote=True, trace_flags=trace.TraceFlags(ids[2]))


def simple_traceparent(carrier: Mapping[str, str]) -> str | None:
    """The header when the carrier holds a canonical-length version-00 traceparent alone (the
    fast path's case; its outcome must then be what extract_parent gives)."""
    if len(carrier) != 1:
        return None
    value = carrier.get("traceparent")
    if value is None or len(value) != 55 or value[:3] != "00-":
        return None
    return value


def extract_parent(
    carrier: Mapping[str, str], propagator: TextMapPropagator, w3c_only: bool
) -> Context | None:
    """The parent context of a server span (None: no usable parent, the span is a root)."""
    if not carrier:
        return None
    value = simple_traceparent(carrier) if w3c_only else None
    if value is not None:
        parent = parse_traceparent(value)
        if parent is None:
            return None
        return trace.set_span_in_context(trace.NonRecordingSpan(parent), Context())
    return propagator.extract(carrier)
