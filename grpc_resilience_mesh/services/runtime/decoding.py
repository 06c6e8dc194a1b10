"""Undecodable requests answered as INVALID_ARGUMENT instead of grpc's UNKNOWN.

grpc.aio decodes a request before any interceptor's behaviour runs, and a protobuf
DecodeError there ends the call as UNKNOWN "Unexpected DecodeError" with a logged traceback:
to a caller, and to our alerts, that looks like a bug in the service. This interceptor, the
outermost, takes decoding over: the handler receives bytes, decodes them itself, and answers
a corrupt payload with INVALID_ARGUMENT naming the expected message type.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import Behaviour, ServerLayer, StreamBehaviour, WrappedHandlers, responses


class RequestDecodingInterceptor(ServerLayer):
    """Decodes unary and server-streaming requests in the handler, so a corrupt payload gets a
    deliberate status."""

    wraps_per_method = True

    def __init__(self) -> None:
        self._wrapped = WrappedHandlers()

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        if handler is None or handler.request_deserializer is None:
            return handler
        method = handler_call_details.method
        if handler.unary_stream is not None:
            return self._wrapped.wrap(
                method,
                handler,
                lambda: handler._replace(
                    request_deserializer=None,
                    unary_stream=_decoding_stream(
                        handler.unary_stream, handler.request_deserializer, method
                    ),
                ),
            )
        if handler.unary_unary is None:
            return handler
        return self._wrapped.wrap(
            method,
            handler,
            lambda: handler._replace(
                request_deserializer=None,
                unary_unary=_decoding(handler.unary_unary, handler.request_deserializer, method),
            ),
        )


async def _refuse(method: str, context: grpc.aio.ServicerContext) -> None:
    await context.abort(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"request: not a valid encoding of the {method.rsplit('/', 1)[-1]} request",
    )


def _decoding(inner: Behaviour, decode: Any, method: str) -> Behaviour:
    async def behaviour(request: bytes, context: grpc.aio.ServicerContext) -> Any:
        try:
            message = decode(request)
        except Exception:  # DecodeError, invalid UTF-8, ...: all mean a corrupt payload
            await _refuse(method, context)
        return await inner(message, context)

    return behaviour


def _decoding_stream(inner: StreamBehaviour, decode: Any, method: str) -> StreamBehaviour:
    async def behaviour(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            message = decode(request)
        except Exception:  # as above
            await _refuse(method, context)
        async with aclosing(responses(inner, message, context)) as answers:
            async for response in answers:
                yield response

    return behaviour
