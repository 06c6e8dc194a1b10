"""A channel whose unary calls run their pipeline in the caller's own task, past grpc.aio's
interceptor API.

grpc.aio runs every intercepted call in a task of its own, besides the wire call's: a task,
its scheduling and its done callbacks on every call. Generated stubs only ask a channel for
`unary_unary(path, ...)` and call what it returns, so `ResilientChannel` hands them a
multicallable whose call object runs the edge's pipeline over the plain grpc.aio
multicallable when it is first awaited, in the awaiting task. Streams keep the interceptor
(`ResilienceInterceptor.streams()` is on the channel it wraps); the rest is that channel's.

A call nobody awaits is not sent (grpc.aio cancels an intercepted call as soon as nobody holds
it), unless a done callback is added to it: it then runs in a task, as grpc.aio's would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.outlier_router import forget_failed_replica

_NEW, _RUNNING, _DONE = 0, 1, 2
_CANCELLED_DETAILS = "Locally cancelled by application!"
"""What grpc.aio says of a call cancelled before it had an answer."""


class ResilientChannel(grpc.aio.Channel):  # type: ignore[misc]
    """A grpc.aio channel (`channel`, its streams intercepted as ever) whose unary calls run
    through `interceptor`'s pipeline in the caller's task (see the module docstring)."""

    def __init__(self, channel: grpc.aio.Channel, interceptor: ResilienceInterceptor) -> None:
        self.wrapped = channel
        self.interceptor = interceptor
        self._calls: set[ResilientUnaryUnaryCall] = set()

    async def __aenter__(self) -> ResilientChannel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self, grace: float | None = None) -> None:
        """As grpc.aio's: the attempts on the wire get `grace`, then everything is cancelled."""
        await self.wrapped.close(grace)
        for call in list(self._calls):
            call.cancel()

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self.wrapped.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self.wrapped.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self.wrapped.channel_ready()

    @property
    def _active_calls(self) -> list[Any]:
        """The calls in flight, as grpc.aio's channel keeps them (what a drain waits on): the
        logical unary calls, and what is on the wrapped channel (streams, attempts)."""
        return [*self._calls, *self.wrapped._active_calls]

    def unary_unary(
        self,
        method: str,
        request_serializer: Callable[[Any], bytes] | None = None,
        response_deserializer: Callable[[bytes], Any] | None = None,
        _registered_method: bool | None = False,
    ) -> ResilientUnaryUnary:
        raw = self.wrapped.unary_unary(
            method, request_serializer, response_deserializer, _registered_method=_registered_method
        )
        return ResilientUnaryUnary(raw, method, self.interceptor, self._calls)

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrapped.unary_stream(*args, **kwargs)

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrapped.stream_unary(*args, **kwargs)

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrapped.stream_stream(*args, **kwargs)


class ResilientUnaryUnary(grpc.aio.UnaryUnaryMultiCallable):  # type: ignore[misc]
    """One method of a ResilientChannel: each call a ResilientUnaryUnaryCall."""

    def __init__(
        self,
        raw: Any,
        method: str,
        interceptor: ResilienceInterceptor,
        in_flight: set[ResilientUnaryUnaryCall],
    ) -> None:
        self._raw = raw
        self.name = method
        self._path = method.encode()
        self.interceptor = interceptor
        self.in_flight = in_flight
        self.send = self._send  # the pipeline's continuation, bound once
        self.start = self._start  # what it awaits, without its coroutine (CallContext.start)

    def __call__(
        self,
        request: Any,
        *,
        timeout: float | None = None,
        metadata: Any = None,
        credentials: grpc.CallCredentials | None = None,
        wait_for_ready: bool | None = None,
        compression: grpc.Compression | None = None,
    ) -> ResilientUnaryUnaryCall:
        if compression is not None:  # the request header grpc.aio adds for it, as it adds it
            metadata = self._raw._init_metadata(metadata, compression)
        details = grpc.aio.ClientCallDetails(
            self._path, timeout, metadata, credentials, wait_for_ready
        )
        return ResilientUnaryUnaryCall(self, request, details)

    async def _send(self, details: grpc.aio.ClientCallDetails, request: Any) -> Any:
        return self._start(details, request)

    def _start(self, details: grpc.aio.ClientCallDetails, request: Any) -> Any:
        return self._raw(
            request,
            timeout=details.timeout,
            metadata=details.metadata,
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
        )


