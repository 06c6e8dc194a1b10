"""A Gateway for the load tests: raw-bytes handlers by method name on 127.0.0.1:0."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import grpc

Handler = Callable[[bytes, grpc.aio.ServicerContext[bytes, bytes]], Awaitable[bytes]]


@asynccontextmanager
async def serving(handlers: dict[str, Handler]) -> AsyncIterator[str]:
    """`handlers` ({"GetHome": ..., "Checkout": ...}) served; yields the address."""
    generic = grpc.method_handlers_generic_handler(
        "mesh.v1.Gateway",
        {name: grpc.unary_unary_rpc_method_handler(call) for name, call in handlers.items()},
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((generic,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)
