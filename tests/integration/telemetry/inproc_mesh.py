"""Gateway, recommendation and profile assembled in this process with serve(), each edge
through the embedded Toxiproxy, exporting spans over OTLP to the given endpoint."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from embedded_toxiproxy.server import ToxiproxyServer
from mesh.gateway import servicer as gateway
from mesh.profile import servicer as profile
from mesh.recommendation.servicer import RecommendationServicer
from mesh.runtime.server import Runtime, Service, serve
from mesh.topology import EDGES
from mesh.v1 import recommendation_pb2, recommendation_pb2_grpc
from meshctl.launch.ports import free_port
from tests.support.polling import await_until

log = logging.getLogger("tests.flaky_recommendation")


class FlakyRecommendations(RecommendationServicer):
    """The real servicer, but Recommend fails with UNAVAILABLE `fail_first` times first."""

    def __init__(self, runtime: Runtime, fail_first: int) -> None:
        from mesh.v1 import profile_pb2_grpc

        super().__init__(
            profile_pb2_grpc.ProfileServiceStub(runtime.channel_to("profile")),
            retried=runtime.retries_on("profile"),
        )
        self.fail_first = fail_first
        self.calls = 0

    async def Recommend(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.calls += 1
        log.info("recommend received", extra={"call": self.calls})
        if self.calls <= self.fail_first:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "flaky on purpose")
        return await super().Recommend(request, context)


@dataclass
class InProcessMesh:
    gateway: str
    recommendations: FlakyRecommendations | None = None
    stops: list[asyncio.Event] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def stop(self) -> None:
        """Gateway first; every serve() flushes its spans before it returns."""
        for stop in self.stops:
            stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks), timeout=20)


async def _wait_serving(addr: str, task: asyncio.Task[None]) -> None:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = health_pb2_grpc.HealthStub(channel)

        async def serving() -> bool:
            if task.done():
                task.result()  # serve() failed: its error, not a timeout
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=0.5)
            except grpc.aio.AioRpcError:
                return False
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

        await await_until(serving, timeout_s=10.0, what=f"{addr} serving", interval_s=0.02)


@asynccontextmanager
async def in_process_mesh(
    otlp_endpoint: str, fail_first: int, extra_env: dict[str, str] | None = None
) -> AsyncIterator[InProcessMesh]:
    listen = {name: free_port() for name in ("gateway", "recommendation", "profile", "payment")}
    # Only the gRPC edges among these services (the receipt queue's edges are not needed here).
    edges = [e for e in EDGES if e.caller in listen and e.dependency in listen]
    proxies = {e.name: free_port() for e in edges}
    toxiproxy = ToxiproxyServer(port=0)
    await toxiproxy.start()
    await toxiproxy.populate(
        [
            {
                "name": e.name,
                "listen": f"127.0.0.1:{proxies[e.name]}",
                "upstream": f"127.0.0.1:{listen[e.dependency]}",
                "enabled": True,
            }
            for e in edges
        ]
    )
    mesh = InProcessMesh(gateway=f"127.0.0.1:{listen['gateway']}")

    async def build_recommendation(runtime: Runtime) -> Service:
        mesh.recommendations = FlakyRecommendations(runtime, fail_first)
        servicer = mesh.recommendations
        return Service(
            names=[
                recommendation_pb2.DESCRIPTOR.services_by_name["RecommendationService"].full_name
            ],
            register=lambda s: recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(
                servicer, s
            ),
        )

    builds = {
        "profile": profile.build,
        "recommendation": build_recommendation,
        "gateway": gateway.build,
    }
    try:
        for name in ("profile", "recommendation", "gateway"):
            env = {
                "LISTEN_ADDR": f"127.0.0.1:{listen[name]}",
                "ADMIN_ADDR": "127.0.0.1:0",
                "METRICS_ADDR": "127.0.0.1:0",
                "MESH_POLICY": "full",
                "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_endpoint,
                "OTEL_BSP_SCHEDULE_DELAY": "50",
                "SHUTDOWN_GRACE_S": "0.5",
                "MESH_AUTH": "off",  # the gateway's front door is tested elsewhere
                **(extra_env or {}),
            }
            for e in edges:
                if e.caller == name:
                    env[e.addr_env] = f"127.0.0.1:{proxies[e.name]}"
            stop = asyncio.Event()
            task = asyncio.create_task(serve(name, builds[name], env, stop_event=stop))
            mesh.stops.insert(0, stop)
            mesh.tasks.insert(0, task)
            await _wait_serving(env["LISTEN_ADDR"], task)
        yield mesh
    finally:
        await mesh.stop()
        await toxiproxy.stop()