class ResilientUnaryUnaryCall(grpc.aio.UnaryUnaryCall):  # type: ignore[misc]
    """One logical call: awaiting it runs the pipeline (once) and gives the response; its
    code, details and metadata are the final attempt's, or those of the error that ended it."""

    def __init__(self, method: ResilientUnaryUnary, request: Any, details: Any) -> None:
        self._method = method
        self._request = request
        self._details = details
        self._state = _NEW
        self._final: Any = None
        self._error: BaseException | None = None
        self._driver: asyncio.Task[Any] | None = None
        self._cancel_asked = False
        self._waiters: list[asyncio.Future[None]] | None = None  # made by the first to wait
        self._callbacks: list[Callable[[Any], None]] | None = None

    def __await__(self) -> Generator[Any, None, Any]:
        if self._state == _NEW:
            final = yield from self._drive()  # in this frame: no coroutine of the call's own
        else:
            yield from self._ended().__await__()
            if self._error is not None:
                raise self._error
            final = self._final
        return (yield from final.__await__())

    async def _run(self) -> Any:
        """`_drive` as a coroutine: for a task that runs the call (`add_done_callback`) or a
        method that needs it ended (`_ended`)."""
        return await _Driving(self)

    def _drive(self) -> Generator[Any, None, Any]:
        """The pipeline's final call object; run once, by the first to await the call."""
        self._state = _RUNNING
        self._driver = asyncio.current_task()
        method = self._method
        method.in_flight.add(self)
        interceptor = method.interceptor
        try:
            self._final = yield from interceptor.run(
                method.name, self._details, method.send, self._request, method.start
            ).__await__()
            return self._final
        except asyncio.CancelledError as err:
            self._error = err
            if self._cancel_asked and self._driver is not None:
                self._driver.uncancel()  # our cancel(), not the task's: the caller sees it here
            raise
        except BaseException as err:
            self._error = err
            raise
        finally:
            method.in_flight.discard(self)
            self._state = _DONE
            if interceptor.router is not None:
                forget_failed_replica()
            if self._waiters is not None or self._callbacks is not None:
                self._settle()

    def _settle(self) -> None:
        waiters, callbacks = self._waiters, self._callbacks
        self._waiters = self._callbacks = None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)
        for callback in callbacks or ():
            callback(self)

    async def _ended(self) -> None:
        """Return once the call has ended (its outcome kept), running it here if nobody has."""
        if self._state == _NEW:
            try:
                await self._run()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not self._cancel_asked or (task is not None and task.cancelling() > 0):
                    raise  # this task is being cancelled, not only the call
            except Exception:
                pass  # the outcome is the call's to tell
        elif self._state == _RUNNING:
            waiter = asyncio.get_running_loop().create_future()
            if self._waiters is None:
                self._waiters = []
            self._waiters.append(waiter)
            await waiter

    def cancel(self) -> bool:
        if self._state == _DONE:
            return False
        self._cancel_asked = True
        if self._state == _NEW:
            self._error = asyncio.CancelledError()
            self._state = _DONE
            self._settle()
            return True
        return self._driver is not None and self._driver.cancel()

    def cancelled(self) -> bool:
        if self._state != _DONE:
            return False
        err = self._error
        if isinstance(err, asyncio.CancelledError):
            return True
        if isinstance(err, grpc.aio.AioRpcError):
            return bool(err.code() == grpc.StatusCode.CANCELLED)
        return err is None and bool(self._final.cancelled())

    def done(self) -> bool:
        return self._state == _DONE

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        if self._state == _DONE:
            callback(self)
            return
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)
        if self._state == _NEW:  # waited for, not awaited: it runs now, in a task
            task = asyncio.get_running_loop().create_task(self._run())
            task.add_done_callback(_outcome_kept)

    def time_remaining(self) -> float | None:
        final = self._final
        return None if final is None else final.time_remaining()

    async def initial_metadata(self) -> grpc.aio.Metadata | None:
        await self._ended()
        if self._final is not None:
            return await self._final.initial_metadata()
        err = self._error
        return err.initial_metadata() if isinstance(err, grpc.aio.AioRpcError) else None

    async def trailing_metadata(self) -> grpc.aio.Metadata | None:
        await self._ended()
        if self._final is not None:
            return await self._final.trailing_metadata()
        err = self._error
        return err.trailing_metadata() if isinstance(err, grpc.aio.AioRpcError) else None

    async def code(self) -> grpc.StatusCode:
        await self._ended()
        if self._final is not None:
            return await self._final.code()
        err = self._error
        if isinstance(err, grpc.aio.AioRpcError):
            return err.code()
        if isinstance(err, asyncio.CancelledError):
            return grpc.StatusCode.CANCELLED
        return grpc.StatusCode.UNKNOWN

    async def details(self) -> str:
        await self._ended()
        if self._final is not None:
            return await self._final.details()  # type: ignore[no-any-return]
        err = self._error
        if isinstance(err, grpc.aio.AioRpcError):
            return err.details() or ""
        return _CANCELLED_DETAILS if isinstance(err, asyncio.CancelledError) else repr(err)

    async def debug_error_string(self) -> str | None:
        await self._ended()
        if self._final is not None:
            return await self._final.debug_error_string()  # type: ignore[no-any-return]
        err = self._error
        return err.debug_error_string() if isinstance(err, grpc.aio.AioRpcError) else ""

    async def wait_for_connection(self) -> None:
        await self._ended()
        if self._error is not None:
            raise self._error
        await self._final.wait_for_connection()


class _Driving:
    """A call's `_drive` awaited by a coroutine (ResilientUnaryUnaryCall._run)."""

    __slots__ = ("_call",)

    def __init__(self, call: ResilientUnaryUnaryCall) -> None:
        self._call = call

    def __await__(self) -> Generator[Any, None, Any]:
        return self._call._drive()


def _outcome_kept(task: asyncio.Task[Any]) -> None:
    """A call run in a task for a done callback: its outcome is the call's to tell, so the
    task's own exception is marked retrieved."""
    if not task.cancelled():
        task.exception()
