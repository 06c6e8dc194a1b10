"""What every server interceptor of the mesh shares: the layer they are written as, the chain
that runs them, the handler types, the per-method wrapper cache, the exempt methods (health,
reflection, FaultAdmin) and aborting with a ResilienceError.

Used by the resilience interceptors, the gateway's auth and rate limit, the decoding guard and
the tracing interceptor; it imports nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from mesh.resilience.errors import ResilienceError

EXEMPT_PREFIXES: tuple[str, ...] = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.",
    "/mesh.v1.FaultAdmin/",
)
"""Never shed nor faulted: probes and the admin surface must work when the service is sick."""

Behaviour = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
HandlerLookup = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


class ServerLayer(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A server interceptor whose work is choosing the handler a call is served with: `refuse`
    may answer the call before any layer inside it sees it; otherwise `wrap` gets the handler
    the layers inside chose. Mounted alone it is a grpc.aio interceptor; a ServerChain runs
    several as one."""

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


class ServerChain(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Server layers, outermost first, as one grpc.aio interceptor, with the outcome of nesting
    them: grpc.aio asks each interceptor of a server for every call's handler through a
    coroutine of its own (~0.75 us of loop CPU each, measured), and a chain once."""

    def __init__(self, layers: Sequence[ServerLayer]) -> None:
        self.layers = tuple(layers)
        self._inner_first = self.layers[::-1]
        self._refusing = tuple(
            i for i, layer in enumerate(self.layers) if type(layer).refuse is not ServerLayer.refuse
        )

    async def intercept_service(
        self, continuation: HandlerLookup, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        for i in self._refusing:  # outermost first; a refusal is wrapped by the layers outside
            refused = self.layers[i].refuse(handler_call_details)
            if refused is not None:
                handler: grpc.RpcMethodHandler | None = refused
                for layer in self.layers[i - 1 :: -1] if i else ():
                    handler = layer.wrap(handler, handler_call_details)
                return handler
        handler = await continuation(handler_call_details)
        for layer in self._inner_first:
            handler = layer.wrap(handler, handler_call_details)
        return handler


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


def is_exempt(method: str) -> bool:
    return method.startswith(EXEMPT_PREFIXES)


async def abort_with(context: grpc.aio.ServicerContext, err: ResilienceError) -> None:
    """Ends the call with the error's code, details and trailers (pushback included)."""
    await context.abort(err.code(), err.details(), tuple(err.trailing_metadata()))
