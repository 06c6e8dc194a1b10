"""The OpenTelemetry SDK behind the seam: every span an SDK span, for any exporter, sampler,
processor or id generator (OTLP, InMemorySpanExporter, a custom sampler)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import baggage, trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace import SpanKind

from grpc_resilience_mesh.services.telemetry import names as n
from grpc_resilience_mesh.services.telemetry.tracing.seam import WireIds
from grpc_resilience_mesh.services.telemetry.tracing.traceparent import extract_parent

BAGGAGE_HEADER = "baggage"
"""W3C baggage's header: only a call that sent one can carry a chaos run id. The light
recorder's fast path (a traceparent alone) never comes here."""


def with_run_id(parent: Context, attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    """`attributes`, with the chaos run id the caller's baggage carries (`mesh.chaos.run_id`)
    when it carries one, so a run's spans are found by that attribute in any backend."""
    run_id = baggage.get_baggage(n.CHAOS_RUN_ID, parent)
    if not isinstance(run_id, str) or not run_id:
        return attributes
    return {**attributes, n.CHAOS_RUN_ID: run_id}


class SdkRecorder:
    """A `SpanRecorder` over an OpenTelemetry tracer (the SDK's, or any other)."""

    __slots__ = ("_propagator", "_tracer", "_w3c_only")

    def __init__(self, tracer: trace.Tracer, propagator: TextMapPropagator, w3c_only: bool) -> None:
        self._tracer = tracer
        self._propagator = propagator
        self._w3c_only = w3c_only

    def start(self, name: str, kind: SpanKind, attributes: Mapping[str, Any]) -> trace.Span:
        return self._tracer.start_span(name, kind=kind, attributes=attributes)

    def start_child(
        self, name: str, kind: SpanKind, parent: trace.Span, attributes: Mapping[str, Any]
    ) -> trace.Span:
        context = trace.set_span_in_context(parent)
        return self._tracer.start_span(name, context, kind=kind, attributes=attributes)

    def start_server(
        self, name: str, carrier: Mapping[str, str], attributes: Mapping[str, Any]
    ) -> tuple[trace.Span, Context]:
        parent = extract_parent(carrier, self._propagator, self._w3c_only)
        if parent is not None and BAGGAGE_HEADER in carrier:
            attributes = with_run_id(parent, attributes)
        span = self._tracer.start_span(name, parent, kind=SpanKind.SERVER, attributes=attributes)
        return span, trace.set_span_in_context(span, parent)

    def wire_ids(self, span: trace.Span) -> WireIds:
        sc = span.get_span_context()
        return sc.trace_id, sc.span_id, sc.trace_flags, sc.trace_state
