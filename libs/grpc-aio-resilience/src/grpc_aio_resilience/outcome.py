"""How a call ended, from what its inner layers raised: the status every layer that wraps a call
and records its outcome (an event, a span, a fate) reads in its `finally`.

Two forms, because the two sides see different things. A server's caller gets the code the
handler set on the context (abort, set_code), and UNKNOWN for anything the handler let escape,
whatever it carries: an AioRpcError from a downstream call is not this call's status. A client
sees the error itself: an AioRpcError (a ResilienceError is one) is the status. The server form
gives a grpc.StatusCode (spans and fates want its value); the client form gives its name, which
is what the call events carry.

Both are plain functions, called once per call from the layer's `finally`, with the exception
the layer kept (or None):

    failure: BaseException | None = None
    try:
        return await inner(request, context)
    except BaseException as err:
        failure = err
        raise
    finally:
        code = served_code(failure, context)
        failure = None  # the exception's traceback holds this frame: no cycle for the collector
"""

from __future__ import annotations

import asyncio

import grpc
import grpc.aio

_OK = grpc.StatusCode.OK
_CANCELLED = grpc.StatusCode.CANCELLED
_UNKNOWN = grpc.StatusCode.UNKNOWN


def served_code(
    failure: BaseException | None, context: grpc.aio.ServicerContext
) -> grpc.StatusCode:
    """The status a served call ended with: the code the handler set on `context`, else OK when
    it returned, UNKNOWN when it raised; CANCELLED when it was cancelled."""
    if failure is None:
        code = context.code()
        return code if isinstance(code, grpc.StatusCode) else _OK
    if isinstance(failure, Exception):
        code = context.code()
        return code if isinstance(code, grpc.StatusCode) else _UNKNOWN
    return _CANCELLED if isinstance(failure, asyncio.CancelledError) else _UNKNOWN


def call_outcome(failure: BaseException | None) -> str:
    """The status name a client call ended with: OK when it returned, the error's code when it
    failed with one (AioRpcError; a ResilienceError is one), CANCELLED when it was cancelled,
    else UNKNOWN."""
    if failure is None:
        return "OK"
    if isinstance(failure, grpc.aio.AioRpcError):
        name: str = failure.code().name
        return name
    return "CANCELLED" if isinstance(failure, asyncio.CancelledError) else "UNKNOWN"
