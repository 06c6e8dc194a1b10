"""An in-process OTLP/gRPC trace receiver that keeps every span it is sent, flattened."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc.aio
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


def _value(v: common_pb2.AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


@dataclass
class ReceivedSpan:
    service: str
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status: str
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)

    def event_names(self) -> list[str]:
        return [name for name, _, _ in self.events]


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []

    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        for rs in request.resource_spans:
            service = str(_attrs(rs.resource.attributes).get("service.name", ""))
            for ss in rs.scope_spans:
                for s in ss.spans:
                    self.spans.append(
                        ReceivedSpan(
                            service=service,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            name=s.name,
                            kind=trace_pb2.Span.SpanKind.Name(s.kind).removeprefix("SPAN_KIND_"),
                            start_ns=s.start_time_unix_nano,
                            end_ns=s.end_time_unix_nano,
                            status=trace_pb2.Status.StatusCode.Name(s.status.code),
                            attributes=_attrs(s.attributes),
                            events=[
                                (e.name, e.time_unix_nano, _attrs(e.attributes)) for e in s.events
                            ],
                        )
                    )
        return trace_service_pb2.ExportTraceServiceResponse()

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.trace_id == trace_id]

    def children(self, parent: ReceivedSpan) -> list[ReceivedSpan]:
        found = [s for s in self.spans if s.parent_span_id == parent.span_id]
        return sorted(found, key=lambda s: s.start_ns)


async def start_receiver() -> tuple[grpc.aio.Server, Receiver, str]:
    server = grpc.aio.server()
    receiver = Receiver()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, receiver, f"http://127.0.0.1:{port}"
