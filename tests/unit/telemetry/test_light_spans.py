"""Light spans write the lines SDK spans would, and the SDK still makes spans where it must.

The same script of mesh spans (a server span continuing a remote parent, a call with a failed
and a successful attempt, decision events, a fallback marking the request degraded) runs once
through the SDK and once through the light recorder; the JSON lines must match except for the
ids and clock readings, which are compared by shape and order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from grpc_aio_resilience import events as ev
from grpc_aio_resilience.context import CallContext
from grpc_resilience_mesh.services.telemetry.tracing import spans as sp
from grpc_resilience_mesh.services.telemetry.tracing.choice import recorder_for
from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import (
    JsonLinesSpanExporter,
    JsonLinesSpanProcessor,
)
from grpc_resilience_mesh.services.telemetry.tracing.light import LightTracer
from grpc_resilience_mesh.services.telemetry.tracing.light_span import LightSpan
from grpc_resilience_mesh.services.telemetry.tracing.sdk import SdkRecorder
from grpc_resilience_mesh.services.telemetry.tracing.span_events import tracing_listener
from grpc_resilience_mesh.services.telemetry.tracing.span_json import (
    light_span_line,
    service_json,
    span_line,
)

METHOD = "/mesh.v1.RecommendationService/Recommend"
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _provider(processor: SpanProcessor) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "gateway"}))
    provider.add_span_processor(processor)
    return provider


def _light(provider: TracerProvider) -> LightTracer:
    tracer = recorder_for(provider.get_tracer("mesh"))
    assert isinstance(tracer, LightTracer)
    return tracer


def _attempt(factory: sp.SpanFactory, ctx: CallContext, error: BaseException | None) -> str:
    attempt = sp.AttemptSpan(factory, ctx)
    attempt.__enter__()
    ctx.sent += 1
    header = ctx.attempt_metadata.get("traceparent") if ctx.attempt_metadata else None
    attempt.__exit__(None if error is None else type(error), error, None)
    return str(header)


async def _never_sent(details: grpc.aio.ClientCallDetails, request: Any) -> Any:
    raise AssertionError("the spans are driven by hand: nothing goes on the wire")


def _one_request(factory: sp.SpanFactory) -> list[str]:
    """What the gateway's spans see for one degraded-then-answered call; the traceparents sent."""
    names = factory.names("/mesh.v1.Gateway/GetHome")
    span, token, server_token = sp.start_server_span(factory, names, {"traceparent": PARENT})
    details = grpc.aio.ClientCallDetails(METHOD, 1.0, None, None, None)
    ctx = CallContext(
        "recommendation", METHOD, None, details, _never_sent,
        deadline_s=time.monotonic() + 1, attempt_timeout_s=0.3,
    )  # fmt: skip
    call = sp.CallSpan(factory, ctx)
    call.__enter__()
    headers = []
    ctx.attempt_metadata = grpc.aio.Metadata()
    failed = grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "flaky"
    )
    headers.append(_attempt(factory, ctx, failed))
    tracing_listener(ev.RetryScheduled("recommendation", METHOD, 1, "UNAVAILABLE", 0.025, None))
    ctx.attempt, ctx.attempt_metadata = 2, grpc.aio.Metadata()
    headers.append(_attempt(factory, ctx, None))
    call.__exit__(None, None, None)
    tracing_listener(ev.FallbackServed("profile", "GetProfile", "popular", "UNAVAILABLE", "x"))
    sp.current_server_span.reset(server_token)
    otel_context.detach(token)
    sp.end_server_span(span, grpc.StatusCode.OK)
    return headers


