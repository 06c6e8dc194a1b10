"""Server-streaming calls through their edge's pipeline, under gRFC A6's commit rule.

A stream is one logical call of its edge: the same bulkhead (the slot is held for the stream's
whole life), total deadline, retry (backoff, jitter, budget, pushback), breaker and attempt
spans as a unary call. An attempt is a whole stream. Until its first message arrives it is
retried like a unary call; the per-attempt timeout bounds only that wait. Once the first
message has arrived the stream is committed: the caller already holds part of the answer, so a
failure after it is never retried. It ends the stream, after the messages already delivered,
as a StreamBrokenError (retry passes our own errors on; its cause is the wire's error, so the
breaker counts it as a health failure).

    caller --read()--> ResilientStreamCall <--queue of 1-- pump task: pipeline.run(ctx)
                                                 bulkhead .. retry .. breaker .. StreamWire

The queue holds one message, so a slow reader slows the stream down instead of buffering it.
A reader that calls cancel(), or whose read is cancelled (its own caller went away), cancels
the pump and with it the attempt in flight: the dependency sees the cancellation.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
import grpc.aio

from grpc_aio_resilience import classify
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Continuation
from grpc_aio_resilience.deadline import inbound_deadline
from grpc_aio_resilience.errors import StreamBrokenError
from grpc_aio_resilience.events import EventBus, RetrySkipped, StreamCommitted, StreamEnded
from grpc_aio_resilience.pipeline import Pipeline

PREVIOUS_ATTEMPTS_KEY = "grpc-previous-rpc-attempts"
"""gRFC A6: sent on every retry, the number of attempts made before it."""

EOF = grpc.aio.EOF


@dataclass(slots=True)
class StreamContext(CallContext):
    """A CallContext that also carries the stream's hand-over queue and what it delivered."""

    bus: EventBus | None = None
    sink: asyncio.Queue[Any] = field(default_factory=lambda: asyncio.Queue(maxsize=1))
    messages: int = 0
    """Messages handed to the caller so far (all from the committed attempt)."""
    committed_attempt: int = 0
    """The attempt whose first message arrived; 0 while uncommitted."""
    wire_call: Any = None
    """The committed attempt's call: its metadata and trailers."""


