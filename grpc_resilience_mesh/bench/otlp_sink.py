"""An OTLP/gRPC trace receiver that accepts every export and discards it: the far end of `mesh bench
mesh`'s OTLP variant, so the services pay for encoding and sending spans and the receiver costs as
little as it can. `python -m grpc_resilience_mesh.bench.otlp_sink --listen ADDR`."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from grpc_resilience_mesh.bench.serving import serve_until_terminated


class DiscardingReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        return trace_service_pb2.ExportTraceServiceResponse()


async def serve(listen: str) -> None:
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
    add = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
    add(DiscardingReceiver(), server)  # type: ignore[no-untyped-call]
    await serve_until_terminated(server, listen, "otlp sink")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", required=True)
    asyncio.run(serve(parser.parse_args(argv).listen))


if __name__ == "__main__":
    main()
