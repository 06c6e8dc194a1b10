"""Server side: capture each call's deadline and criticality for propagation (the client
pipeline and SheddingInterceptor read them), and count every call. A grpc.aio ServerInterceptor:
mount it outside SheddingInterceptor (`server_interceptors` gives the order)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

from grpc_aio_resilience import criticality
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.deadline import inbound_deadline_var, served_deadline_var
from grpc_aio_resilience.events import EventBus, ServerCallFinished, ServerCallStarted
from grpc_aio_resilience.outcome import served_code
from grpc_aio_resilience.server_layer import Behaviour, ServerLayer, WrappedHandlers
from grpc_aio_resilience.streaming_server import inbound_stream

if TYPE_CHECKING:
    from grpc_aio_resilience.shedding import CountedAdmission

_OK = grpc.StatusCode.OK

AssignCriticality = Callable[[str], Criticality]
"""A service that sets its calls' criticality itself (a public edge: per RPC, from policy)
instead of trusting the `resilience-criticality` its caller sent: full method -> criticality."""


class InboundInterceptor(ServerLayer):
    """Stores the inbound deadline as an absolute `time.monotonic()` value, and the call's
    criticality, in contextvars for outbound calls made while serving, and emits
    ServerCallFinished for every unary call. With `assign`, the caller's criticality is
    ignored and `assign(method)` is the call's (a public edge must not trust its clients).
    Without a `bus`, the events go to a bus of its own. `counted`: what the shedding layer
    right inside says of a handler it wrapped (SheddingInterceptor.counted): its counted path
    then runs in this layer's frame while nobody listens for the calls' events."""

    wraps_per_method = True

    def __init__(
        self,
        service: str,
        bus: EventBus | None = None,
        assign: AssignCriticality | None = None,
        *,
        counted: Callable[[Behaviour], CountedAdmission | None] | None = None,
    ) -> None:
        self._service = service
        self._bus = EventBus() if bus is None else bus
        self._assign = assign
        self._counted = counted
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
            lambda: handler._replace(unary_unary=self._wrap_unary(handler.unary_unary, method)),
        )

    def _wrap_unary(self, inner: Behaviour, method: str) -> Behaviour:
        counted = None if self._counted is None else self._counted(inner)
        behaviour = self._wrap(inner, method)
        return behaviour if counted is None else self._wrap_counting(behaviour, counted, method)

    def _wrap_counting(
        self, regular: Behaviour, counted: CountedAdmission, method: str
    ) -> Behaviour:
        """This layer and the shedding layer's counted path in one frame: the criticality
        this layer settles is the one admission counts the call under. While anyone listens
        for ServerCallStarted or ServerCallFinished, calls take the `regular` way."""
        heard_by = self._bus
        assign = self._assign
        from_metadata = criticality.from_metadata
        set_deadline, reset_deadline = inbound_deadline_var.set, inbound_deadline_var.reset
        mark_served = served_deadline_var.set
        set_level, reset_level = criticality.inbound_var.set, criticality.inbound_var.reset
        inner, general, admission = counted
        waiters, default = admission.waiters, criticality.DEFAULT

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            heard = heard_by.heard
            if ServerCallStarted in heard or ServerCallFinished in heard:
                return await regular(request, context)
            started_s = time.monotonic()  # before the time left is read: the deadline errs early
            remaining_s = context.time_remaining()
            deadline_s = None if remaining_s is None else started_s + remaining_s
            token = set_deadline(deadline_s)
            mark_served(deadline_s)
            value = (
                from_metadata(context.invocation_metadata()) if assign is None else assign(method)
            )
            level = set_level(value)
            try:
                shares = admission.fixed_shares  # read per call: see CountedAdmission.general
                if shares is None or admission.in_flight >= shares[value or default]:
                    return await general(request, context)
                admission.in_flight += 1
                try:
                    return await inner(request, context)
                finally:
                    admission.in_flight -= 1
                    if waiters:
                        admission.hand_over()
            finally:
                reset_deadline(token)
                reset_level(level)

        return behaviour

    def _wrap(self, inner: Behaviour, method: str) -> Behaviour:
        bus = self._bus
        emit = bus.emit
        service = self._service
        assign = self._assign
        from_metadata = criticality.from_metadata
        # The context variables' own methods (what deadline's and criticality's functions
        # call): no frame of ours around each of them on every call.
        set_deadline, reset_deadline = inbound_deadline_var.set, inbound_deadline_var.reset
        mark_served = served_deadline_var.set
        set_level, reset_level = criticality.inbound_var.set, criticality.inbound_var.reset

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started_s = time.monotonic()
            remaining_s = context.time_remaining()
            deadline_s = None if remaining_s is None else started_s + remaining_s
            token = set_deadline(deadline_s)
            mark_served(deadline_s)
            level = set_level(  # the service's own criticality, or its caller's
                from_metadata(context.invocation_metadata()) if assign is None else assign(method)
            )
            heard = bus.heard
            if ServerCallStarted not in heard and ServerCallFinished not in heard:
                try:  # nobody counts the call: no event, no status to read back
                    return await inner(request, context)
                finally:
                    reset_deadline(token)
                    reset_level(level)
            emit(ServerCallStarted(service, method))
            failure: BaseException | None = None
            try:
                return await inner(request, context)
            except BaseException as err:
                failure = err
                raise
            finally:
                reset_deadline(token)
                reset_level(level)
                status = served_code(failure, context)
                failure = None  # the exception's traceback holds this frame: no cycle
                code = "OK" if status is _OK else status.name  # .name costs ~90 ns
                emit(
                    ServerCallFinished(
                        service, method, code, time.monotonic() - started_s, remaining_s
                    )
                )

        return behaviour
