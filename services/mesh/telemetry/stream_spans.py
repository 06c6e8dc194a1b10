"""The SERVER span of a server-streaming call: the same `Recv.` span as a unary call's, current
while the handler produces its messages, ended with the stream's final status and the number
of messages it sent (`mesh.messages`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc.aio
from opentelemetry import context as otel_context

from mesh.resilience.streaming_server import StreamBehaviour, StreamStatus, tracked
from mesh.telemetry import names as n
from mesh.telemetry.spans import (
    SpanFactory,
    current_server_span,
    end_server_span,
    start_server_span,
)


def traced_stream(
    factory: SpanFactory, inner: StreamBehaviour, method: str, carrier: dict[str, str]
) -> StreamBehaviour:
    names = factory.names(method)

    async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        span, token, server_token = start_server_span(factory, names, carrier)
        status = StreamStatus()
        try:
            async for message in tracked(inner, request, context, status):
                yield message
        finally:
            with contextlib.suppress(ValueError):  # finalised late, in another context
                current_server_span.reset(server_token)
            otel_context.detach(token)
            if span.is_recording():
                span.set_attribute(n.MESSAGES, status.sent)
            end_server_span(span, status.code)

    return behaviour
