"""Gateway, recommendation and profile assembled in this process with serve(), each edge
through the embedded Toxiproxy, exporting spans over OTLP to the given endpoint."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.embedded_toxiproxy.server import ToxiproxyServer
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.services.gateway import servicer as gateway
from grpc_resilience_mesh.services.profile import servicer as profile
from grpc_resilience_mesh.services.recommendation.servicer import RecommendationServicer
from grpc_resilience_mesh.services.runtime.server import Runtime, Service, serve
from grpc_resilience_mesh.services.topology import EDGES, Edge
from grpc_resilience_mesh.services.v1 import recommendation_pb2, recommendation_pb2_grpc
from tests.support.polling import await_until

log = logging.getLogger("tests.flaky_recommendation")

Build = Callable[[Runtime], Awaitable[Service]]
SERVICES = ("profile", "recommendation", "gateway")
"""Started in this order, each after its dependencies; stopped in the reverse."""


class FlakyRecommendations(RecommendationServicer):
    """The real servicer, but Recommend fails with UNAVAILABLE `fail_first` times first."""

    def __init__(self, runtime: Runtime, fail_first: int) -> None:
        from grpc_resilience_mesh.services.v1 import profile_pb2_grpc

        super().__init__(
            runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub),
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

    async def start(self, name: str, build: Build, env: dict[str, str]) -> None:
        """serve() `name` in this process; returns once it answers health checks (stopped
        before the services started earlier)."""
        stop = asyncio.Event()
        task = asyncio.create_task(serve(name, build, env, stop_event=stop))
        self.stops.insert(0, stop)
        self.tasks.insert(0, task)
        await _wait_serving(env["LISTEN_ADDR"], task)


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


async def _proxy_every_edge(
    edges: list[Edge], listen: dict[str, int], proxies: dict[str, int]
) -> ToxiproxyServer:
    """The embedded Toxiproxy, started, with a proxy per edge to its dependency."""
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
    return toxiproxy


def _flaky_recommendation(mesh: InProcessMesh, fail_first: int) -> Build:
    """Recommendation's build, with FlakyRecommendations as its servicer (kept on `mesh`)."""

    async def build(runtime: Runtime) -> Service:
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

    return build


def _service_env(port: int, otlp_endpoint: str, extra_env: dict[str, str] | None) -> dict[str, str]:
    """A service's environment on `port`, exporting spans to `otlp_endpoint` quickly."""
    return {
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        "ADMIN_ADDR": "127.0.0.1:0",
        "METRICS_ADDR": "127.0.0.1:0",
        "MESH_POLICY": "full",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "SHUTDOWN_GRACE_S": "0.5",
        "MESH_AUTH": "off",  # the gateway's front door is tested elsewhere
        **(extra_env or {}),
    }


@asynccontextmanager
async def in_process_mesh(
    otlp_endpoint: str, fail_first: int, extra_env: dict[str, str] | None = None
) -> AsyncIterator[InProcessMesh]:
    listen = {name: free_port() for name in ("gateway", "recommendation", "profile", "payment")}
    # Only the gRPC edges among these services (the receipt queue's edges are not needed here).
    edges = [e for e in EDGES if e.caller in listen and e.dependency in listen]
    proxies = {e.name: free_port() for e in edges}
    toxiproxy = await _proxy_every_edge(edges, listen, proxies)
    mesh = InProcessMesh(gateway=f"127.0.0.1:{listen['gateway']}")
    builds: dict[str, Build] = {
        "profile": profile.build,
        "recommendation": _flaky_recommendation(mesh, fail_first),
        "gateway": gateway.build,
    }
    try:
        for name in SERVICES:
            env = _service_env(listen[name], otlp_endpoint, extra_env)
            env |= {e.addr_env: f"127.0.0.1:{proxies[e.name]}" for e in edges if e.caller == name}
            await mesh.start(name, builds[name], env)
        yield mesh
    finally:
        await mesh.stop()
        await toxiproxy.stop()
