"""Spans recorded without the SDK's machinery, for the default JSON-lines export.

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
tracer, so an OTLP export or an InMemorySpanExporter sees SDK spans as before. The choice is
re-made whenever the provider's processors change, so a processor added later is honoured.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import SpanProcessor, Tracer
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util import types

from mesh.telemetry.jsonl_exporter import JsonLinesSpanProcessor
from mesh.telemetry.span_json import service_name_json
from mesh.telemetry.traceparent import parse_ids

DEFAULT_SAMPLER = (
    "ParentBased{root:AlwaysOnSampler,remoteParentSampled:AlwaysOnSampler,"
    "remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,"
    "localParentNotSampled:AlwaysOffSampler}"
)
MAX_EVENTS = 128
"""The SDK's default event limit: a span keeps its first 128 events."""

_UNSET = Status(StatusCode.UNSET)
_SAMPLED = TraceFlags.SAMPLED
_RANDOM = TraceFlags.RANDOM_TRACE_ID
_getrandbits = random.getrandbits
_time_ns = time.time_ns

Sink = Callable[["LightSpan"], None]


_PLAIN = (str, bool, int, float, bytes, type(None))


def _clean(value: Any) -> Any:
    """An attribute value as the SDK keeps it: primitives and None as they are, sequences as
    tuples, mappings as dicts (recursively), anything else as its str()."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, Sequence):
        return tuple([_clean(v) for v in value])
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items() if k}
    return str(value)


def clean_attributes(attributes: types.Attributes) -> dict[str, Any]:
    if not attributes:
        return {}
    return {key: _clean(value) for key, value in attributes.items() if key and type(key) is str}


class LightSpan(trace.Span):
    """A recording span held as plain fields; its line is queued when it ends."""

    __slots__ = (
        "_context",
        "_sink",
        "attributes",
        "end_ns",
        "events",
        "flags",
        "kind",
        "name",
        "parent_id",
        "span_id",
        "start_ns",
        "status",
        "trace_id",
        "trace_state",
    )

    def __init__(
        self,
        name: str,
        kind: SpanKind,
        trace_id: int,
        span_id: int,
        parent_id: int | None,
        flags: int,
        trace_state: trace.TraceState | None,
        attributes: dict[str, Any],
        sink: Sink,
    ) -> None:
        self.name = name
        self.kind = kind
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_id = parent_id
        self.flags = flags
        self.trace_state = trace_state
        self.attributes = attributes
        self.events: list[tuple[str, int, dict[str, Any]]] | None = None
        self.status = _UNSET
        self.end_ns: int | None = None
        self._sink: Sink | None = sink
        self._context: SpanContext | None = None
        self.start_ns = _time_ns()

    def get_span_context(self) -> SpanContext:
        found = self._context
        if found is None:
            found = self._context = SpanContext(
                self.trace_id,
                self.span_id,
                is_remote=False,
                trace_flags=TraceFlags(self.flags),
                trace_state=self.trace_state,
            )
        return found

    def is_recording(self) -> bool:
        return self.end_ns is None

    def set_attribute(self, key: str, value: types.AnyValue) -> None:
        if self.end_ns is None and key and type(key) is str:
            attributes = self.attributes
            attributes.pop(key, None)  # as the SDK's: a key set again moves to the end
            attributes[key] = _clean(value)

    def set_attributes(self, attributes: Mapping[str, types.AnyValue]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)

    def add_event(
        self, name: str, attributes: types.Attributes = None, timestamp: int | None = None
    ) -> None:
        if self.end_ns is not None:
            return
        events = self.events
        if events is None:
            events = self.events = []
        elif len(events) >= MAX_EVENTS:
            return
        events.append(
            (name, _time_ns() if timestamp is None else timestamp, clean_attributes(attributes))
        )

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        """Links are not part of the JSON line; the mesh's spans make none."""

    def update_name(self, name: str) -> None:
        if self.end_ns is None:
            self.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if self.end_ns is not None or self.status.status_code is StatusCode.OK:
            return
        if isinstance(status, StatusCode):
            status = Status(status, description)
        if status.status_code is not StatusCode.UNSET:
            self.status = status

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        module = type(exception).__module__
        qualname = type(exception).__qualname__
        attrs: dict[str, Any] = {
            "exception.type": qualname if module in ("", "builtins") else f"{module}.{qualname}",
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped),
        }
        attrs.update(attributes or {})
        self.add_event("exception", attrs, timestamp)

    def end(self, end_time: int | None = None) -> None:
        if self.end_ns is not None:
            return
        self.end_ns = _time_ns() if end_time is None else end_time
        sink = self._sink
        self._sink = None
        if sink is not None:
            sink(self)


class LightTracer(trace.Tracer):
    """`start_span` as the SDK tracer does it, for the mesh's own spans; the other Tracer
    methods (and every span when the provider is not one it can stand in for) go to the SDK."""

    def __init__(self, sdk: Tracer) -> None:
        self._sdk = sdk
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
        processors = self._active._span_processors
        if processors is not self._seen:
            self._refresh(processors)
        sink = self._sink
        if sink is None or links or start_time is not None:
            return self._sdk.start_span(
                name, context, kind, attributes, links, start_time,
                record_exception, set_status_on_exception,
            )  # fmt: skip
        return self._child(name, kind, trace.get_current_span(context), attributes, sink)

    def start_child(
        self, name: str, kind: SpanKind, parent: trace.Span, attributes: Mapping[str, Any]
    ) -> trace.Span:
        """`start_span` with `parent` as the parent span, without a Context to hold it."""
        processors = self._active._span_processors
        if processors is not self._seen:
            self._refresh(processors)
        sink = self._sink
        if sink is None:
            return self._sdk.start_span(
                name, trace.set_span_in_context(parent), kind, attributes
            )  # fmt: skip
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

    def start_remote_child(
        self, name: str, kind: SpanKind, traceparent: str | None, attributes: Mapping[str, Any]
    ) -> trace.Span | None:
        """A span continuing a canonical `traceparent` (a root without one), without building
        the parent's SpanContext and Context; None when the SDK must make the span."""
        processors = self._active._span_processors
        if processors is not self._seen:
            self._refresh(processors)
        sink = self._sink
        if sink is None:
            return None
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
            name, kind, trace_id, span_id, parent_id, _SAMPLED | (flags & _RANDOM), None,
            dict(attributes), sink,
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


def light_tracer(tracer: trace.Tracer) -> trace.Tracer:
    """A LightTracer standing in for an SDK tracer whose spans all go through its provider's
    processors (SynchronousMultiSpanProcessor, the default); any other tracer as it is."""
    active = getattr(tracer, "span_processor", None)
    if type(tracer) is Tracer and isinstance(getattr(active, "_span_processors", None), tuple):
        return LightTracer(tracer)
    return tracer
