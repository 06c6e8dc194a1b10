"""gRPC through the proxy: toxics change a live HTTP/2 channel, disable makes it UNAVAILABLE."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import BOTH_SERVERS, ApiServer

pytestmark = [pytest.mark.timeout(30), BOTH_SERVERS]


@pytest.fixture
async def health_port() -> AsyncIterator[int]:
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield port
    await server.stop(None)


async def call_ms(stub: health_pb2_grpc.HealthStub, calls: int = 5) -> list[float]:
    """Durations of a few calls. Noise only adds delay: bound every sample from below and the
    fastest one from above."""
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def test_grpc_channel_follows_toxics_and_proxy_state(
    toxiproxy: ApiServer, client: ToxiproxyClient, health_port: int
) -> None:
    call = asyncio.to_thread
    proxy = await call(client.create_proxy, "grpc", "127.0.0.1:0", f"127.0.0.1:{health_port}")
    async with grpc.aio.insecure_channel(proxy["listen"]) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        base_ms = min(await call_ms(stub))
        await call(client.add_toxic, "grpc", "latency", attributes={"latency": 50})
        # Same channel, same TCP connection: the toxic applies to it.
        with_toxic = await call_ms(stub)
        assert min(with_toxic) >= 50 - 5, with_toxic
        assert min(with_toxic) - base_ms <= 50 + 40, with_toxic
        await call(client.reset)
        assert min(await call_ms(stub)) - base_ms <= 40
        await call(client.disable, "grpc")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        await call(client.enable, "grpc")
        response = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5, wait_for_ready=True)
        assert response.status == health_pb2.HealthCheckResponse.SERVING
