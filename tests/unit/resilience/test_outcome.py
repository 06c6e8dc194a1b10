"""How a call ended, as the layers that record it read it (grpc_aio_resilience.outcome): the
server's status is what the handler set, else what grpc.aio sends for how it ended; the client's
is the error's code. And a failed call's exception, kept for the `finally`, leaves no cycle."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import EdgePolicy, RetryPolicy, served_code
from grpc_aio_resilience.errors import BreakerOpenError
from grpc_aio_resilience.events import (
    AttemptFinished,
    CallFinished,
    Event,
    EventBus,
    ServerCallFinished,
)
from grpc_aio_resilience.inbound import InboundInterceptor
from grpc_aio_resilience.outcome import call_outcome
from grpc_aio_resilience.pipeline import build_pipeline
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import GET_PROFILE, call, rpc_error


class _Context:
    """A servicer context with the code its handler set (None: none set)."""

    def __init__(self, code: grpc.StatusCode | None = None) -> None:
        self._code = code
        self.read = 0

    def code(self) -> grpc.StatusCode | None:
        self.read += 1
        return self._code

    def time_remaining(self) -> float:
        return 2.0

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()


class _Interrupted(BaseException):
    """Neither an Exception nor a cancellation (as KeyboardInterrupt)."""


@pytest.mark.parametrize(
    ("failure", "set_code", "expected"),
    [
        (None, None, grpc.StatusCode.OK),
        (None, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.NOT_FOUND),
        (asyncio.CancelledError(), None, grpc.StatusCode.CANCELLED),
        (asyncio.CancelledError(), grpc.StatusCode.INTERNAL, grpc.StatusCode.CANCELLED),
        (ValueError("bug"), None, grpc.StatusCode.UNKNOWN),
        (
            ValueError("aborted"),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        ),
        (rpc_error(grpc.StatusCode.UNAVAILABLE), None, grpc.StatusCode.UNKNOWN),
        (_Interrupted(), grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN),
    ],
    ids=[
        "returned",
        "returned-with-set-code",
        "cancelled",
        "cancelled-after-set-code",
        "raised",
        "aborted",
        "downstream-error-escaped",
        "interrupted",
    ],
)
def test_a_served_call_ends_with_the_code_its_caller_is_sent(
    failure: BaseException | None, set_code: grpc.StatusCode | None, expected: grpc.StatusCode
) -> None:
    assert served_code(failure, _Context(set_code)) is expected


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (None, "OK"),
        (rpc_error(grpc.StatusCode.UNAVAILABLE), "UNAVAILABLE"),
        (BreakerOpenError("dep", GET_PROFILE, 1.0), "UNAVAILABLE"),
        (asyncio.CancelledError(), "CANCELLED"),
        (ValueError("bug"), "UNKNOWN"),
        (_Interrupted(), "UNKNOWN"),
    ],
    ids=["returned", "wire-error", "our-error", "cancelled", "raised", "interrupted"],
)
def test_a_client_call_ends_with_its_errors_code(
    failure: BaseException | None, expected: str
) -> None:
    assert call_outcome(failure) == expected


async def _cycles_left_by(run: Callable[[], Awaitable[None]]) -> list[str]:
    """The types of the objects `run()` leaves in reference cycles."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        await run()
        gc.collect()
        return sorted({type(obj).__name__ for obj in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


class _Failed(Exception):
    """What the handler raises."""


class _FailedCall:
    """A finished call that failed: as grpc.aio's, awaiting it raises an error made then (a
    call object holding its error would be a cycle of the fake's own)."""

    def __await__(self) -> Generator[Any, None, Any]:
        raise rpc_error(grpc.StatusCode.UNAVAILABLE, "250")
        yield  # makes this a generator

    def cancel(self) -> bool:
        return True


class _Wire:
    """Every attempt fails."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    async def continuation(self, details: grpc.aio.ClientCallDetails, request: Any) -> Any:
        return _FailedCall()


async def test_a_failed_served_call_leaves_no_cycle() -> None:
    bus = EventBus()
    finished: list[Event] = []
    bus.subscribe(finished.append, (ServerCallFinished,))

    async def handler(request: Any, context: Any) -> Any:
        raise _Failed

    behaviour = InboundInterceptor("svc", bus)._wrap(handler, GET_PROFILE)

    async def serve() -> None:
        try:
            await behaviour(None, _Context())
        except _Failed:
            pass

    assert await _cycles_left_by(serve) == []
    assert [e.code for e in finished if isinstance(e, ServerCallFinished)] == ["UNKNOWN"]


async def test_a_failed_client_call_leaves_no_cycle() -> None:
    clock = FakeClock()
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append, (AttemptFinished, CallFinished))
    policy = EdgePolicy(retry=RetryPolicy(max_attempts=1))
    pipeline = build_pipeline(policy, dependency="dep", bus=bus, clock=clock)

    async def send() -> None:
        try:
            await call(pipeline, _Wire(clock))  # type: ignore[arg-type]
        except grpc.aio.AioRpcError:
            pass

    assert await _cycles_left_by(send) == []
    attempt = next(e for e in seen if isinstance(e, AttemptFinished))
    assert (attempt.code, attempt.pushback_s) == ("UNAVAILABLE", 0.25)
    assert [e.outcome for e in seen if isinstance(e, CallFinished)] == ["UNAVAILABLE"]


@pytest.mark.parametrize(
    ("set_code", "raised", "expected"),
    [
        (None, None, "OK"),
        (grpc.StatusCode.NOT_FOUND, None, "NOT_FOUND"),
        (grpc.StatusCode.PERMISSION_DENIED, _Failed(), "PERMISSION_DENIED"),
        (None, asyncio.CancelledError(), "CANCELLED"),
    ],
    ids=["returned", "returned-with-set-code", "aborted", "cancelled"],
)
async def test_the_inbound_layer_reports_the_code_by_name(
    set_code: grpc.StatusCode | None, raised: BaseException | None, expected: str
) -> None:
    bus = EventBus()
    finished: list[Event] = []
    bus.subscribe(finished.append, (ServerCallFinished,))

    async def handler(request: Any, context: Any) -> Any:
        if raised is not None:
            raise raised
        return "answer"

    behaviour = InboundInterceptor("svc", bus)._wrap(handler, GET_PROFILE)
    try:
        await behaviour(None, _Context(set_code))
    except (_Failed, asyncio.CancelledError):
        pass
    assert [e.code for e in finished if isinstance(e, ServerCallFinished)] == [expected]
