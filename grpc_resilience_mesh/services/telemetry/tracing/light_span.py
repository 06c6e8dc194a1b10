"""A light span: one of our spans held as plain slots and a dict (light.py's LightTracer records
them; span_json.light_span_line encodes one as the SDK span's line). Apart from the tracer so that
what encodes and queues ended spans (span_json, jsonl_exporter) can name it without importing the
tracer that imports them."""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util import types

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
