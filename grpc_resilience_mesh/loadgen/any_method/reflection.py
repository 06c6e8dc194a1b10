"""A server's own description of its services, by gRPC server reflection (v1, else v1alpha):
the services it lists, and the file declaring one of them with every file that one imports."""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import grpc.aio
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha.reflection_pb2 import ServerReflectionRequest, ServerReflectionResponse

from grpc_resilience_mesh.loadgen.any_method.descriptors import (
    from_default_pool,
    missing_dependencies,
)
from grpc_resilience_mesh.loadgen.any_method.method import LoadInputError

# v1 and v1alpha are the same messages under two package names: one pair of classes speaks both.
PATHS = (
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
)
Files = dict[str, descriptor_pb2.FileDescriptorProto]


async def reflect(target: str, service: str, timeout_s: float) -> tuple[list[str], Files]:
    """The services `target` lists, and if `service` is one of them the files that declare it
    (else none). Any failure to get them is a LoadInputError naming the target."""
    no_reflection = (
        f"{target} does not serve gRPC reflection: give a descriptor_set, or protos"
        " (its .proto files)"
    )
    try:
        async with grpc.aio.insecure_channel(target) as channel, asyncio.timeout(timeout_s):
            found = await _reflect(channel, service, timeout_s)
    except TimeoutError as exc:
        raise LoadInputError(f"no reflection answer from {target} within {timeout_s:g} s") from exc
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
            raise LoadInputError(no_reflection) from exc
        raise LoadInputError(
            f"reflection at {target} failed: {exc.code().name} {exc.details()}"
        ) from exc
    if found is None:
        raise LoadInputError(no_reflection)
    return found


async def _reflect(
    channel: grpc.aio.Channel, service: str, timeout_s: float
) -> tuple[list[str], Files] | None:
    """As `reflect`, on the first path the server serves; None when it serves neither. Each
    path is asked whether it is served before a question is written to it, the last one too:
    written to a server without reflection, the question came back INTERNAL instead of
    UNIMPLEMENTED (once, under the whole suite's load), and the user read "failed" where
    the way out was to give protos."""
    for path in PATHS:
        if not await _serves(channel, path, timeout_s):
            continue
        ask = _Asker(channel, path, timeout_s)
        listed = await ask(ServerReflectionRequest(list_services=""))
        services = [s.name for s in listed.list_services_response.service]
        return services, await _files_of(ask, service) if service in services else {}
    return None


async def _serves(channel: grpc.aio.Channel, path: str, timeout_s: float) -> bool:
    """Whether the server serves `path`, asked on a stream that writes nothing: a question
    written to a path the server does not serve raced its early UNIMPLEMENTED and came back
    INTERNAL in 8 to 19 of 200 resolves (examples/chain's back, v1alpha only, as a process),
    failing the run; with no write, 0 of 300."""
    call = channel.stream_stream(path)(timeout=timeout_s)
    try:
        # Half-closed by hand, not by an empty request iterator: grpc.aio's iterator task
        # cancels the call when its half-close fails (the target refused the connection), and
        # the read then raised CancelledError instead of the call's status (1 resolve in ~3,000
        # in CI). A failed half-close means the call has ended: read() says how.
        with contextlib.suppress(Exception):
            await call.done_writing()
        await call.read()
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
            return False
        raise
    return True


class _Asker:
    """One question, one stream: written by a request iterator, because a write racing the
    server's early status (UNIMPLEMENTED) sometimes fails as INTERNAL instead."""

    def __init__(self, channel: grpc.aio.Channel, path: str, timeout_s: float) -> None:
        self.open = channel.stream_stream(
            path,
            request_serializer=ServerReflectionRequest.SerializeToString,
            response_deserializer=ServerReflectionResponse.FromString,
        )
        self.timeout_s = timeout_s

    async def __call__(self, request: ServerReflectionRequest) -> ServerReflectionResponse:
        stream = self.open(iter([request]), timeout=self.timeout_s)
        try:
            answer = await stream.read()
        finally:
            stream.cancel()
        if answer is grpc.aio.EOF:
            raise LoadInputError("reflection ended its stream before answering")
        if answer.HasField("error_response") and not request.HasField("file_by_filename"):
            error = answer.error_response
            raise LoadInputError(f"reflection error {error.error_code}: {error.error_message}")
        return answer


async def _files_of(ask: _Asker, service: str) -> Files:
    files: Files = {}
    _add(files, await ask(ServerReflectionRequest(file_containing_symbol=service)))
    while missing := missing_dependencies(files):
        for name in missing:
            answer = await ask(ServerReflectionRequest(file_by_filename=name))
            if answer.HasField("file_descriptor_response"):
                _add(files, answer)
            elif (known := from_default_pool(name)) is not None:
                files[name] = known
            else:
                raise LoadInputError(f"reflection does not know {name!r}, which {service} needs")
    return files


def _add(files: Files, answer: ServerReflectionResponse) -> None:
    for raw in answer.file_descriptor_response.file_descriptor_proto:
        file = descriptor_pb2.FileDescriptorProto.FromString(raw)
        files.setdefault(file.name, file)
