"""The key-value service behind the library's server interceptors (admission, stream guard)."""

import asyncio
import os

import grpc.aio

from examples.kv import kv_pb2_grpc
from examples.kv.store import KeyValueStore
from grpc_aio_resilience import EventBus, ServerPolicy, server_interceptors

POLICY = ServerPolicy(max_in_flight=64, shed_pushback_ms=200)  # the 65th call at once is shed


def kv_server(store: KeyValueStore, policy: ServerPolicy, bus: EventBus) -> grpc.aio.Server:
    server = grpc.aio.server(interceptors=server_interceptors("kv", policy, bus))
    kv_pb2_grpc.add_KeyValueServicer_to_server(store, server)
    return server


async def main(address: str = os.environ.get("LISTEN_ADDR", "127.0.0.1:50051")) -> None:
    bus = EventBus()
    bus.subscribe(print)  # every decision as an event: calls shed, limits changed
    server = kv_server(KeyValueStore(), POLICY, bus)
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main())
