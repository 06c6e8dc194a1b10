"""Light spans are encoded in batches, and none is lost or written twice on the way.

The loop's thread encodes every ENCODE_BATCH ended spans together; whatever is left of a batch
the writer thread encodes when it wakes, so a quiet service's spans still reach the file within
the writer's delay, without a flush.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind

from grpc_resilience_mesh.services.telemetry.tracing import jsonl_exporter
from grpc_resilience_mesh.services.telemetry.tracing.choice import recorder_for
from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import (
    JsonLinesSpanExporter,
    JsonLinesSpanProcessor,
)
from grpc_resilience_mesh.services.telemetry.tracing.light import LightTracer


def _tracer(processor: JsonLinesSpanProcessor) -> tuple[TracerProvider, LightTracer]:
    provider = TracerProvider(resource=Resource.create({"service.name": "profile"}))
    provider.add_span_processor(processor)
    tracer = recorder_for(provider.get_tracer("mesh"))
    assert isinstance(tracer, LightTracer)
    return provider, tracer


def _names(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["name"] for line in path.read_text().splitlines()]


def test_fewer_spans_than_a_batch_are_written_by_the_writer_within_its_delay(
    tmp_path: Path,
) -> None:
    path = tmp_path / "profile.jsonl"
    processor = JsonLinesSpanProcessor(JsonLinesSpanExporter(path), delay_s=0.05)
    provider, tracer = _tracer(processor)
    try:
        for i in range(3):
            tracer.start_span(f"Recv.x.{i}", kind=SpanKind.SERVER).end()
        assert len(processor._spans) == 3  # not encoded on the ending thread
        deadline = time.monotonic() + 10.0
        while len(_names(path)) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _names(path) == ["Recv.x.0", "Recv.x.1", "Recv.x.2"]
    finally:
        provider.shutdown()


def test_full_batches_and_a_rest_are_each_written_once(tmp_path: Path) -> None:
    path = tmp_path / "profile.jsonl"
    # A writer that never wakes on its own: every line is encoded by the batches or the flush.
    processor = JsonLinesSpanProcessor(JsonLinesSpanExporter(path), delay_s=3600.0)
    provider, tracer = _tracer(processor)
    count = 2 * jsonl_exporter.ENCODE_BATCH + 5
    try:
        for i in range(count):
            tracer.start_span(f"s{i}").end()
            if i == jsonl_exporter.ENCODE_BATCH - 1:  # the batch was encoded as it filled
                assert not processor._spans
                assert len(processor._lines) == jsonl_exporter.ENCODE_BATCH
        assert len(processor._spans) == 5
        assert processor.force_flush(10_000)
        assert sorted(_names(path)) == sorted(f"s{i}" for i in range(count))
    finally:
        provider.shutdown()
    assert processor.dropped == processor.unencodable == 0


def test_a_span_that_cannot_be_encoded_is_counted_and_loses_no_other(tmp_path: Path) -> None:
    path = tmp_path / "profile.jsonl"
    processor = JsonLinesSpanProcessor(JsonLinesSpanExporter(path), delay_s=3600.0)
    provider, tracer = _tracer(processor)
    try:
        tracer.start_span("before").end()
        bad = tracer.start_span("bad")
        bad.update_name(42)  # type: ignore[arg-type]  # not a str: its line cannot be written
        bad.end()
        tracer.start_span("after").end()
        assert processor.force_flush(10_000)
        assert _names(path) == ["before", "after"]
        assert processor.unencodable == 1
    finally:
        provider.shutdown()


def test_spans_waiting_for_their_batch_count_toward_the_queue_bound(tmp_path: Path) -> None:
    path = tmp_path / "profile.jsonl"
    processor = JsonLinesSpanProcessor(JsonLinesSpanExporter(path), delay_s=3600.0, max_queue=10)
    provider, tracer = _tracer(processor)
    try:
        for i in range(25):
            tracer.start_span(f"s{i}").end()
        assert processor.dropped == 15
        assert processor.force_flush(10_000)
        assert _names(path) == [f"s{i}" for i in range(10)]
    finally:
        provider.shutdown()
