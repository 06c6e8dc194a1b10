"""The inbound and shedding layers as one coroutine per unary call (`InboundShedding`).

Mounted as two layers, a unary call runs through two wrapper coroutines, reads the call's
deadline twice and its criticality twice (once from a context variable the first just set). A
server chain that has the two side by side (inbound outside, nothing between) runs them through
this layer instead (`fuse_server_layers`); streams, exempt methods and a server without
admission keep the two layers as they are.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import criticality
from grpc_aio_resilience.admission import Admission
from grpc_aio_resilience.deadline import (
    mark_served_deadline,
    reset_inbound_deadline,
    set_inbound_deadline,
)
from grpc_aio_resilience.errors import ShedError
from grpc_aio_resilience.events import ServerCallFinished, ServerCallStarted
from grpc_aio_resilience.inbound import InboundInterceptor, code_after, inbound_criticality
from grpc_aio_resilience.intake import sent_timeout_s, waited_s
from grpc_aio_resilience.server_layer import (
    Behaviour,
    ServerLayer,
    WrappedHandlers,
    abort_with,
    is_exempt,
)
from grpc_aio_resilience.shedding import SheddingInterceptor, dropped_after


class InboundShedding(ServerLayer):
    """`inbound` with `shedding` inside it, a unary call's work done in one coroutine: the same
    context variables, events, admission and refusals, in the same order, as the two layers."""

    def __init__(self, inbound: InboundInterceptor, shedding: SheddingInterceptor) -> None:
        self.inbound = inbound
        self.shedding = shedding
        self._wrapped = WrappedHandlers()

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        shedding = self.shedding
        if (
            handler is None
            or handler.unary_unary is None
            or is_exempt(method, shedding.exempt)
            or not shedding.admission.active
        ):
            return self.inbound.wrap(
                shedding.wrap(handler, handler_call_details), handler_call_details
            )
        unary = handler.unary_unary
        return self._wrapped.wrap(
            method, handler, lambda: handler._replace(unary_unary=self._fuse(unary, method))
        )

    def _fuse(self, inner: Behaviour, method: str) -> Behaviour:
        inbound = self.inbound
        bus, service, assign = inbound.bus, inbound.service, inbound.assign
        emit = bus.emit
        admission = self.shedding.admission

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started_s = time.monotonic()
            remaining_s = context.time_remaining()
            deadline_s = None if remaining_s is None else started_s + remaining_s
            token = set_inbound_deadline(deadline_s)
            mark_served_deadline(deadline_s)
            found = inbound_criticality(context, method, assign)
            level = criticality.set_current(found)
            counted = bus.wants(ServerCallStarted) or bus.wants(ServerCallFinished)
            if counted:
                emit(ServerCallStarted(service, method))
            code = "UNKNOWN"
            try:
                waited = _waited_s(admission, context, remaining_s)
                wanted = criticality.DEFAULT if found is None else found
                try:
                    now = admission.admit_now(method, wanted, remaining_s, waited)
                    place = (
                        now
                        if now is not None
                        else await admission.queue_for(method, wanted, remaining_s)
                    )
                except ShedError as err:
                    await abort_with(context, err)
                dropped: bool | None = None
                try:
                    response = await inner(request, context)
                    dropped = dropped_after(context, "OK")
                    code = code_after(context, "OK")
                    return response
                except asyncio.CancelledError:
                    dropped = dropped_after(context, "CANCELLED")
                    raise
                except Exception:
                    dropped = dropped_after(context, "UNKNOWN")
                    raise
                finally:
                    admission.release(place, dropped)
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except Exception:
                code = code_after(context, "UNKNOWN")
                raise
            finally:
                reset_inbound_deadline(token)
                criticality.reset_current(level)
                if counted:
                    elapsed_s = time.monotonic() - started_s
                    emit(ServerCallFinished(service, method, code, elapsed_s, remaining_s))

        return behaviour


def _waited_s(
    admission: Admission, context: grpc.aio.ServicerContext, remaining_s: float | None
) -> float | None:
    """The call's wait in front of admission, when its intake gate asks (else None)."""
    if not admission.intake.enabled:
        return None
    return waited_s(sent_timeout_s(context.invocation_metadata()), remaining_s)


def fuse_server_layers(layers: list[ServerLayer]) -> list[ServerLayer]:
    """`layers` (outermost first) with each InboundInterceptor directly outside a
    SheddingInterceptor replaced by one InboundShedding doing both."""
    fused: list[ServerLayer] = []
    for layer in layers:
        outer = fused[-1] if fused else None
        if isinstance(layer, SheddingInterceptor) and isinstance(outer, InboundInterceptor):
            fused[-1] = InboundShedding(outer, layer)
        else:
            fused.append(layer)
    return fused
