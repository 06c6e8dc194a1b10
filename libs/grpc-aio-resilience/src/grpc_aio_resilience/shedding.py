"""Server-side admission, the one layer: unary calls through grpc_aio_resilience.admission (a
static, Vegas or Gradient2 limit, deadline-aware, queued, sheddable first, CoDel on the wait in
front of the server), streams against their own static limit. A grpc.aio ServerInterceptor: mount
it alone, or with StreamGuard outside it (`server_interceptors`)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import aclosing
from typing import Any, NamedTuple

import grpc
import grpc.aio

from grpc_aio_resilience import criticality, intake
from grpc_aio_resilience.admission import Admission
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.clock import Clock, SystemClock
from grpc_aio_resilience.errors import ShedError
from grpc_aio_resilience.events import CallShed, EventBus
from grpc_aio_resilience.server_layer import (
    EXEMPT_PREFIXES,
    Behaviour,
    ServerLayer,
    WrappedHandlers,
    abort_with,
    is_exempt,
)
from grpc_aio_resilience.streaming_server import StreamBehaviour, responses


class _Places:
    """One limit on what is in flight at once (0: no limit)."""

    __slots__ = ("in_flight", "kind", "limit")

    def __init__(self, kind: str, limit: int) -> None:
        self.kind = kind
        self.limit = limit
        self.in_flight = 0


DROPPED_CODES = frozenset({"RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"})
"""A call ending with these was dropped (refused further on, or out of time): the limit's
onDropped. OK is a sample (onSuccess); any other code has no meaningful RTT (onIgnore)."""


def _dropped(context: grpc.aio.ServicerContext, default: str) -> bool | None:
    code = context.code()
    name = code.name if isinstance(code, grpc.StatusCode) else default
    if name == "OK":
        return False
    if name in DROPPED_CODES:
        return True
    if name == "CANCELLED":  # the client's deadline passed (a timeout), or it gave up
        remaining_s = context.time_remaining()
        return True if remaining_s is not None and remaining_s <= 0 else None
    return None


class CountedAdmission(NamedTuple):
    """The parts of one method's counted path (SheddingInterceptor.counted): what a layer
    right outside it that has settled the call's criticality can run in its own frame."""

    inner: Behaviour
    """The handler inside the shedding layer."""
    general: Behaviour
    """The shedding layer's general path: a call its criticality has no place for goes there,
    and every call while the admission's `fixed_shares` is None."""
    admission: Admission


