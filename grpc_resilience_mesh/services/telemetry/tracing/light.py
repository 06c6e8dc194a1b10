"""The light recorder: spans recorded without the SDK's machinery, for the default JSON-lines
export (one of the two `SpanRecorder`s; seam.py chooses it at start-up).

The SDK builds each span from a sampler decision, a SpanContext, BoundedAttributes (a lock and
a validation per attribute), BoundedLists for events and links, and at its end a ReadableSpan
copy for the processors: ~10-18 us per span before any export. When a provider only writes
JSON lines (JsonLinesSpanProcessor, the default) or exports nothing, and samples the default
way (parentbased_always_on: every span kept, a parent's "not sampled" flag followed), a
`LightTracer` records our spans as plain slots and a dict, and hands each to the processor when
it ends, which encodes them in batches (span_json.light_span_line: the same line the SDK span
would give). They are
OpenTelemetry API spans: current in the context, read by the log formatter and propagators.

Anything else (OTLP, another processor or sampler, a custom id generator) goes to the SDK's own
tracer (through the SDK recorder, sdk.py), so an OTLP export or an InMemorySpanExporter sees
SDK spans as before. Whether the light path holds is re-checked whenever the provider's
processors change (one identity test per span), so a processor added later is honoured.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import SpanProcessor, Tracer
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
from opentelemetry.util import types

from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import JsonLinesSpanProcessor
from grpc_resilience_mesh.services.telemetry.tracing.light_span import LightSpan, Sink
from grpc_resilience_mesh.services.telemetry.tracing.sdk import SdkRecorder
from grpc_resilience_mesh.services.telemetry.tracing.seam import WireIds
from grpc_resilience_mesh.services.telemetry.tracing.span_json import service_name_json
from grpc_resilience_mesh.services.telemetry.tracing.traceparent import (
    parse_ids,
    simple_traceparent,
)

DEFAULT_SAMPLER = (
    "ParentBased{root:AlwaysOnSampler,remoteParentSampled:AlwaysOnSampler,"
    "remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,"
    "localParentNotSampled:AlwaysOffSampler}"
)
_SAMPLED = TraceFlags.SAMPLED
_RANDOM = TraceFlags.RANDOM_TRACE_ID
_getrandbits = random.getrandbits


class LightTracer(trace.Tracer):
    """A `SpanRecorder` (and an OpenTelemetry Tracer) making spans as the SDK tracer would;
    the other Tracer methods, and every span while the provider is not one it can stand in
    for, go to the SDK (`fallback`)."""

    def __init__(self, sdk: Tracer, fallback: SdkRecorder, w3c_only: bool = True) -> None:
        self._sdk = sdk
        self._fallback = fallback
        self._w3c_only = w3c_only
        self._active = sdk.span_processor
        self._service = service_name_json(sdk.resource)
        self._seen: tuple[SpanProcessor, ...] | None = None
        self._sink: Sink | None = None
        """Where an ended LightSpan goes; None while the SDK must make the spans."""

    def _refresh(self, processors: tuple[SpanProcessor, ...]) -> None:
        self._seen = processors
        sdk = self._sdk
        light = (
            all(type(p) is JsonLinesSpanProcessor for p in processors)
            and sdk.sampler.get_description() == DEFAULT_SAMPLER
            and type(sdk.id_generator) is RandomIdGenerator
        )
        self._sink = self._writers_sink(processors) if light else None  # type: ignore[arg-type]

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace.Span:
        """Attributes are taken as given (the mesh's own: str, int, float, bool); a copy is
        kept, so a caller may pass a shared constant mapping."""
        sink = self._current_sink()
        if sink is None or links or start_time is not None:
            return self._sdk.start_span(
                name, context, kind, attributes, links, start_time,
                record_exception, set_status_on_exception,
            )  # fmt: skip
        return self._child(name, kind, trace.get_current_span(context), attributes, sink)

    def start_child(
        self, name: str, kind: SpanKind, parent: trace.Span, attributes: Mapping[str, Any]
    ) -> trace.Span:
        """A child of `parent`, without a Context to hold it."""
        sink = self._current_sink()
        if sink is None:
            return self._fallback.start_child(name, kind, parent, attributes)
        return self._child(name, kind, parent, attributes, sink)

    def _child(
        self,
        name: str,
        kind: SpanKind,
        parent: trace.Span,
        attributes: types.Attributes,
        sink: Sink,
    ) -> trace.Span:
        if type(parent) is LightSpan:
            trace_id = parent.trace_id
            parent_id: int | None = parent.span_id
            flags = parent.flags
            state = parent.trace_state
        else:
            sc = parent.get_span_context()
            if sc.is_valid:
                trace_id, parent_id, flags, state = (
                    sc.trace_id,
                    sc.span_id,
                    sc.trace_flags,
                    sc.trace_state,
                )
            else:
                trace_id = _getrandbits(128) or 1
                parent_id, flags, state = None, _SAMPLED | _RANDOM, None
        span_id = _getrandbits(64) or 1
        if not flags & _SAMPLED:
            return trace.NonRecordingSpan(
                SpanContext(trace_id, span_id, False, TraceFlags(flags & _RANDOM), state)
            )
        flags = _SAMPLED | (flags & _RANDOM)
        return LightSpan(
            name, kind, trace_id, span_id, parent_id, flags, state,
            dict(attributes) if attributes else {}, sink,
        )  # fmt: skip

    def start(self, name: str, kind: SpanKind, attributes: Mapping[str, Any]) -> trace.Span:
        sink = self._current_sink()
        if sink is None:
            return self._fallback.start(name, kind, attributes)
        return self._child(name, kind, trace.get_current_span(), attributes, sink)

    def start_server(
        self, name: str, carrier: Mapping[str, str], attributes: Mapping[str, Any]
    ) -> tuple[trace.Span, Context]:
        """A canonical `traceparent` (or none: a root) is continued without building the
        parent's SpanContext and Context; anything else goes through the SDK's propagators."""
        sink = self._current_sink()
        header = simple_traceparent(carrier) if carrier else None
        if sink is None or not self._w3c_only or (carrier and header is None):
            return self._fallback.start_server(name, carrier, attributes)
        span = self._remote_child(name, header, attributes, sink)
        return span, trace.set_span_in_context(span, _EMPTY)

    def wire_ids(self, span: trace.Span) -> WireIds:
        if type(span) is LightSpan:  # its ids as they are: no SpanContext to build
            return span.trace_id, span.span_id, span.flags, span.trace_state
        return self._fallback.wire_ids(span)

    def _current_sink(self) -> Sink | None:
        processors = self._active._span_processors
        if processors is not self._seen:
            self._refresh(processors)
        return self._sink

    def _remote_child(
        self, name: str, traceparent: str | None, attributes: Mapping[str, Any], sink: Sink
    ) -> trace.Span:
        ids = None if traceparent is None else parse_ids(traceparent)
        if ids is None:  # no header, or one to ignore: a new trace, as extract_parent gives
            trace_id, parent_id, flags = _getrandbits(128) or 1, None, _SAMPLED | _RANDOM
        else:
            trace_id, parent_id, flags = ids
        span_id = _getrandbits(64) or 1
        if not flags & _SAMPLED:
            return trace.NonRecordingSpan(
                SpanContext(trace_id, span_id, False, TraceFlags(flags & _RANDOM))
            )
        return LightSpan(
            name, SpanKind.SERVER, trace_id, span_id, parent_id, _SAMPLED | (flags & _RANDOM),
            None, dict(attributes), sink,
        )  # fmt: skip

    def _writers_sink(self, writers: tuple[JsonLinesSpanProcessor, ...]) -> Sink:
        if not writers:
            return _discard
        service = self._service
        if len(writers) == 1:
            queue = writers[0].queue_span
            return lambda span: queue(span, service)

        def to_all(span: LightSpan) -> None:
            for writer in writers:
                writer.queue_span(span, service)

        return to_all

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._sdk.start_as_current_span(*args, **kwargs)


def _discard(span: LightSpan) -> None:
    return None


_EMPTY = Context()
"""A server span's context holds only the span: a bare traceparent brings nothing else."""
