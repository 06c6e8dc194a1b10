"""Server side, outermost for server-streaming methods: bounded writes and a default deadline.
A grpc.aio ServerInterceptor: mount it first (outermost), or take `server_interceptors`.

grpc.aio writes an async-generator handler's messages itself, and a write waits until HTTP/2
flow control lets the message out: a client that never opens its window (never sends a
WINDOW_UPDATE, or never reads) kept its stream, and every slot the layers inside hold for it,
forever. This layer writes the messages itself (the handler becomes a coroutine using
`context.write`), so it can

- end a stream whose reader accepts no message for `stream_write_timeout_s`,
- end a stream the client gave no deadline after `stream_deadline_s`,
- close the layers' generators in the call's own task however the stream ends, so their
  cleanup (slots, counts, spans, the contextvars they reset) runs at once and in the context it
  belongs to, instead of when the garbage collector finalises a generator abandoned at a
  `yield` by a cancelled write.

At the streams' limit (`max_streams_in_flight`, SheddingInterceptor) a new stream takes the place
of the one whose reader has taken no message for longest (`end_longest_stalled`), if for at
least `YIELDS_AFTER_S`: a client that keeps opening streams it never reads holds no place for
long, whatever its key or connection, and a reader that keeps taking messages is never ended.

All three end the stream with DEADLINE_EXCEEDED. grpc.aio cannot cancel a server call (no
`cancel()` on the context, and the call's deadline is the client's), so a stalled reader's
stream is ended on our side: its handler stops, its slots are given back, its status is queued
behind the message the reader never took, and grpc core keeps that HTTP/2 stream (a few KB)
until the client resets it or its connection closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.events import EventBus, StreamExpired
from grpc_aio_resilience.server_layer import (
    EXEMPT_PREFIXES,
    ServerLayer,
    WrappedHandlers,
    is_exempt,
)
from grpc_aio_resilience.streaming_server import StreamBehaviour, responses

STATUS_WAIT_S = 1.0
"""How long an expired stream waits for its status to be accepted before it stops waiting."""
YIELDS_AFTER_S = 0.5
"""A stream whose reader has taken no message for this long gives its place to a new stream when
streams are at their limit (a reader that keeps up takes each message within milliseconds)."""


class _Expiry:
    """Cancels the stream's task at a deadline, saying why first (the layers inside read the
    code off the context as they close)."""

    __slots__ = ("_context", "_handle", "_loop", "_task", "reason")

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._handle: asyncio.TimerHandle | None = None
        self.reason = ""

    def arm(self, when: float, reason: str) -> None:
        self.disarm()
        if when != float("inf"):
            self._handle = self._loop.call_at(when, self._fire, reason)

    def disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def end(self, reason: str) -> None:
        """Ends the stream now, for `reason`."""
        self.disarm()
        self._fire(reason)

    def _fire(self, reason: str) -> None:
        self._handle = None
        self.reason = reason
        self._context.set_code(grpc.StatusCode.DEADLINE_EXCEEDED)
        if self._task is not None:
            self._task.cancel()

    def absorb(self) -> None:
        """Our own cancellation was caught: the task goes on (to send the status)."""
        if self._task is not None:
            self._task.uncancel()


class StreamGuard(ServerLayer):
    """Writes each stream's messages with a time limit, and gives a stream without a client
    deadline the policy's (`ServerPolicy.stream_write_timeout_s`, `stream_deadline_s`).

    Outermost: the layers inside close in the call's own task only when this one closes them.
    Unary calls and methods starting with an `exempt` prefix pass through unwrapped."""

    wraps_per_method = True

    def __init__(
        self,
        service: str,
        policy: ServerPolicy | None = None,
        bus: EventBus | None = None,
        *,
        exempt: Iterable[str] = EXEMPT_PREFIXES,
    ) -> None:
        policy = ServerPolicy() if policy is None else policy
        self._service = service
        self._bus = EventBus() if bus is None else bus
        self._exempt = tuple(exempt)
        self.update(policy)
        self._wrapped = WrappedHandlers()
        self._writing: dict[_Expiry, float] = {}
        """Streams waiting for their reader to take a message, and since when, oldest first."""

    def update(self, policy: ServerPolicy) -> None:
        """New limits for streams starting from now on (a policy swapped at runtime)."""
        self.write_timeout_s = policy.stream_write_timeout_s
        self.deadline_s = policy.stream_deadline_s

    def end_longest_stalled(self) -> bool:
        """Ends the stream whose reader has taken no message for longest, if for at least
        `YIELDS_AFTER_S`; True when one was ended (its place is the caller's to give)."""
        for expiry, since in self._writing.items():
            stalled_s = asyncio.get_running_loop().time() - since
            if stalled_s < YIELDS_AFTER_S:
                return False
            del self._writing[expiry]
            expiry.end(f"no message accepted in {stalled_s:.1f}s, and a new stream took its place")
            return True
        return False

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if handler is None or handler.unary_stream is None or is_exempt(method, self._exempt):
            return handler
        stream = handler.unary_stream
        return self._wrapped.wrap(
            method, handler, lambda: handler._replace(unary_stream=self._guard(stream, method))
        )

    def _guard(self, inner: StreamBehaviour, method: str) -> StreamBehaviour:
        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> None:
            expiry = _Expiry(context)
            messages = responses(inner, request, context)
            try:
                await self._write_all(messages, context, expiry)
            except asyncio.CancelledError:
                if not expiry.reason:
                    raise  # the client went away, or the server is stopping
                expiry.absorb()
            except grpc.aio.InternalError:  # a write failed: the call is over in grpc core
                raise asyncio.CancelledError from None  # grpc.aio ends such a call quietly
            finally:
                expiry.disarm()
                self._writing.pop(expiry, None)
                await messages.aclose()  # in this task: every layer's cleanup runs now
            if expiry.reason:
                await self._expire(context, method, expiry)

        return behaviour

    async def _write_all(
        self, messages: Any, context: grpc.aio.ServicerContext, expiry: _Expiry
    ) -> None:
        loop = asyncio.get_running_loop()
        total = float("inf")
        if context.time_remaining() is None and self.deadline_s:
            total = loop.time() + self.deadline_s
        late = f"no client deadline: ended after {self.deadline_s:g}s"
        write_s = self.write_timeout_s or float("inf")
        stalled = f"no message accepted in {write_s:g}s"
        expiry.arm(total, late)
        async for message in messages:
            bounded = loop.time() + write_s < total
            if bounded:
                expiry.arm(loop.time() + write_s, stalled)
            self._writing[expiry] = loop.time()
            await context.write(message)
            self._writing.pop(expiry, None)
            if bounded:
                expiry.arm(total, late)

    async def _expire(
        self, context: grpc.aio.ServicerContext, method: str, expiry: _Expiry
    ) -> None:
        """Ends an expired stream with DEADLINE_EXCEEDED, waiting a little for the status to
        be accepted: a reader that took no message will not take the status behind it."""
        reason, expiry.reason = expiry.reason, ""
        self._bus.emit(StreamExpired(self._service, method, reason))
        expiry.arm(asyncio.get_running_loop().time() + STATUS_WAIT_S, "status not accepted")
        try:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, f"stream {reason}")
        except grpc.aio.InternalError:  # the status could not be queued: nothing more to do
            raise asyncio.CancelledError from None
        finally:
            expiry.disarm()
