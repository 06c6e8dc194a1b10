"""A dependency that comes back is reached within about a second, however long it was away.

gRPC's own reconnect backoff grows 1.6x per failed connect (1, 1.6, 2.6, 4.1 s ... with 20%
jitter): after a 6.5 s outage its next try falls 1-4 s after the dependency's return, and every
call until then fails fast with UNAVAILABLE, which a breaker's half-open probe counts as a failure.
resilient_channel caps that backoff so the breaker, not the channel, decides how long to wait.
"""

from __future__ import annotations

import asyncio
import time

import grpc
import grpc.aio

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import RECONNECT_BACKOFF_CAP_S, resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer

REQUEST = profile_pb2.GetProfileRequest(user_id="u1")
OUTAGE_S = 6.5


async def start(port: int) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    profile_servicer(ProfileFake())(server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, bound


async def ok(stub: profile_pb2_grpc.ProfileServiceStub) -> bool:
    try:
        await stub.GetProfile(REQUEST, timeout=0.5)
    except grpc.aio.AioRpcError:
        return False
    return True


async def test_first_success_after_the_return_comes_within_the_capped_backoff() -> None:
    # no retries and no breaker: each call is one attempt on the channel as it is
    edge = from_dict(EdgePolicy, {"retry": {"max_attempts": 1}, "breaker": {"enabled": False}})
    pipeline = build_pipeline(edge, dependency="profile", bus=EventBus(), clock=SystemClock())
    server, port = await start(0)
    channel = resilient_channel(
        f"127.0.0.1:{port}",
        ResilienceInterceptor(pipeline, dependency="profile", clock=SystemClock()),
    )
    stub = profile_pb2_grpc.ProfileServiceStub(channel)
    try:
        assert await ok(stub)
        await server.stop(None)
        down_until = time.monotonic() + OUTAGE_S
        while time.monotonic() < down_until:  # callers keep asking: the channel keeps failing
            assert not await ok(stub)
            await asyncio.sleep(0.1)
        server, _ = await start(port)
        back_s = time.monotonic()
        while not await ok(stub):
            assert time.monotonic() - back_s < 10, "never reconnected"
            await asyncio.sleep(0.02)
        recovered_s = time.monotonic() - back_s
        # the cap plus its 20% jitter, and the connect itself
        assert recovered_s < RECONNECT_BACKOFF_CAP_S * 1.2 + 0.3, recovered_s
    finally:
        await channel.close()
        await server.stop(None)