def _normalised(path: Path) -> list[dict[str, Any]]:
    """The records with ids replaced by their order of appearance and times by their rank."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    ids: dict[str, int] = {}
    times = sorted(
        {r["start_ns"] for r in records}
        | {r["end_ns"] for r in records}
        | {e["time_ns"] for r in records for e in r["events"]}
    )
    for record in records:
        for key in ("trace_id", "span_id", "parent_span_id"):
            if record[key] is not None:
                record[key] = ids.setdefault(record[key], len(ids))
        for key in ("start_ns", "end_ns"):
            record[key] = times.index(record[key])
        for event in record["events"]:
            event["time_ns"] = times.index(event["time_ns"])
        budget = record["attributes"].get("mesh.call_budget_s")
        if budget is not None:  # a clock reading too: the time left at the first attempt
            record["attributes"]["mesh.call_budget_s"] = 0 < budget <= 1
    return records


def test_light_and_sdk_spans_write_the_same_lines(tmp_path: Path) -> None:
    runs = {}
    headers = {}
    for kind in ("sdk", "light"):
        path = tmp_path / f"{kind}.jsonl"
        exporter = JsonLinesSpanExporter(path)
        processor: SpanProcessor = (
            SimpleSpanProcessor(exporter) if kind == "sdk" else JsonLinesSpanProcessor(exporter)
        )
        provider = _provider(processor)
        factory = sp.SpanFactory(provider.get_tracer("mesh"))
        assert isinstance(factory.recorder, LightTracer)
        headers[kind] = _one_request(factory)
        provider.shutdown()
        runs[kind] = _normalised(path)
    assert runs["light"] == runs["sdk"]
    assert [r["name"] for r in runs["light"]] == [
        "Attempt.mesh.v1.RecommendationService.Recommend",
        "Attempt.mesh.v1.RecommendationService.Recommend",
        "Sent.mesh.v1.RecommendationService.Recommend",
        "Recv.mesh.v1.Gateway.GetHome",
    ]
    written = [json.loads(x) for x in (tmp_path / "light.jsonl").read_text().splitlines()]
    # Each attempt's traceparent names that attempt's own span: the next hop's parent.
    assert [h[36:52] for h in headers["light"]] == [r["span_id"] for r in written[:2]]
    server = written[-1]
    assert (server["trace_id"], server["parent_span_id"]) == (PARENT[3:35], PARENT[36:52])
    assert server["attributes"]["mesh.degraded_parts"] == ["profile"]
    # The wire sees the same traceparent shape: the caller's trace, the attempt's own span.
    for sent in (headers["sdk"], headers["light"]):
        assert [h[:36] for h in sent] == [PARENT[:36]] * 2
        assert [h[-3:] for h in sent] == ["-01"] * 2


def test_the_recorder_is_chosen_at_start_up_and_both_write_the_same_lines(
    tmp_path: Path,
) -> None:
    """Behind the seam, spans.py cannot tell the recorders apart: the SDK recorder (chosen for
    any tracer but the SDK's own) and the light one write the same lines for the same calls."""
    runs = {}
    for kind in ("sdk", "light"):
        path = tmp_path / f"{kind}.jsonl"
        exporter = JsonLinesSpanExporter(path)
        provider = _provider(
            SimpleSpanProcessor(exporter) if kind == "sdk" else JsonLinesSpanProcessor(exporter)
        )
        tracer = provider.get_tracer("mesh")
        factory = sp.SpanFactory(_Wrapped(tracer) if kind == "sdk" else tracer)
        expected = SdkRecorder if kind == "sdk" else LightTracer
        assert type(factory.recorder) is expected
        _one_request(factory)
        provider.shutdown()
        runs[kind] = _normalised(path)
    assert runs["light"] == runs["sdk"] and len(runs["sdk"]) == 4


class _Wrapped(trace.Tracer):
    """A tracer that is not the SDK's own (as a vendor's wrapper would be)."""

    def __init__(self, inner: trace.Tracer) -> None:
        self._inner = inner

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._inner.start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.start_as_current_span(*args, **kwargs)


def test_a_root_span_is_sampled_with_a_random_trace_id_as_the_sdks() -> None:
    provider = _provider(JsonLinesSpanProcessor(JsonLinesSpanExporter(Path("/nonexistent/x"))))
    light = _light(provider)
    sdk = TracerProvider().get_tracer("mesh")
    ours = light.start_span("root")
    theirs = sdk.start_span("root")
    assert isinstance(ours, LightSpan)
    assert ours.get_span_context().trace_flags == theirs.get_span_context().trace_flags
    assert ours.get_span_context().is_valid and ours.parent_id is None
    provider.shutdown()


def test_a_caller_that_did_not_sample_gets_no_recorded_span(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    processor = JsonLinesSpanProcessor(JsonLinesSpanExporter(path))
    provider = _provider(processor)
    factory = sp.SpanFactory(provider.get_tracer("mesh"))
    names = factory.names("/mesh.v1.Gateway/GetHome")
    unsampled = {"traceparent": PARENT[:-2] + "00"}
    span, token, server_token = sp.start_server_span(factory, names, unsampled)
    child = factory.recorder.start("child", SpanKind.INTERNAL, {})
    sp.current_server_span.reset(server_token)
    otel_context.detach(token)
    child.end()
    sp.end_server_span(span, grpc.StatusCode.OK)
    assert not span.is_recording() and not child.is_recording()
    assert span.get_span_context().trace_id == int(PARENT[3:35], 16)
    assert child.get_span_context().trace_id == int(PARENT[3:35], 16)
    assert processor.force_flush(5000)
    assert not path.exists() or path.read_text() == ""
    provider.shutdown()


def test_a_processor_added_later_gets_sdk_spans(tmp_path: Path) -> None:
    provider = _provider(JsonLinesSpanProcessor(JsonLinesSpanExporter(tmp_path / "x.jsonl")))
    tracer = _light(provider)
    assert isinstance(tracer.start_span("before"), LightSpan)

    seen: list[ReadableSpan] = []

    class _Keep(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            seen.append(span)

    provider.add_span_processor(_Keep())
    span = tracer.start_span("after", kind=SpanKind.CLIENT, attributes={"a": 1})
    assert not isinstance(span, LightSpan)
    span.end()
    assert [(s.name, dict(s.attributes or {})) for s in seen] == [("after", {"a": 1})]
    provider.shutdown()


def test_the_otlp_or_any_other_sampler_keeps_the_sdk(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    provider = TracerProvider(sampler=ALWAYS_ON)
    provider.add_span_processor(JsonLinesSpanProcessor(JsonLinesSpanExporter(tmp_path / "x")))
    assert not isinstance(_light(provider).start_span("s"), LightSpan)
    provider.shutdown()


_values = st.one_of(
    st.text(max_size=8),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.lists(st.text(max_size=5), max_size=3),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3).map(tuple),
    st.none(),
)
_attributes = st.dictionaries(st.text(min_size=1, max_size=10), _values, max_size=5)


@settings(max_examples=150, deadline=None)
@given(
    name=st.text(max_size=20),
    start=_attributes,
    late=_attributes,
    event=st.one_of(st.none(), _attributes),
    status=st.sampled_from([None, StatusCode.OK, StatusCode.ERROR, StatusCode.UNSET]),
    description=st.one_of(st.none(), st.text(max_size=20)),
)
def test_any_span_encodes_as_the_sdk_span_with_the_same_calls(
    name: str,
    start: Mapping[str, Any],
    late: Mapping[str, Any],
    event: Mapping[str, Any] | None,
    status: StatusCode | None,
    description: str | None,
) -> None:
    kept: list[ReadableSpan] = []

    class _Keep(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            kept.append(span)

    provider = _provider(_Keep())
    theirs = provider.get_tracer("t").start_span(name, kind=SpanKind.SERVER, attributes=start)
    sc = theirs.get_span_context()
    lines: list[str] = []
    ours = LightSpan(
        name, SpanKind.SERVER, sc.trace_id, sc.span_id, None, int(sc.trace_flags), None,
        dict(start), lambda span: lines.append(light_span_line(span, '"gateway"')),
    )  # fmt: skip
    ours.start_ns = theirs.start_time or 0  # type: ignore[attr-defined]
    for span in (theirs, ours):
        span.set_attributes(late)
        if event is not None:
            span.add_event("ev", event, timestamp=5)
        if status is not None:
            span.set_status(Status(status, description if status is StatusCode.ERROR else None))
        span.end(end_time=9)
    assert lines == [span_line(kept[0], service_json(kept[0]))]


@pytest.mark.parametrize(
    "header",
    [
        PARENT,  # sampled: continued
        PARENT[:-2] + "00",  # not sampled: no span recorded, the trace id kept
        PARENT[:-2] + "03",  # sampled, random trace id flag
        "00-" + "0" * 32 + PARENT[35:],  # all-zero trace id: ignored, a new trace
        PARENT.upper(),  # not canonical: ignored
        "01" + PARENT[2:],  # another version: the SDK propagator decides
        None,  # no header: a new trace
    ],
)
def test_a_server_span_continues_a_header_as_the_sdk_path_does(
    tmp_path: Path, header: str | None
) -> None:
    carrier = {} if header is None else {"traceparent": header}
    made = {}
    for kind in ("sdk", "light"):
        exporter = JsonLinesSpanExporter(tmp_path / f"{kind}.jsonl")
        processor: SpanProcessor = (
            SimpleSpanProcessor(exporter) if kind == "sdk" else JsonLinesSpanProcessor(exporter)
        )
        provider = _provider(processor)
        factory = sp.SpanFactory(provider.get_tracer("mesh"))
        span, token, server_token = sp.start_server_span(
            factory, factory.names("/mesh.v1.Gateway/GetHome"), carrier
        )
        sp.current_server_span.reset(server_token)
        otel_context.detach(token)
        sc = span.get_span_context()
        parent = getattr(span, "parent", None) or getattr(span, "parent_id", None)
        parent_id = parent if parent is None or isinstance(parent, int) else parent.span_id
        made[kind] = (
            span.is_recording(),
            sc.trace_id == int(PARENT[3:35], 16),
            parent_id == int(PARENT[36:52], 16),
            int(sc.trace_flags),
        )
        span.end()
        provider.shutdown()
    assert made["light"] == made["sdk"]
