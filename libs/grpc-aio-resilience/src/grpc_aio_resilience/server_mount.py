"""Server layers run as one chain, mounted two ways: `ServerChain`, one grpc.aio interceptor,
and `protect_server`, which serves the same chain without grpc.aio's interceptor API.

    server = protect_server(grpc.aio.server(), server_interceptors("kv", policy, bus))
    kv_pb2_grpc.add_KeyValueServicer_to_server(store, server)

Why a second mount: grpc.aio runs every interceptor of a server through coroutines of its own
on every call (`intercept_service` and its continuation), before the handler runs. Mounted by
`protect_server`, the chain is the server's one generic handler: grpc.aio asks it for a call's
handler with a plain function call, and it answers with the handler it wrapped for that method
before (or with a refusal). The layers, their order and what a call meets are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import grpc
import grpc.aio

from grpc_aio_resilience.server_layer import HandlerLookup, ServerLayer

Handler: TypeAlias = grpc.RpcMethodHandler


class _PerMethod:
    """Consecutive layers whose `wrap` depends on nothing but the method and the handler inside
    (`ServerLayer.wraps_per_method`), wrapped once per method: one lookup per call for all of
    them, while the handler they wrap is the same object."""

    __slots__ = ("_entries", "_inner_first")

    def __init__(self, layers: Sequence[ServerLayer]) -> None:
        self._inner_first = tuple(layers)[::-1]
        self._entries: dict[str, tuple[Handler, Handler | None]] = {}
        for layer in self._inner_first:
            layer.when_rewrapped(self._entries.clear)

    def wrap(self, handler: Handler | None, details: grpc.HandlerCallDetails) -> Handler | None:
        if handler is None:  # not remembered: a caller may send any number of unknown names
            return self._through(None, details)
        method = details.method
        entry = self._entries.get(method)
        if entry is not None and entry[0] is handler:
            return entry[1]
        wrapped = self._through(handler, details)
        self._entries[method] = (handler, wrapped)
        return wrapped

    def _through(self, handler: Handler | None, details: grpc.HandlerCallDetails) -> Handler | None:
        for layer in self._inner_first:
            handler = layer.wrap(handler, details)
        return handler


def _steps(layers: Sequence[ServerLayer]) -> tuple[ServerLayer | _PerMethod, ...]:
    """The layers innermost first, each run of per-method layers as one `_PerMethod`."""
    steps: list[ServerLayer | _PerMethod] = []
    run: list[ServerLayer] = []
    for layer in reversed(layers):
        if layer.wraps_per_method:
            run.insert(0, layer)
            continue
        if run:
            steps.append(_PerMethod(run))
            run = []
        steps.append(layer)
    if run:
        steps.append(_PerMethod(run))
    return tuple(steps)


class LayerChain:
    """Server layers, outermost first, with the outcome of nesting them: a layer's refusal
    (decided per call: it may read the call's metadata) is wrapped by the layers outside it
    only; otherwise the handler found is wrapped by every layer, innermost first."""

    __slots__ = ("_refusing", "_steps", "layers", "refuses", "wrap")

    def __init__(self, layers: Sequence[ServerLayer]) -> None:
        self.layers = tuple(layers)
        self._refusing = tuple(
            i for i, layer in enumerate(self.layers) if type(layer).refuse is not ServerLayer.refuse
        )
        self.refuses = bool(self._refusing)
        """Whether any layer may refuse a call (else `refusal` is None for every call)."""
        self._steps = _steps(self.layers)
        self.wrap: Callable[[Handler | None, grpc.HandlerCallDetails], Handler | None] = (
            self._steps[0].wrap if len(self._steps) == 1 else self._wrap_steps
        )
        """The handler the call is served with, given the one the server found for it: with
        one step (every layer wraps per method, say), that step's own `wrap`."""

    def refusal(self, details: grpc.HandlerCallDetails) -> Handler | None:
        """The handler refusing the call, wrapped by the layers outside the one refusing it;
        None: no layer refuses it."""
        for i in self._refusing:  # outermost first
            refused = self.layers[i].refuse(details)
            if refused is not None:
                handler: Handler | None = refused
                for layer in self.layers[i - 1 :: -1] if i else ():
                    handler = layer.wrap(handler, details)
                return handler
        return None

    def _wrap_steps(
        self, handler: Handler | None, details: grpc.HandlerCallDetails
    ) -> Handler | None:
        for step in self._steps:
            handler = step.wrap(handler, details)
        return handler


class ServerChain(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Server layers, outermost first, as one grpc.aio interceptor, with the outcome of nesting
    them: grpc.aio asks each interceptor of a server for every call's handler through a
    coroutine of its own, and a chain once. `protect_server` mounts the same chain without
    grpc.aio's interceptor API."""

    def __init__(self, layers: Sequence[ServerLayer]) -> None:
        self._chain = LayerChain(layers)
        self.layers = self._chain.layers

    async def intercept_service(
        self, continuation: HandlerLookup, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        refused = self._chain.refusal(handler_call_details)
        if refused is not None:
            return refused
        return self._chain.wrap(await continuation(handler_call_details), handler_call_details)


class ChainedHandlers(grpc.GenericRpcHandler):  # type: ignore[misc]
    """The services' own handlers behind a layer chain, as one generic handler: what
    `protect_server` registers on the server in their place."""

    def __init__(self, layers: Sequence[ServerLayer]) -> None:
        self._chain = LayerChain(layers)
        self._methods: dict[str, Handler] = {}
        self._generic: list[grpc.GenericRpcHandler] = []

    def add_generic(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        self._generic.extend(handlers)

    def add_methods(self, methods: Mapping[str, Handler]) -> None:
        """Handlers by full method name; they come before the generic handlers, as grpc's
        registered methods do."""
        self._methods.update(methods)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Handler | None:
        chain = self._chain
        refused = chain.refusal(handler_call_details) if chain.refuses else None
        if refused is not None:
            return refused
        handler = self._methods.get(handler_call_details.method)
        if handler is None:
            for generic in self._generic:
                handler = generic.service(handler_call_details)
                if handler is not None:
                    break
        return chain.wrap(handler, handler_call_details)


class ProtectedServer(grpc.aio.Server):  # type: ignore[misc]
    """A grpc.aio server whose services are registered behind a layer chain: what
    `protect_server` returns. Register services on it as on any grpc.aio server (the
    generated `add_...Servicer_to_server`, health, reflection); ports, start and stop are the
    server's own."""

    def __init__(self, server: grpc.aio.Server, layers: Sequence[ServerLayer]) -> None:
        self.server = server
        self.handlers = ChainedHandlers(layers)
        server.add_generic_rpc_handlers((self.handlers,))

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Sequence[Any]) -> None:
        self.handlers.add_generic(generic_rpc_handlers)

    def add_registered_method_handlers(
        self, service_name: str, method_handlers: Mapping[str, Handler]
    ) -> None:
        # Not the server's: grpc serves its registered methods before any generic handler.
        self.handlers.add_methods(
            {f"/{service_name}/{name}": handler for name, handler in method_handlers.items()}
        )

    def add_insecure_port(self, address: str) -> int:
        port: int = self.server.add_insecure_port(address)
        return port

    def add_secure_port(self, address: str, server_credentials: grpc.ServerCredentials) -> int:
        port: int = self.server.add_secure_port(address, server_credentials)
        return port

    async def start(self) -> None:
        await self.server.start()

    async def stop(self, grace: float | None) -> None:
        await self.server.stop(grace)

    async def wait_for_termination(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 grpc.aio.Server's signature
        terminated: bool = await self.server.wait_for_termination(timeout)
        return terminated


def protect_server(server: grpc.aio.Server, layers: Sequence[ServerLayer]) -> ProtectedServer:
    """`server` with `layers` (outermost first: `server_interceptors(...)` for the library's
    three) in front of every service registered on the server this returns, run as one chain
    without grpc.aio's interceptor API. Create `server` without the layers as interceptors; a
    service registered on `server` itself is served without them."""
    return ProtectedServer(server, layers)
