"""A blocking channel to a service's admin port whose every call carries the mesh's admin token
(grpc_resilience_mesh.services.runtime.admin_auth), for tests that drive FaultAdmin and PolicyAdmin
by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata


class _Bearer(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, token: str | None) -> None:
        self._metadata = admin_metadata(token)

    def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        metadata = (*(details.metadata or ()), *self._metadata)
        return continuation(details._replace(metadata=metadata), request)


def admin_channel(addr: str, token: str | None) -> grpc.Channel:
    """An insecure channel to `addr` sending `token` (None: nothing) with every unary call."""
    return grpc.intercept_channel(grpc.insecure_channel(addr), _Bearer(token))
