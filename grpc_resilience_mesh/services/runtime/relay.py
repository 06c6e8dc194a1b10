"""Relaying a dependency's failure to our caller without multiplying retries across hops.

- A dependency's DEADLINE_EXCEEDED while our own caller still has time (more than `spent_s`,
  the edge's `min_attempt_s`: with less no attempt starts) is relayed as UNAVAILABLE: it was
  our dependency's budget that ran out, not the caller's deadline, and the caller may
  reasonably try again. With less, the caller's own deadline ran out on the way: it is
  relayed as DEADLINE_EXCEEDED, which the caller's breaker, throttle and retry budget leave
  out (grpc_aio_resilience's callers_deadline) instead of reading an outage.
- A refusal marked as caused by the caller's deadline (CALLER_DEADLINE_KEY) keeps its mark.
- A failure this hop already retried is sent on with `grpc-retry-pushback-ms: -1` so the
  caller does not retry it again (gRFC A6: a negative pushback means "do not retry"); 3
  attempts at each of two hops would otherwise be 9 calls to the dependency.
- A pushback the dependency (or our own open breaker) sent is passed on as it is.
- At the public edge (the gateway passes `busy_pushback_ms`, its `shed_pushback_ms`), our own
  bulkhead's refusal (RESOURCE_EXHAUSTED before any attempt left this hop, so nothing was
  retried) is a "busy, come back" like load shedding: a positive pushback the client can act
  on, not -1. Inner hops keep -1 there, so the gateway falls back instead of waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import grpc

from grpc_aio_resilience import (
    CALLER_DEADLINE_KEY,
    PUSHBACK_KEY,
    RETRYABLE_CODES,
    ResilienceError,
    note_cause,
)
from grpc_resilience_mesh.services.runtime.refusal import abort


def pushback_of(err: grpc.aio.AioRpcError, key: str = PUSHBACK_KEY) -> str | None:
    for name, value in err.trailing_metadata() or ():
        if name == key:
            return str(value)
    return None


def relayed_code(
    err: grpc.aio.AioRpcError, caller_time_left_s: float | None, spent_s: float = 0.0
) -> grpc.StatusCode:
    code = err.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and (
        caller_time_left_s is None or caller_time_left_s > spent_s
    ):
        return grpc.StatusCode.UNAVAILABLE
    return code


async def relay_failure(
    context: grpc.aio.ServicerContext,
    err: grpc.aio.AioRpcError,
    dependency: str,
    retried_here: bool,
    busy_pushback_ms: int | None = None,
    trailers: Sequence[tuple[str, str]] = (),
    spent_s: float = 0.0,
) -> NoReturn:
    """Abort the current RPC with the dependency's failure, mapped as the module says, with
    `trailers` added to the trailing metadata."""
    note_cause(dependency, err)
    code = relayed_code(err, context.time_remaining(), spent_s)
    pushback = pushback_of(err)
    refused_here = isinstance(err, ResilienceError) and err.attempts_sent == 0
    busy = refused_here and code == grpc.StatusCode.RESOURCE_EXHAUSTED
    if pushback is None and busy and busy_pushback_ms is not None:
        pushback = str(max(1, busy_pushback_ms))
    elif pushback is None and retried_here and code in RETRYABLE_CODES:
        pushback = "-1"
    if pushback is not None:
        trailers = (*trailers, (PUSHBACK_KEY, pushback))
    marked = pushback_of(err, CALLER_DEADLINE_KEY)
    if marked is not None:
        trailers = (*trailers, (CALLER_DEADLINE_KEY, marked))
    if trailers:
        context.set_trailing_metadata(tuple(trailers))
    await abort(context, code, f"{dependency}: {err.details() or err.code().name}")
