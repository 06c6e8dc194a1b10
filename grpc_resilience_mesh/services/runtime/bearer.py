"""Bearer credentials in call metadata, the handler that refuses a call before decoding it, and
the layer that asks for one token (the gateway's API keys, the admin port's token and the
internal token all use them)."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import ServerLayer, note_shed, trailers_with_fate

BEARER = "bearer "


def bearer_token(metadata: Sequence[tuple[str, Any]] | None) -> bytes | None:
    for name, value in metadata or ():
        if name == "authorization":
            text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
            if text[: len(BEARER)].lower() == BEARER:
                return text[len(BEARER) :].strip().encode()
            return None
    return None


def rejection(
    code: grpc.StatusCode,
    details: str,
    trailers: Sequence[tuple[str, str]] = (),
    shed_by: str = "",
) -> grpc.RpcMethodHandler:
    """A unary handler that fails every call without deserializing its request; `shed_by`
    names the limit when the refusal is a shed (the call's fate, grpc_aio_resilience.fates)."""

    async def reject(request: bytes, context: grpc.aio.ServicerContext) -> None:
        if shed_by:
            note_shed(shed_by)
        time_left_s = context.time_remaining()
        await context.abort(code, details, trailers_with_fate(code, trailers, time_left_s))

    return grpc.unary_unary_rpc_method_handler(reject)


def bearer_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """The metadata a call carries: the bearer token, or nothing when there is none."""
    return (("authorization", f"Bearer {token}"),) if token else ()


class BearerTokenLayer(ServerLayer):
    """Refuses calls without `token` before any layer inside reads them (a missing and a wrong
    token get the same answer, compared in constant time); methods under `open_prefixes` pass."""

    wraps_per_method = True

    def __init__(self, token: str, open_prefixes: tuple[str, ...], details: str) -> None:
        self._token = token.encode()
        self._open = open_prefixes
        self._reject = rejection(grpc.StatusCode.UNAUTHENTICATED, details)

    def refuse(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        if handler_call_details.method.startswith(self._open):
            return None
        presented = bearer_token(handler_call_details.invocation_metadata)
        if presented is None or not hmac.compare_digest(presented, self._token):
            return self._reject
        return None

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        return handler
