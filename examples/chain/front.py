"""The front of the chain, what callers call: Get asks middle (MIDDLE_ADDR) once, Watch once
per update it streams, each through the library's channel under the caller's deadline."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc.aio

from examples.chain import chain_pb2, chain_pb2_grpc
from examples.chain.serving import address, relayed, serve
from grpc_aio_resilience import DeadlinePolicy, EdgePolicy, RetryPolicy, insecure_channel

LISTEN_ADDR = "127.0.0.1:50071"  # when LISTEN_ADDR is unset
MIDDLE_ADDR = "127.0.0.1:50072"  # when MIDDLE_ADDR is unset: middle's own default
# One attempt, as long as the call's deadline allows (at most 1 s): middle retries back, and a
# retry here too would multiply attempts (3 x 3 reads of back for one Get).
TO_MIDDLE = EdgePolicy(
    deadline=DeadlinePolicy(total_s=1.0, attempt_s=1.0), retry=RetryPolicy(max_attempts=1)
)
WATCH_UPDATES = 3  # a Watch without a count
MAX_WATCH_UPDATES = 100


class FrontServicer(chain_pb2_grpc.FrontServicer):
    """Get and Watch, each update read through middle, front added to each reply's path."""

    def __init__(self, middle: chain_pb2_grpc.MiddleStub) -> None:
        self._middle = middle

    async def Get(
        self, request: chain_pb2.GetRequest, context: grpc.aio.ServicerContext
    ) -> chain_pb2.GetReply:
        return await self._read(request.key, context)

    async def Watch(
        self, request: chain_pb2.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[chain_pb2.Update]:
        count = request.count or WATCH_UPDATES
        if not 0 < count <= MAX_WATCH_UPDATES:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"count must be 1..{MAX_WATCH_UPDATES}"
            )
        for seq in range(count):
            reply = await self._read(f"{request.key}#{seq}", context)
            yield chain_pb2.Update(seq=seq, reply=reply)

    async def _read(self, key: str, context: grpc.aio.ServicerContext) -> chain_pb2.GetReply:
        call = self._middle.Get(chain_pb2.GetRequest(key=key))
        reply: chain_pb2.GetReply = await relayed(call, context)
        return chain_pb2.GetReply(key=reply.key, value=reply.value, path=["front", *reply.path])


async def main() -> None:
    middle_addr = address("MIDDLE_ADDR", MIDDLE_ADDR)
    async with insecure_channel(
        middle_addr, TO_MIDDLE, services=["chain.v1.Middle"], dependency="middle"
    ) as channel:

        def register(server: grpc.aio.Server) -> None:
            servicer = FrontServicer(chain_pb2_grpc.MiddleStub(channel))
            chain_pb2_grpc.add_FrontServicer_to_server(servicer, server)

        await serve("front", "chain.v1.Front", register, address("LISTEN_ADDR", LISTEN_ADDR))


if __name__ == "__main__":
    asyncio.run(main())
