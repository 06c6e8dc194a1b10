"""What a server layer is written with: the layer itself, the handler types, the per-method
wrapper cache, the methods no layer touches (health and reflection unless told otherwise) and
aborting with a ResilienceError.

A layer is a grpc.aio ServerInterceptor a user mounts alone, or one of several a server chain
runs as one interceptor (`grpc_aio_resilience.server_interceptors` gives the library's three in
their order).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import grpc
import grpc.aio

from grpc_aio_resilience import fates
from grpc_aio_resilience.errors import ResilienceError

EXEMPT_PREFIXES: tuple[str, ...] = ("/grpc.health.v1.Health/", "/grpc.reflection.")
"""Method prefixes never shed nor guarded by default: probes must work when the service is
sick. A server with an admin surface of its own passes its prefix too (`exempt=`)."""

Behaviour = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
HandlerLookup = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


class ServerLayer(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A server interceptor whose work is choosing the handler a call is served with: `refuse`
    may answer the call before any layer inside it sees it; otherwise `wrap` gets the handler
    the layers inside chose. Mounted alone it is a grpc.aio interceptor; a server chain may
    call `refuse` and `wrap` of several itself, as one interceptor."""

    wraps_per_method: ClassVar[bool] = False
    """True when `wrap`'s answer depends on nothing but the method, the handler inside and the
    layer's settings, and `wrap` does nothing else per call: a chain then wraps once per method
    and reuses it until the layer says its settings changed (`rewrapped`). False (the default)
    for a layer that decides per call (reads the metadata, sets a context variable, takes a
    token) or whose answer changes with its state."""
    _forgetters: tuple[Callable[[], None], ...] = ()

    def when_rewrapped(self, forget: Callable[[], None]) -> None:
        """`forget` runs each time this layer's `wrap` may answer differently than before."""
        self._forgetters = (*self._forgetters, forget)

    def rewrapped(self) -> None:
        """Called by the layer when its settings change (a policy swapped at runtime): chains
        that wrapped a method once forget it and ask `wrap` again on the next call."""
        for forget in self._forgetters:
            forget()

    def refuse(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        """A handler refusing the call, before the layers inside (None: the call goes on)."""
        return None

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        """The handler this layer serves the call with, given the inner layers' choice."""
        raise NotImplementedError

    async def intercept_service(
        self, continuation: HandlerLookup, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        refused = self.refuse(handler_call_details)
        if refused is not None:
            return refused
        return self.wrap(await continuation(handler_call_details), handler_call_details)


class WrappedHandlers:
    """One wrapped handler per method, reused while the inner handler is the same object.

    grpc.aio asks every server interceptor for the handler on every call; wrapping it anew each
    time would allocate a closure and a handler tuple per call and per interceptor.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def wrap(
        self,
        method: str,
        inner: grpc.RpcMethodHandler,
        make: Callable[[], grpc.RpcMethodHandler],
    ) -> grpc.RpcMethodHandler:
        """The wrapper made for `inner` before, or `make()`'s, remembered for next time."""
        entry = self._entries.get(method)
        if entry is not None and entry[0] is inner:
            return entry[1]
        wrapped = make()
        self._entries[method] = (inner, wrapped)
        return wrapped


def code_set(context: grpc.aio.ServicerContext, default: grpc.StatusCode) -> grpc.StatusCode:
    """The code the handler set on `context` (abort, set_code), else `default`: how a server
    layer that wraps the handler learns how the call ended."""
    code = context.code()
    return code if isinstance(code, grpc.StatusCode) else default


def is_exempt(method: str, exempt: tuple[str, ...] = EXEMPT_PREFIXES) -> bool:
    """Whether `method` starts with one of the `exempt` prefixes (a layer lets it through)."""
    return method.startswith(exempt)


async def abort_with(context: grpc.aio.ServicerContext, err: ResilienceError) -> None:
    """Ends the call with the error's code, details and trailers (pushback included)."""
    trailers = fates.trailers_with_fate(
        err.code(), tuple(err.trailing_metadata()), context.time_remaining()
    )
    await context.abort(err.code(), err.details(), trailers)
