"""Server-side load shedding: a per-service limit on calls in flight."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio

from mesh.resilience.errors import ShedError
from mesh.resilience.events import CallShed, EventBus
from mesh.resilience.handlers import (
    Behaviour,
    ServerLayer,
    WrappedHandlers,
    abort_with,
    is_exempt,
)
from mesh.resilience.policy import ServerPolicy
from mesh.resilience.streaming_server import StreamBehaviour, responses


class SheddingInterceptor(ServerLayer):
    """Refuses calls beyond `max_in_flight` at once with RESOURCE_EXHAUSTED and a pushback, so
    callers back off instead of queueing into a timeout (refuse some rather than fail all)."""

    def __init__(self, service: str, policy: ServerPolicy, bus: EventBus) -> None:
        self._service = service
        self.limit = policy.max_in_flight
        self._pushback_s = policy.shed_pushback_ms / 1000.0
        self._bus = bus
        self.in_flight = 0
        self._wrapped = WrappedHandlers()

    def update(self, policy: ServerPolicy) -> None:
        """A new limit for calls arriving from now on (a policy swapped at runtime)."""
        self.limit = policy.max_in_flight
        self._pushback_s = policy.shed_pushback_ms / 1000.0

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if not self.limit or handler is None or is_exempt(method):
            return handler
        if handler.unary_stream is not None:  # a stream holds its place while it lasts
            stream = handler.unary_stream
            return self._wrapped.wrap(
                method,
                handler,
                lambda: handler._replace(unary_stream=self._wrap_stream(stream, method)),
            )
        if handler.unary_unary is None:
            return handler
        return self._wrapped.wrap(
            method,
            handler,
            lambda: handler._replace(unary_unary=self._wrap(handler.unary_unary, method)),
        )

    async def _admit(self, method: str, context: grpc.aio.ServicerContext) -> None:
        """Takes a place in flight, or refuses the call with a pushback."""
        if self.in_flight >= self.limit:
            self._bus.emit(CallShed(self._service, method, self.in_flight, self._pushback_s))
            await abort_with(context, ShedError(self._service, self.limit, self._pushback_s))
        self.in_flight += 1

    def _wrap(self, inner: Behaviour, method: str) -> Behaviour:
        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._admit(method, context)
            try:
                return await inner(request, context)
            finally:
                self.in_flight -= 1

        return behaviour

    def _wrap_stream(self, inner: StreamBehaviour, method: str) -> StreamBehaviour:
        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            await self._admit(method, context)
            try:
                async for message in responses(inner, request, context):
                    yield message
            finally:
                self.in_flight -= 1

        return behaviour
