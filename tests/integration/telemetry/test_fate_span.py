"""The root span of a call (its Recv span, name unchanged) carries the call's fate as
`mesh.fate`, the same fate its caller reads in the `resilience-fate` trailer."""

from __future__ import annotations

from functools import partial

import grpc
import grpc.aio
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from grpc_aio_resilience import fates
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.events import EventBus, FallbackServed
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.runtime.refusal import abort
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing, server_tracing
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.resilience.servers import serving


class Home(gateway_pb2_grpc.GatewayServicer):
    """user "" is refused; "degraded" is answered from a fallback (as the gateway reports one)."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus

    async def GetHome(
        self, request: gateway_pb2.GetHomeRequest, context: grpc.aio.ServicerContext
    ) -> gateway_pb2.GetHomeResponse:
        if not request.user_id:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "user_id: required")
        if request.user_id == "degraded":
            self.bus.emit(FallbackServed("recommendation", "/x/Recommend", "popular", "X", "r"))
        return gateway_pb2.GetHomeResponse()


async def test_the_recv_span_carries_the_fate_its_caller_reads() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "gateway"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = MeshTracing(provider)
    bus = EventBus()
    interceptors = server_layers(
        "gateway", ServerPolicy(), bus, FaultTable(), tracing=server_tracing(tracing)
    )
    register = partial(gateway_pb2_grpc.add_GatewayServicer_to_server, Home(bus))
    read: list[str] = []
    async with serving(register, interceptors) as target:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            for user in ("u-0001", "degraded", ""):
                call = stub.GetHome(gateway_pb2.GetHomeRequest(user_id=user), timeout=5)
                try:
                    await call
                except grpc.aio.AioRpcError as err:
                    read.append(fates.fate_in(err.trailing_metadata()))
                else:  # a plain `ok` is sent as no fate at all
                    read.append(fates.seen_by_caller("OK", await call.trailing_metadata(), ""))
    provider.shutdown()
    spans = [s for s in exporter.get_finished_spans() if s.name == "Recv.mesh.v1.Gateway.GetHome"]
    on_spans = [dict(s.attributes or {}).get("mesh.fate") for s in spans]
    assert read == [
        "ok",
        "ok-degraded(recommendation:popular)",
        "failed-not-retryable(INVALID_ARGUMENT)",
    ]
    assert on_spans == read
