"""Real grpc.aio servers on 127.0.0.1:0 with scriptable fake servicers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import grpc
import grpc.aio

from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc

Handler = Callable[[profile_pb2.GetProfileRequest, grpc.aio.ServicerContext], Awaitable[Any]]


class ProfileFake(profile_pb2_grpc.ProfileServiceServicer):
    """GetProfile runs `handler`; every received attempt's arrival time is recorded."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler = handler
        self.arrivals_s: list[float] = []

    async def GetProfile(
        self, request: profile_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> profile_pb2.GetProfileResponse:
        self.arrivals_s.append(time.monotonic())
        if self.handler is not None:
            result = await self.handler(request, context)
            if result is not None:
                return result  # type: ignore[no-any-return]
        return profile_pb2.GetProfileResponse(profile=profile_pb2.Profile(user_id=request.user_id))


@asynccontextmanager
async def serving(
    register: Callable[[grpc.aio.Server], None],
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> AsyncIterator[str]:
    """Yields the target "127.0.0.1:<port>" of a started server; stops it afterwards."""
    server = grpc.aio.server(interceptors=list(interceptors))
    register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


def profile_servicer(fake: ProfileFake) -> Callable[[grpc.aio.Server], None]:
    return lambda server: profile_pb2_grpc.add_ProfileServiceServicer_to_server(fake, server)


async def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)
