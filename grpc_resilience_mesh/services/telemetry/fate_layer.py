"""The server layer that gives each unary call received its fate (grpc_aio_resilience.fates): it
gathers the call's facts while the layers inside run, then writes the fate on the call's
SERVER span (`mesh.fate`), in its trailers (`resilience-fate`, for the caller to count) and in
`mesh_request_fates_total`. A plain `ok` goes in no trailer: an OK status without one reads
`ok` (`seen_by_caller`), and the entry cost grpc 4-13 us of loop CPU per call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import (
    FATE_EVENTS,
    FATE_KEY,
    Behaviour,
    EventBus,
    FateFacts,
    ServerLayer,
    WrappedHandlers,
    current_fate,
    fate_listener,
    fate_of,
    served_code,
)
from grpc_resilience_mesh.services.exempt import is_exempt
from grpc_resilience_mesh.services.telemetry import names as n
from grpc_resilience_mesh.services.telemetry.tracing.spans import current_server_span

CountFate = Callable[[str, str], None]
"""Counts one call of `method` with `fate` (MeshMetrics.count_fate)."""


class FateLayer(ServerLayer):
    """Inside the tracing layer (its span is current here), outside every layer that may refuse
    the call, so a refusal has its fate too. Streams pass through: their fate is their own
    (grpc_aio_resilience.streaming's StreamEnded)."""

    wraps_per_method = True

    def __init__(self, service: str, bus: EventBus, count: CountFate | None = None) -> None:
        self._service = service
        self._count = count
        self._wrapped = WrappedHandlers()
        if not bus.has(fate_listener):  # several servers of one process may share a bus
            bus.subscribe(fate_listener, FATE_EVENTS)

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if handler is None or handler.unary_unary is None or is_exempt(method):
            return handler
        unary = handler.unary_unary
        return self._wrapped.wrap(
            method, handler, lambda: handler._replace(unary_unary=self._wrap(unary, method))
        )

    def _wrap(self, inner: Behaviour, method: str) -> Behaviour:
        service = self._service
        count = self._count
        on_final = None if count is None else (lambda fate: count(method, fate))

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            facts = FateFacts(service, on_final)
            token = current_fate.set(facts)
            failure: BaseException | None = None
            try:
                return await inner(request, context)
            except BaseException as err:
                failure = err
                raise
            finally:
                current_fate.reset(token)
                code = served_code(failure, context)
                failure = None  # the exception's traceback holds this frame: no cycle
                self._finish(facts, method, code, context)

        return behaviour

    def _finish(
        self,
        facts: FateFacts,
        method: str,
        code: grpc.StatusCode,
        context: grpc.aio.ServicerContext,
    ) -> None:
        fate = facts.final  # an abort wrote it, and counted it before the status went out
        if fate is None:  # no abort wrote it: an answer, or a failure the handler raised
            ok = code is grpc.StatusCode.OK  # then fate_of needs no time left
            fate = facts.settle(fate_of(facts, code, None if ok else context.time_remaining()))
            if ok and fate != "ok":  # no trailer reads "ok"
                trailers = tuple(context.trailing_metadata() or ())
                context.set_trailing_metadata((*trailers, (FATE_KEY, fate)))
        span = current_server_span.get()
        if span is not None and span.is_recording():
            span.set_attribute(n.FATE, fate)
