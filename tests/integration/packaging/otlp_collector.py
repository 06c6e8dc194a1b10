"""A stand-in OTLP/gRPC collector on loopback: opentelemetry-proto's TraceService, recording the
resource `service.name` of every span it is sent, so a test can wait for the hops it expects."""

from __future__ import annotations

import threading
from concurrent import futures
from types import TracebackType
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, collector: OtlpCollector) -> None:
        self.collector = collector

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        for resource_spans in request.resource_spans:
            names = [
                a.value.string_value
                for a in resource_spans.resource.attributes
                if a.key == "service.name"
            ]
            count = sum(len(scope.spans) for scope in resource_spans.scope_spans)
            self.collector.record(names[0] if names else "", count)
        return trace_service_pb2.ExportTraceServiceResponse()


class OtlpCollector:
    """Spans received per service name; `endpoint` is what OTEL_EXPORTER_OTLP_ENDPOINT takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: dict[str, int] = {}
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        add = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
        add(_TraceService(self), self._server)  # type: ignore[no-untyped-call]
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, service: str, count: int) -> None:
        with self._lock:
            self._spans[service] = self._spans.get(service, 0) + count

    def spans(self) -> dict[str, int]:
        with self._lock:
            return dict(self._spans)

    def __enter__(self) -> OtlpCollector:
        self._server.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.stop(0).wait()
