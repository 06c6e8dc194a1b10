"""The middle of the chain: answers Get by asking back (BACK_ADDR), through the library's
channel, whose deadline is never later than the one middle's caller set."""

from __future__ import annotations

import asyncio

import grpc.aio

from examples.chain import chain_pb2, chain_pb2_grpc
from examples.chain.serving import address, relayed, serve
from grpc_aio_resilience import DeadlinePolicy, EdgePolicy, insecure_channel

LISTEN_ADDR = "127.0.0.1:50072"  # when LISTEN_ADDR is unset
BACK_ADDR = "127.0.0.1:50073"  # when BACK_ADDR is unset: back's own default
# The chain's one retry owner, nearest the data: up to 3 attempts of 0.3 s each in 0.9 s. An
# answer from back within 0.3 s is waited for; a slower one is cut and the call retried.
TO_BACK = EdgePolicy(deadline=DeadlinePolicy(total_s=0.9, attempt_s=0.3))


class MiddleServicer(chain_pb2_grpc.MiddleServicer):
    """Passes each Get on to back and adds itself to the reply's path."""

    def __init__(self, back: chain_pb2_grpc.BackStub) -> None:
        self._back = back

    async def Get(
        self, request: chain_pb2.GetRequest, context: grpc.aio.ServicerContext
    ) -> chain_pb2.GetReply:
        reply: chain_pb2.GetReply = await relayed(self._back.Get(request), context)
        return chain_pb2.GetReply(key=reply.key, value=reply.value, path=["middle", *reply.path])


async def main() -> None:
    back_addr = address("BACK_ADDR", BACK_ADDR)
    async with insecure_channel(
        back_addr, TO_BACK, services=["chain.v1.Back"], dependency="back"
    ) as channel:

        def register(server: grpc.aio.Server) -> None:
            servicer = MiddleServicer(chain_pb2_grpc.BackStub(channel))
            chain_pb2_grpc.add_MiddleServicer_to_server(servicer, server)

        await serve("middle", "chain.v1.Middle", register, address("LISTEN_ADDR", LISTEN_ADDR))


if __name__ == "__main__":
    asyncio.run(main())
