"""What every server interceptor of the mesh shares: the handler types, the per-method wrapper
cache, the exempt methods (health, reflection, FaultAdmin) and aborting with a ResilienceError.

Used by the resilience interceptors, the gateway's auth and rate limit, the decoding guard and
the tracing interceptor; it imports nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