async def _within(clock: Clock, aw: Awaitable[Any], timeout_s: float) -> tuple[bool, Any]:
    """(True, result) if `aw` finishes within `timeout_s` on `clock`, else (False, None) with
    `aw` cancelled. `aw` wins a tie: a message that is already there is never thrown away."""
    work = asyncio.ensure_future(aw)
    try:
        await asyncio.sleep(0)  # what is already there needs no timer
        if work.done() or timeout_s == math.inf:
            return True, await work
    except asyncio.CancelledError:
        work.cancel()
        raise
    timer = asyncio.ensure_future(clock.sleep(max(timeout_s, 0.0)))
    try:
        await asyncio.wait((work, timer), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()
        raise
    finally:
        timer.cancel()
    if work.done():
        return True, work.result()
    work.cancel()
    return False, None


def _deadline_error(details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        grpc.StatusCode.DEADLINE_EXCEEDED, grpc.aio.Metadata(), grpc.aio.Metadata(), details
    )


class StreamWire:
    """The innermost step for streams: one attempt, held until its stream ends."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def __call__(self, ctx: CallContext) -> Any:
        if not isinstance(ctx, StreamContext):
            raise TypeError("StreamWire runs StreamContext calls only")
        call = await self._start(ctx)
        try:
            first = await self._first_message(ctx, call)
            return await self._deliver(ctx, call, first)
        except asyncio.CancelledError:
            call.cancel()  # our caller went away: the dependency must stop too
            raise

    async def _start(self, ctx: StreamContext) -> Any:
        details = ctx.details
        metadata = ctx.attempt_metadata if ctx.attempt_metadata is not None else grpc.aio.Metadata()
        if ctx.attempt > 1:
            metadata.set_all(PREVIOUS_ATTEMPTS_KEY, [str(ctx.attempt - 1)])
        # The stream's own gRPC deadline is the call's; attempt_s bounds the first message.
        left_s = ctx.deadline_s - self._clock.now()
        timeout_s = None if ctx.deadline_s == math.inf else max(left_s, 0.0)
        attempt = grpc.aio.ClientCallDetails(
            details.method, timeout_s, metadata, details.credentials, details.wait_for_ready
        )
        ctx.sent += 1
        return await ctx.continuation(attempt, ctx.request)

    async def _first_message(self, ctx: StreamContext, call: Any) -> Any:
        try:
            arrived, first = await _within(self._clock, call.read(), ctx.attempt_timeout_s)
        except grpc.aio.AioRpcError as err:
            if err.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
                ctx.own_timeout = False  # the wire's deadline is the call's, not the attempt's
            raise
        if not arrived:
            call.cancel()
            raise _deadline_error(f"no first message within {ctx.attempt_timeout_s:.3f}s")
        return first

    async def _deliver(self, ctx: StreamContext, call: Any, first: Any) -> Any:
        """Committed: hand every message over; a failure from here on is never retried."""
        ctx.committed_attempt = ctx.attempt
        ctx.own_timeout = False  # from here only the call's deadline bounds the stream
        ctx.wire_call = call
        bus = ctx.bus
        if bus is not None:
            bus.emit(StreamCommitted(ctx.dependency, ctx.method, ctx.attempt))
        message = first
        try:
            while message is not EOF:
                await self._hand_over(ctx, call, message)
                message = await call.read()
        except grpc.aio.AioRpcError as err:
            self._ended(ctx, "partial", err.code().name)
            if not classify.is_transient(
                err.code(), classify.pushback_s(err.trailing_metadata()), False
            ):
                raise  # not retryable anyway: the breaker judges the wire's own error
            if bus is not None:
                bus.emit(
                    RetrySkipped(
                        ctx.dependency, ctx.method, ctx.attempt, "committed", err.code().name
                    )
                )
            raise StreamBrokenError(err, ctx.messages) from err
        outcome = "committed" if ctx.attempt == 1 else "retried-before-first-message"
        self._ended(ctx, outcome, "OK")
        return call

    async def _hand_over(self, ctx: StreamContext, call: Any, message: Any) -> None:
        """Waits for the reader to take the previous message, but not past the deadline: a
        reader that neither reads nor cancels must not hold the bulkhead slot for ever."""
        if ctx.sink.full():
            left_s = ctx.deadline_s - self._clock.now()
            try:
                await asyncio.wait_for(
                    ctx.sink.put(message), None if left_s == math.inf else left_s
                )
            except TimeoutError:
                call.cancel()
                raise _deadline_error(
                    f"the reader took no message before the deadline ({ctx.messages} taken)"
                ) from None
        else:
            ctx.sink.put_nowait(message)
        ctx.messages += 1

    @staticmethod
    def _ended(ctx: StreamContext, outcome: str, code: str) -> None:
        if ctx.bus is not None:
            ctx.bus.emit(
                StreamEnded(ctx.dependency, ctx.method, ctx.attempt, outcome, ctx.messages, code)
            )


class ResilientStreamCall(grpc.aio.UnaryStreamCall):  # type: ignore[misc]
    """What the caller of a resilient stream holds: read()/async for, status, cancel()."""

    def __init__(self, pipeline: Pipeline, ctx: StreamContext, clock: Clock) -> None:
        self._ctx = ctx
        self._clock = clock
        self._error: BaseException | None = None
        self._task = asyncio.ensure_future(self._pump(pipeline))

    async def _pump(self, pipeline: Pipeline) -> None:
        try:
            await pipeline.run(self._ctx)
        except grpc.aio.AioRpcError as err:
            self._error = err

    @property
    def messages(self) -> int:
        """Messages delivered so far: with an error, the part of the answer that arrived."""
        return self._ctx.messages

    @property
    def partial(self) -> bool:
        """True once the stream failed after part of its answer was delivered."""
        return self._error is not None and self._ctx.committed_attempt > 0

    async def read(self) -> Any:
        sink = self._ctx.sink
        while True:
            if not sink.empty():
                return sink.get_nowait()
            if self._task.done():
                return self._finish()
            getter = asyncio.ensure_future(sink.get())
            try:
                await asyncio.wait((getter, self._task), return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                getter.cancel()
                self.cancel()  # the reader went away, so does the stream
                raise
            if getter.done():
                return getter.result()
            getter.cancel()

    def _finish(self) -> Any:
        if self._task.cancelled():
            raise asyncio.CancelledError()
        failure = self._task.exception() or self._error
        if failure is not None:
            raise failure
        return EOF

    async def _iterate(self) -> AsyncIterator[Any]:
        while True:
            message = await self.read()
            if message is EOF:
                return
            yield message

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _ended(self) -> None:
        await asyncio.wait((self._task,))

    def cancel(self) -> bool:
        return self._task.cancel() if not self._task.done() else False

    def cancelled(self) -> bool:
        return self._task.cancelled()

    def done(self) -> bool:
        return self._task.done()

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        self._task.add_done_callback(lambda _: callback(self))

    def time_remaining(self) -> float | None:
        deadline_s = self._ctx.deadline_s
        return None if deadline_s == math.inf else max(deadline_s - self._clock.now(), 0.0)

    async def initial_metadata(self) -> grpc.aio.Metadata:
        await self._ended()
        call = self._ctx.wire_call
        return await call.initial_metadata() if call is not None else grpc.aio.Metadata()

    async def trailing_metadata(self) -> grpc.aio.Metadata:
        await self._ended()
        if isinstance(self._error, grpc.aio.AioRpcError):
            return self._error.trailing_metadata()
        call = self._ctx.wire_call
        return await call.trailing_metadata() if call is not None else grpc.aio.Metadata()

    async def code(self) -> grpc.StatusCode:
        await self._ended()
        if self._task.cancelled():
            return grpc.StatusCode.CANCELLED
        if isinstance(self._error, grpc.aio.AioRpcError):
            return self._error.code()
        return grpc.StatusCode.OK if self._task.exception() is None else grpc.StatusCode.UNKNOWN

    async def details(self) -> str:
        await self._ended()
        if isinstance(self._error, grpc.aio.AioRpcError):
            return str(self._error.details() or "")
        return ""

    async def debug_error_string(self) -> str:
        return await self.details()

    async def wait_for_connection(self) -> None:
        return None


class HasPipeline(Protocol):
    """The unary interceptor of the same channel: its pipeline is swapped on policy changes."""

    pipeline: Pipeline


class StreamResilienceInterceptor(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Runs each server-streaming call of a channel through the same edge pipeline as its unary
    calls (read at each call, so a policy swap applies to the next stream)."""

    def __init__(self, unary: HasPipeline, *, dependency: str, clock: Clock) -> None:
        self._unary = unary
        self._dependency = dependency
        self._clock = clock
        self._wire = StreamWire(clock)
        self._cached: tuple[Pipeline, Pipeline] | None = None

    def _pipeline(self) -> Pipeline:
        base = self._unary.pipeline
        cached = self._cached
        if cached is None or cached[0] is not base:
            cached = self._cached = (base, base.with_wire(self._wire))
        return cached[1]

    async def intercept_unary_stream(
        self,
        continuation: Continuation,
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> ResilientStreamCall:
        raw = client_call_details.method
        method = raw.decode() if isinstance(raw, bytes) else str(raw)
        deadline_s = math.inf
        if client_call_details.timeout is not None:
            deadline_s = self._clock.now() + client_call_details.timeout
        inbound_s = inbound_deadline()
        if inbound_s is not None and inbound_s < deadline_s:
            deadline_s = inbound_s
        pipeline = self._pipeline()
        ctx = StreamContext(
            self._dependency,
            method,
            request,
            client_call_details,
            continuation,
            deadline_s,
            bus=pipeline.bus,
        )
        return ResilientStreamCall(pipeline, ctx, self._clock)
