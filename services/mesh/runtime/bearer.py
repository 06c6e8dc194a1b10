"""Bearer credentials in call metadata, and the handler that refuses a call before decoding it
(the gateway's API keys and the admin port's token both use them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio

from mesh.resilience import fates

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
    names the limit when the refusal is a shed (the call's fate, mesh.resilience.fates)."""

    async def reject(request: bytes, context: grpc.aio.ServicerContext) -> None:
        if shed_by:
            fates.note_shed(shed_by)
        time_left_s = context.time_remaining()
        await context.abort(code, details, fates.trailers_with_fate(code, trailers, time_left_s))

    return grpc.unary_unary_rpc_method_handler(reject)
