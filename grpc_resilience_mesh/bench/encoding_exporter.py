"""The overhead bench's span export for its tracing variants: each batch OTLP-encoded as the OTLP
exporter would, then dropped (the export's CPU is real, the network is not)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class EncodingExporter(SpanExporter):
    """Encodes each batch to OTLP protobuf bytes as the OTLP exporter would, then drops it:
    the export cost is real, the network is not."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializeToString()
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def encoding_provider(service: str) -> tuple[TracerProvider, EncodingExporter]:
    exporter = EncodingExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, exporter
