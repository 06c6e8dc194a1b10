"""Server side of server-streaming methods: what the unary server interceptors do, for streams.

grpc.aio hands a server interceptor one handler per method; for a server-streaming method its
behaviour is `unary_stream`, an async generator (or a coroutine that writes with
`context.write`). The wrappers are async generators over `responses()`, which accepts either
style, so the inbound interceptor (deadline capture, call counting) and a server's own layers
(fault injection, tracing, a decoding guard) treat a stream as they treat a unary call.

Each wrapper closes the generator it iterates (`contextlib.aclosing`): closing the outermost
(grpc_aio_resilience.stream_guard does, in the call's own task) runs every layer's cleanup at once
and in its own context, whereas a generator merely abandoned at a `yield` (a write cancelled
by grpc.aio) is finalised later by the garbage collector, in another context.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import criticality
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.deadline import reset_inbound_deadline, set_inbound_deadline
from grpc_aio_resilience.events import EventBus, ServerCallFinished, ServerCallStarted

StreamBehaviour = Callable[[Any, grpc.aio.ServicerContext], Any]
"""An async generator function, or a coroutine function writing with context.write."""


async def responses(
    inner: StreamBehaviour, request: Any, context: grpc.aio.ServicerContext
) -> AsyncGenerator[Any, None]:
    """The messages of `inner`, whichever style it is written in."""
    result = inner(request, context)
    if inspect.isasyncgen(result):
        async with contextlib.aclosing(result):
            async for message in result:
                yield message
    else:
        await result


def status_after(context: grpc.aio.ServicerContext, default: grpc.StatusCode) -> grpc.StatusCode:
    code = context.code()
    return code if isinstance(code, grpc.StatusCode) else default


@dataclass(slots=True)
class StreamStatus:
    """How a stream handler ended (UNKNOWN until it has) and how many messages it sent."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN
    sent: int = 0


async def tracked(
    inner: StreamBehaviour,
    request: Any,
    context: grpc.aio.ServicerContext,
    status: StreamStatus,
) -> AsyncGenerator[Any, None]:
    """`responses()`, noting in `status` what was sent and how the stream ended."""
    try:
        async with contextlib.aclosing(responses(inner, request, context)) as messages:
            async for message in messages:
                yield message
                status.sent += 1
        status.code = status_after(context, grpc.StatusCode.OK)
    except (asyncio.CancelledError, GeneratorExit):
        # CANCELLED, unless the server ended the stream and said why (stream_guard)
        status.code = status_after(context, grpc.StatusCode.CANCELLED)
        raise
    except Exception:
        status.code = status_after(context, grpc.StatusCode.UNKNOWN)
        raise


def inbound_stream(
    inner: StreamBehaviour,
    service: str,
    method: str,
    bus: EventBus,
    assign: Callable[[str], Criticality] | None = None,
) -> StreamBehaviour:
    """Sets the inbound deadline and criticality for the stream's outbound calls and counts the
    call, as grpc_aio_resilience.inbound does for unary calls."""
    emit = bus.emit

    async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        started_s = time.monotonic()
        remaining_s = context.time_remaining()
        token = set_inbound_deadline(None if remaining_s is None else started_s + remaining_s)
        level = criticality.set_current(
            assign(method)
            if assign is not None
            else criticality.from_metadata(context.invocation_metadata())
        )
        emit(ServerCallStarted(service, method))
        status = StreamStatus()
        try:
            async with contextlib.aclosing(tracked(inner, request, context, status)) as messages:
                async for message in messages:
                    yield message
        finally:
            # A generator finalised late runs in another context: nothing of ours to undo there.
            with contextlib.suppress(ValueError):
                reset_inbound_deadline(token)
                criticality.reset_current(level)
            emit(
                ServerCallFinished(
                    service, method, status.code.name, time.monotonic() - started_s, remaining_s
                )
            )

    return behaviour
