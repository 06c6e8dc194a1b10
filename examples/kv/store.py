"""The key-value service itself, in memory: nothing in it knows about resilience."""

from __future__ import annotations

import grpc.aio

from examples.kv import kv_pb2, kv_pb2_grpc


class KeyValueStore(kv_pb2_grpc.KeyValueServicer):
    """Strings under string keys, and counters that apply each `idempotency_key` once (so a
    retried Add with a key adds once, which is what lets the client retry it)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.totals: dict[str, int] = {}
        self.applied: dict[str, int] = {}
        """The total each idempotency key's Add produced, answered again on a repeat."""

    async def Get(
        self, request: kv_pb2.GetRequest, context: grpc.aio.ServicerContext
    ) -> kv_pb2.GetResponse:
        value = self.values.get(request.key)
        return kv_pb2.GetResponse(found=value is not None, value=value or "")

    async def Put(
        self, request: kv_pb2.PutRequest, context: grpc.aio.ServicerContext
    ) -> kv_pb2.PutResponse:
        self.values[request.key] = request.value
        return kv_pb2.PutResponse()

    async def Add(
        self, request: kv_pb2.AddRequest, context: grpc.aio.ServicerContext
    ) -> kv_pb2.AddResponse:
        if request.idempotency_key and request.idempotency_key in self.applied:
            return kv_pb2.AddResponse(total=self.applied[request.idempotency_key])
        total = self.totals[request.key] = self.totals.get(request.key, 0) + request.delta
        if request.idempotency_key:
            self.applied[request.idempotency_key] = total
        return kv_pb2.AddResponse(total=total)

    async def Delete(
        self, request: kv_pb2.DeleteRequest, context: grpc.aio.ServicerContext
    ) -> kv_pb2.DeleteResponse:
        return kv_pb2.DeleteResponse(deleted=self.values.pop(request.key, None) is not None)
