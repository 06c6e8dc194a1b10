"""The last service of the chain: answers Get itself. With FAULT_ADMIN_ADDR set it also serves
the library's fault admin there (a port of its own, where only the runner calls), so `mesh
chaos run` can make its answers slow or failing by method, share of calls and header."""

from __future__ import annotations

import asyncio
import os

import grpc.aio

from examples.chain import chain_pb2, chain_pb2_grpc
from examples.chain.serving import address, serve
from grpc_aio_resilience import FaultLayer, FaultTable, ServerLayer, fault_admin_handler

LISTEN_ADDR = "127.0.0.1:50073"  # when LISTEN_ADDR is unset


class BackServicer(chain_pb2_grpc.BackServicer):
    """Values made from the key: nothing to store, the same answer every time."""

    async def Get(
        self, request: chain_pb2.GetRequest, context: grpc.aio.ServicerContext
    ) -> chain_pb2.GetReply:
        return chain_pb2.GetReply(key=request.key, value=f"value of {request.key}", path=["back"])


async def fault_admin(admin_addr: str) -> tuple[grpc.aio.Server, ServerLayer]:
    """A started server of the fault admin on `admin_addr`, and the layer applying its rules."""
    table = FaultTable()
    admin = grpc.aio.server()
    admin.add_generic_rpc_handlers((fault_admin_handler(table),))
    admin.add_insecure_port(admin_addr)
    await admin.start()
    print(f"back serving the fault admin on {admin_addr}", flush=True)
    return admin, FaultLayer(table, "back")


async def main() -> None:
    def register(server: grpc.aio.Server) -> None:
        chain_pb2_grpc.add_BackServicer_to_server(BackServicer(), server)

    admin_addr = os.environ.get("FAULT_ADMIN_ADDR")
    admin, layer = await fault_admin(admin_addr) if admin_addr else (None, None)
    try:
        listen_addr = address("LISTEN_ADDR", LISTEN_ADDR)
        await serve(
            "back", "chain.v1.Back", register, listen_addr, extra_layers=[layer] if layer else []
        )
    finally:
        if admin is not None:
            await admin.stop(None)


if __name__ == "__main__":
    asyncio.run(main())
