"""Servers for the any-method load tests, on 127.0.0.1:0: the kv example with reflection, and a
`loadtest.v1.Counter` service built from descriptors at run time (a unary Echo that may be
held, a server-streaming Count that fails after its messages when the tag says "fail", a
client-streaming Sum) that records what reached it, and its reflection also describes a
`loadtest.v1.Wallet` declared in a file that imports another."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection
from grpc_reflection.v1alpha.reflection_pb2 import ServerReflectionRequest, ServerReflectionResponse

from examples.kv.server import kv_server
from examples.kv.store import KeyValueStore
from grpc_aio_resilience import EventBus, ServerPolicy

KV_SERVICE = "kvexample.v1.KeyValue"
COUNTER_SERVICE = "loadtest.v1.Counter"
WALLET_SERVICE = "loadtest.v1.Wallet"
_Field = descriptor_pb2.FieldDescriptorProto


def counter_file() -> descriptor_pb2.FileDescriptorProto:
    """loadtest/counter.proto: Echo (unary), Count (server streaming), Sum (client streaming)."""
    file = descriptor_pb2.FileDescriptorProto(
        name="loadtest/counter.proto", package="loadtest.v1", syntax="proto3"
    )
    for name in ("CountRequest", "CountReply"):
        message = file.message_type.add(name=name)
        message.field.add(name="n", number=1, type=_Field.TYPE_INT32, label=_Field.LABEL_OPTIONAL)
        message.field.add(
            name="tag", number=2, type=_Field.TYPE_STRING, label=_Field.LABEL_OPTIONAL
        )
    service = file.service.add(name="Counter")
    for name, client, server in (("Echo", 0, 0), ("Count", 0, 1), ("Sum", 1, 0)):
        service.method.add(
            name=name,
            input_type=".loadtest.v1.CountRequest",
            output_type=".loadtest.v1.CountReply",
            client_streaming=bool(client),
            server_streaming=bool(server),
        )
    return file


def wallet_files() -> list[descriptor_pb2.FileDescriptorProto]:
    """loadtest/wallet.proto, whose one method takes a message of the file it imports."""
    money = descriptor_pb2.FileDescriptorProto(
        name="loadtest/money.proto", package="loadtest.v1", syntax="proto3"
    )
    money.message_type.add(name="Money").field.add(
        name="units", number=1, type=_Field.TYPE_INT64, label=_Field.LABEL_OPTIONAL
    )
    wallet = descriptor_pb2.FileDescriptorProto(
        name="loadtest/wallet.proto",
        package="loadtest.v1",
        syntax="proto3",
        dependency=[money.name],
    )
    wallet.service.add(name="Wallet").method.add(
        name="Pay", input_type=".loadtest.v1.Money", output_type=".loadtest.v1.Money"
    )
    return [money, wallet]


def counter_pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for file in (counter_file(), *wallet_files()):
        pool.Add(file)
    return pool


@dataclass
class Counter:
    """What reached the service: each request's tag and x-tenant header; `held` Echo calls
    wait until `release` is set."""

    pool: descriptor_pool.DescriptorPool = field(default_factory=counter_pool)
    seen: list[tuple[str, str]] = field(default_factory=list)
    hold: bool = False
    release: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: int = 0

    def classes(self) -> tuple[Any, Any]:
        request = self.pool.FindMessageTypeByName("loadtest.v1.CountRequest")
        reply = self.pool.FindMessageTypeByName("loadtest.v1.CountReply")
        return message_factory.GetMessageClass(request), message_factory.GetMessageClass(reply)

    def saw(self, request: Any, context: grpc.aio.ServicerContext) -> None:
        tenant = dict(context.invocation_metadata() or ()).get("x-tenant", "")
        self.seen.append((request.tag, tenant))

    async def echo(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.saw(request, context)
        self.in_flight += 1
        try:
            if self.hold:
                await self.release.wait()
        finally:
            self.in_flight -= 1
        return self.classes()[1](n=request.n, tag=request.tag)

    async def count(self, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        self.saw(request, context)
        for i in range(request.n):
            yield self.classes()[1](n=i, tag=request.tag)
        if request.tag == "fail":
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"failed after {request.n}")

    async def sum(self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
        return self.classes()[1](n=sum([r.n async for r in requests]))

    def handler(self) -> grpc.GenericRpcHandler:
        request, reply = self.classes()
        codec = {
            "request_deserializer": request.FromString,
            "response_serializer": reply.SerializeToString,
        }
        return grpc.method_handlers_generic_handler(
            COUNTER_SERVICE,
            {
                "Echo": grpc.unary_unary_rpc_method_handler(self.echo, **codec),
                "Count": grpc.unary_stream_rpc_method_handler(self.count, **codec),
                "Sum": grpc.stream_unary_rpc_method_handler(self.sum, **codec),
            },
        )


class _LeanReflection(reflection.aio.ReflectionServicer):  # type: ignore[misc]
    """Reflection that leaves out the files a file imports: the client must ask for each."""

    def _file_by_filename(self, request: Any, filename: str) -> Any:
        return _lean(super()._file_by_filename(request, filename))

    def _file_containing_symbol(self, request: Any, name: str) -> Any:
        return _lean(super()._file_containing_symbol(request, name))


def _lean(answer: ServerReflectionResponse) -> ServerReflectionResponse:
    del answer.file_descriptor_response.file_descriptor_proto[1:]
    return answer


@asynccontextmanager
async def serving(server: grpc.aio.Server) -> AsyncIterator[str]:
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


@asynccontextmanager
async def kv_with_reflection(
    store: KeyValueStore | None = None, reflect: bool = True
) -> AsyncIterator[str]:
    """The kv example's server (examples/kv/server.py), with v1alpha reflection if `reflect`."""
    server = kv_server(store or KeyValueStore(), ServerPolicy(), EventBus())
    if reflect:
        reflection.enable_server_reflection([KV_SERVICE, reflection.SERVICE_NAME], server)
    async with serving(server) as address:
        yield address


@asynccontextmanager
async def counter_serving(counter: Counter, v1_only: bool = False) -> AsyncIterator[str]:
    """`counter` served with reflection over its own pool: v1alpha, or if `v1_only` as some
    servers do it: v1 alone, each answer holding only the file asked for."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([counter.handler()])
    names = [COUNTER_SERVICE, WALLET_SERVICE, reflection.SERVICE_NAME]
    if v1_only:
        servicer = _LeanReflection(names, pool=counter.pool)
        info = grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=ServerReflectionRequest.FromString,
            response_serializer=ServerReflectionResponse.SerializeToString,
        )
        v1 = "grpc.reflection.v1.ServerReflection"
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(v1, {"ServerReflectionInfo": info})]
        )
    else:
        reflection.enable_server_reflection(names, server, pool=counter.pool)
    async with serving(server) as address:
        yield address
