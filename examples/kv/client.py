"""A client of the key-value service: every call goes through the library's client pipeline."""

import asyncio
import sys

import grpc.aio

from examples.kv import kv_pb2, kv_pb2_grpc
from grpc_aio_resilience import DeadlinePolicy, EdgePolicy, EventBus, insecure_channel

POLICY = EdgePolicy(deadline=DeadlinePolicy(total_s=2.0, attempt_s=0.5))  # retries: 3 attempts
SERVICES = ["kvexample.v1.KeyValue"]  # whose methods' idempotency the pipeline reads at build


def kv_channel(target: str, policy: EdgePolicy, bus: EventBus) -> grpc.aio.Channel:
    """`target`: one address, or replicas as `host:port,host:port`."""
    return insecure_channel(target, policy, services=SERVICES, dependency="kv", bus=bus)


async def main(target: str = "127.0.0.1:50051") -> None:
    bus = EventBus()
    bus.subscribe(print)  # every decision as an event: attempts, retries, breaker, hedges
    async with kv_channel(target, POLICY, bus) as channel:
        kv = kv_pb2_grpc.KeyValueStub(channel)
        await kv.Put(kv_pb2.PutRequest(key="greeting", value="hello"), timeout=2.0)
        print(await kv.Get(kv_pb2.GetRequest(key="greeting"), timeout=2.0))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))  # the server's address, or a proxy's
