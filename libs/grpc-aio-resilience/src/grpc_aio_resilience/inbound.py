"""Server side: capture each call's deadline and criticality for propagation (the client
pipeline and SheddingInterceptor read them), and count every call. A grpc.aio ServerInterceptor:
mount it outside SheddingInterceptor (`server_interceptors` gives the order)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import criticality
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.deadline import (
    mark_served_deadline,
    reset_inbound_deadline,
    set_inbound_deadline,
)
from grpc_aio_resilience.events import EventBus, ServerCallFinished, ServerCallStarted
from grpc_aio_resilience.outcome import served_code
from grpc_aio_resilience.server_layer import Behaviour, ServerLayer, WrappedHandlers
from grpc_aio_resilience.streaming_server import inbound_stream

_OK = grpc.StatusCode.OK

AssignCriticality = Callable[[str], Criticality]
"""A service that sets its calls' criticality itself (a public edge: per RPC, from policy)
instead of trusting the `resilience-criticality` its caller sent: full method -> criticality."""


def inbound_criticality(
    context: grpc.aio.ServicerContext, method: str, assign: AssignCriticality | None
) -> Criticality | None:
    """The criticality of the call being served: the service's own, or its caller's."""
    if assign is not None:
        return assign(method)
    return criticality.from_metadata(context.invocation_metadata())


class InboundInterceptor(ServerLayer):
    """Stores the inbound deadline as an absolute `time.monotonic()` value, and the call's
    criticality, in contextvars for outbound calls made while serving, and emits
    ServerCallFinished for every unary call. With `assign`, the caller's criticality is
    ignored and `assign(method)` is the call's (a public edge must not trust its clients).
    Without a `bus`, the events go to a bus of its own."""

    wraps_per_method = True

    def __init__(
        self, service: str, bus: EventBus | None = None, assign: AssignCriticality | None = None
    ) -> None:
        self._service = service
        self._bus = EventBus() if bus is None else bus
        self._assign = assign
        self._wrapped = WrappedHandlers()

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if handler is not None and handler.unary_stream is not None:
            stream = handler.unary_stream
            return self._wrapped.wrap(
                method,
                handler,
                lambda: handler._replace(
                    unary_stream=inbound_stream(
                        stream, self._service, method, self._bus, self._assign
                    )
                ),
            )
        if handler is None or handler.unary_unary is None:
            return handler
        return self._wrapped.wrap(
            method,
            handler,
            lambda: handler._replace(unary_unary=self._wrap(handler.unary_unary, method)),
        )

    def _wrap(self, inner: Behaviour, method: str) -> Behaviour:
        bus = self._bus
        emit = bus.emit
        service = self._service
        assign = self._assign

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started_s = time.monotonic()
            remaining_s = context.time_remaining()
            deadline_s = None if remaining_s is None else started_s + remaining_s
            token = set_inbound_deadline(deadline_s)
            mark_served_deadline(deadline_s)
            level = criticality.set_current(inbound_criticality(context, method, assign))
            if not (bus.wants(ServerCallStarted) or bus.wants(ServerCallFinished)):
                try:  # nobody counts the call: no event, no status to read back
                    return await inner(request, context)
                finally:
                    reset_inbound_deadline(token)
                    criticality.reset_current(level)
            emit(ServerCallStarted(service, method))
            failure: BaseException | None = None
            try:
                return await inner(request, context)
            except BaseException as err:
                failure = err
                raise
            finally:
                reset_inbound_deadline(token)
                criticality.reset_current(level)
                status = served_code(failure, context)
                failure = None  # the exception's traceback holds this frame: no cycle
                code = "OK" if status is _OK else status.name  # .name costs ~90 ns
                emit(
                    ServerCallFinished(
                        service, method, code, time.monotonic() - started_s, remaining_s
                    )
                )

        return behaviour
