"""What a server layer of the mesh is written with: the layer itself, the handler types, the
per-method wrapper cache, the exempt methods (health, reflection, FaultAdmin) and aborting with
a ResilienceError. The order and the chain that runs the layers are `mesh.runtime.server_chain`.

Used by the resilience layers, fault injection, the gateway's auth and rate limit, the decoding
guard, the fate layer and the tracing layer; it imports nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from mesh.resilience import fates
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
    the layers inside chose. Mounted alone it is a grpc.aio interceptor; a ServerChain
    (`mesh.runtime.server_chain`) runs several as one."""

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


def is_exempt(method: str) -> bool:
    return method.startswith(EXEMPT_PREFIXES)


async def abort_with(context: grpc.aio.ServicerContext, err: ResilienceError) -> None:
    """Ends the call with the error's code, details and trailers (pushback included)."""
    trailers = fates.trailers_with_fate(
        err.code(), tuple(err.trailing_metadata()), context.time_remaining()
    )
    await context.abort(err.code(), err.details(), trailers)
