"""The hand-written span encoder writes exactly the line json.dumps(span_record(...)) wrote."""

from __future__ import annotations

import json
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode

from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import span_record
from grpc_resilience_mesh.services.telemetry.tracing.span_json import service_json, span_line


class _Keep(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _provider(service: str) -> tuple[TracerProvider, _Keep]:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    keep = _Keep()
    provider.add_span_processor(keep)
    return provider, keep


def _old_line(span: ReadableSpan) -> str:
    return json.dumps(span_record(span), separators=(",", ":"), default=str) + "\n"


def _assert_same(span: ReadableSpan) -> None:
    line = span_line(span, service_json(span))
    assert line == _old_line(span)
    assert json.loads(line) == span_record(span)


def test_spans_of_every_shape_encode_as_before() -> None:
    provider, keep = _provider('gate"way é')
    tracer = provider.get_tracer("t")
    root = tracer.start_span("Recv.mesh.v1.X/Get", kind=SpanKind.SERVER, attributes={"a": 1})
    root.end()
    child = tracer.start_span(
        "Attempt.mesh.v1.X/Get",
        trace.set_span_in_context(root),
        kind=SpanKind.CLIENT,
        attributes={
            "s": 'π "q" \\ \n\t\x00',
            "b": True,
            "f": 0.1,
            "big": 10**30,
            "inf": float("inf"),
            "ninf": float("-inf"),
            "nan": float("nan"),
            "ints": (1, 2, 3),
            "strs": ("x", "ü"),
            "flags": (True, False),
        },
    )
    child.add_event("mesh.retry.backoff", {"mesh.backoff_s": 0.25, "why": "UNAVAILABLE"})
    child.add_event("empty")
    child.set_status(Status(StatusCode.ERROR, "UNAVAILABLE: héllo"))
    child.end()
    bare = tracer.start_span("bare")
    bare.set_status(Status(StatusCode.OK))
    bare.end()
    assert len(keep.spans) == 3
    for span in keep.spans:
        line = span_line(span, service_json(span))
        assert line.endswith("\n") and line.count("\n") == 1
        assert line == _old_line(span)


_values = st.one_of(
    st.text(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=5), max_size=3).map(tuple),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(
    name=st.text(max_size=20),
    attributes=st.dictionaries(st.text(min_size=1, max_size=10), _values, max_size=6),
    description=st.one_of(st.none(), st.text(max_size=20)),
)
def test_any_attributes_round_trip(
    name: str, attributes: Mapping[str, object], description: str | None
) -> None:
    provider, keep = _provider("svc")
    span = provider.get_tracer("t").start_span(name, attributes=attributes)  # type: ignore[arg-type]
    span.add_event("ev", attributes)  # type: ignore[arg-type]
    if description is not None:
        span.set_status(Status(StatusCode.ERROR, description))
    span.end()
    _assert_same(keep.spans[0])
