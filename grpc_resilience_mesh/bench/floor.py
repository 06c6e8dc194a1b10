"""The floor of `mesh bench overhead`: a client and a server interceptor that do nothing, so
what the grpc.aio interceptor API costs by itself is measured apart from any pipeline."""

from __future__ import annotations

from typing import Any

import grpc.aio


class NoopClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Passes the call on untouched: what the grpc.aio client interceptor API costs by itself."""

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(details, request)


class NoopServerInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Returns the handler untouched: what the grpc.aio server interceptor API costs by itself."""

    async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        return await continuation(handler_call_details)