class SheddingInterceptor(ServerLayer):
    """Refuses what admission will not take with RESOURCE_EXHAUSTED and a pushback, so
    callers back off instead of queueing into a timeout (refuse some rather than fail all).

    Streams count against their own limit, `max_streams_in_flight`, never against the unary
    calls': a stream may hold its place for as long as its reader takes, and streams that
    stall must not leave a unary call without one. At that limit a new stream first asks
    `make_stream_room` (StreamGuard.end_longest_stalled) to end a stream whose reader stalled,
    and takes its place; only when there is none is it refused.

    Methods starting with an `exempt` prefix (health and reflection by default) are never
    refused; without a `bus`, the layer's events go to a bus of its own. `inbound_outside`:
    an InboundInterceptor settles each call's criticality outside this layer."""

    wraps_per_method = True  # whether it wraps follows the policy, and `update` says so

    def __init__(
        self,
        service: str,
        policy: ServerPolicy | None = None,
        bus: EventBus | None = None,
        clock: Clock | None = None,
        make_stream_room: Callable[[], bool] | None = None,
        *,
        exempt: Iterable[str] = EXEMPT_PREFIXES,
        inbound_outside: bool = False,
    ) -> None:
        policy = ServerPolicy() if policy is None else policy
        self._inbound_outside = inbound_outside
        """An InboundInterceptor runs outside this layer (`server_interceptors`): a call it
        found no criticality for has none in its metadata either, so it is not read again."""
        self._service = service
        self._bus = bus = EventBus() if bus is None else bus
        self._make_stream_room = make_stream_room
        self._exempt = tuple(exempt)
        self.admission = Admission(service, policy, clock or SystemClock(), bus)  # announces
        self._streams = _Places("stream", policy.max_streams_in_flight)
        self._pushback_s = policy.shed_pushback_ms / 1000.0
        self._wrapped = WrappedHandlers()
        self._counted: weakref.WeakKeyDictionary[Behaviour, CountedAdmission] = (
            weakref.WeakKeyDictionary()
        )

    def counted(self, behaviour: Behaviour) -> CountedAdmission | None:
        """The parts of `behaviour` if it is a counted path this layer made (`_wrap_counted`),
        for InboundInterceptor to run in its frame, one coroutine fewer per call."""
        return self._counted.get(behaviour)

    def update(self, policy: ServerPolicy) -> None:
        """New limits for calls arriving from now on (a policy swapped at runtime)."""
        self.admission.update(policy)
        self._streams.limit = policy.max_streams_in_flight
        self._pushback_s = policy.shed_pushback_ms / 1000.0
        self.rewrapped()  # admission may have turned on or off, the streams' limit too

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if handler is None or is_exempt(method, self._exempt):
            return handler
        if handler.unary_stream is not None:  # a stream holds its place while it lasts
            if not self._streams.limit:
                return handler
            stream = handler.unary_stream
            return self._wrapped.wrap(
                method,
                handler,
                lambda: handler._replace(unary_stream=self._wrap_stream(stream, method)),
            )
        if handler.unary_unary is None or not self.admission.active:
            return handler
        return self._wrapped.wrap(
            method,
            handler,
            lambda: handler._replace(unary_unary=self._wrap(handler.unary_unary, method)),
        )

    async def _admit(self, places: _Places, method: str, context: grpc.aio.ServicerContext) -> None:
        """Takes a stream's place (one a stalled stream gives up, if need be: it leaves soon,
        and until then the streams are one over their limit), or refuses with a pushback."""
        room = self._make_stream_room
        if places.limit and places.in_flight >= places.limit and not (room and room()):
            self._bus.emit(
                CallShed(self._service, method, places.in_flight, self._pushback_s, "limit")
            )
            err = ShedError(self._service, places.limit, self._pushback_s, places.kind)
            await abort_with(context, err)
        places.in_flight += 1

    def _wrap(self, inner: Behaviour, method: str) -> Behaviour:
        general = self._wrap_admitted(inner, method)
        fixed = self.admission.fixed_shares is not None
        return self._wrap_counted(inner, general) if fixed else general

    def _wrap_counted(self, inner: Behaviour, general: Behaviour) -> Behaviour:
        """Under a fixed limit (Admission.fixed_shares) a call is only counted in and out: no
        deadline to read, no place to time, no outcome to feed back. One its criticality has
        no place for goes the `general` way, which refuses it with its reason and event, and
        so does every call once a swap leaves no fixed limit (mounted as grpc.aio
        interceptors, a layer keeps its wrapper across swaps: it reads the shares per call)."""
        admission = self.admission
        settled = self._inbound_outside
        waiters = admission.waiters
        current, from_metadata = criticality.inbound_var.get, criticality.from_metadata

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            level = current()
            if level is None and not settled:
                level = from_metadata(context.invocation_metadata())
            shares = admission.fixed_shares
            if shares is None or admission.in_flight >= shares[level or criticality.DEFAULT]:
                return await general(request, context)
            admission.in_flight += 1
            try:
                return await inner(request, context)
            finally:
                admission.in_flight -= 1
                if waiters:
                    admission.hand_over()

        self._counted[behaviour] = CountedAdmission(inner, general, admission)
        return behaviour

    def _wrap_admitted(self, inner: Behaviour, method: str) -> Behaviour:
        admission = self.admission
        settled = self._inbound_outside

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            # What the inbound layer settled (the gateway assigns its own per RPC, so a public
            # client cannot claim the reserve), else what the caller sent.
            level = criticality.current()
            if level is None and not settled:
                level = criticality.from_metadata(context.invocation_metadata())
            if level is None:
                level = criticality.DEFAULT
            remaining_s = context.time_remaining()
            waited_s = None
            if admission.intake.enabled:
                sent_s = intake.sent_timeout_s(context.invocation_metadata())
                waited_s = intake.waited_s(sent_s, remaining_s)
            try:  # most calls get their place at once, without a coroutine of their own
                now = admission.admit_now(method, level, remaining_s, waited_s)
                place = (
                    now
                    if now is not None
                    else await admission.queue_for(method, level, remaining_s)
                )
            except ShedError as err:
                await abort_with(context, err)
            dropped: bool | None = None
            try:
                response = await inner(request, context)
                dropped = _dropped(context, "OK")
                return response
            except asyncio.CancelledError:
                dropped = _dropped(context, "CANCELLED")
                raise
            except Exception:
                dropped = _dropped(context, "UNKNOWN")
                raise
            finally:
                admission.release(place, dropped)

        return behaviour

    def _wrap_stream(self, inner: StreamBehaviour, method: str) -> StreamBehaviour:
        places = self._streams

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            await self._admit(places, method, context)
            try:
                async with aclosing(responses(inner, request, context)) as messages:
                    async for message in messages:
                        yield message
            finally:
                places.in_flight -= 1

        return behaviour
