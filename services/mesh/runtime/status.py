"""Relaying a dependency's failure to our caller without multiplying retries across hops.

A failure we already retried is sent on with `grpc-retry-pushback-ms: -1` so the caller does
not retry it again (gRFC A6: a negative pushback means "do not retry"); 3 attempts at each of
two hops would otherwise be 9 calls to the dependency. A pushback the dependency (or our own
open breaker) sent is passed on as it is.
"""

from __future__ import annotations

from typing import NoReturn

import grpc

PUSHBACK_KEY = "grpc-retry-pushback-ms"


def pushback_of(err: grpc.aio.AioRpcError) -> str | None:
    for key, value in err.trailing_metadata() or ():
        if key == PUSHBACK_KEY:
            return str(value)
    return None


async def relay_failure(
    context: grpc.aio.ServicerContext, err: grpc.aio.AioRpcError, dependency: str
) -> NoReturn:
    """Abort the current RPC with the dependency's status code, details and pushback."""
    pushback = pushback_of(err)
    context.set_trailing_metadata(((PUSHBACK_KEY, pushback if pushback is not None else "-1"),))
    await context.abort(err.code(), f"{dependency}: {err.details() or err.code().name}")
    raise AssertionError("unreachable: abort raises")
