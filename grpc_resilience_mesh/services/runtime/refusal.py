"""The one way a servicer refuses a call: `abort` with a gRPC code, typed NoReturn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import grpc
import grpc.aio

from grpc_aio_resilience import trailers_with_fate


async def abort(
    context: grpc.aio.ServicerContext,
    code: grpc.StatusCode,
    details: str,
    trailers: Sequence[tuple[str, str]] = (),
) -> NoReturn:
    """End the call with `code`: the one way a servicer refuses a call. (grpc.aio's
    `context.abort` raises, but is not typed NoReturn; this says so to the type checker.)"""
    # Trailers set on the context before (a relayed pushback) go with the abort's own: an
    # abort with trailing metadata replaces what was set, and the fate makes it non-empty.
    trailers = (*tuple(context.trailing_metadata() or ()), *trailers)
    time_left_s = context.time_remaining()
    await context.abort(code, details, trailers_with_fate(code, trailers, time_left_s))
    raise AssertionError("unreachable: context.abort raises")
