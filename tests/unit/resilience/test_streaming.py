"""The commit rule of streams (gRFC A6) over scripted fake streams and a fake clock: retried
only before the first message, never after part of the answer arrived."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.errors import StreamBrokenError
from grpc_aio_resilience.events import (
    BreakerStateChanged,
    RetryScheduled,
    RetrySkipped,
    StreamCommitted,
    StreamEnded,
)
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_aio_resilience.streaming import ResilientStreamCall, StreamContext, StreamWire
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import recording_bus, rpc_error

METHOD = "/mesh.v1.RecommendationService/StreamRecommend"
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
HANG = object()
"""A read that never returns (until cancelled)."""


class FakeStream:
    """One attempt: `script` items are read in turn (a message, an AioRpcError to raise, or
    HANG); each read first advances the clock by `step_s`. EOF after the last."""

    def __init__(self, clock: FakeClock, script: list[Any], step_s: float) -> None:
        self._clock = clock
        self._script = list(script)
        self._step_s = step_s
        self.cancelled = False

    async def read(self) -> Any:
        self._clock.advance(self._step_s)
        if not self._script:
            return grpc.aio.EOF
        item = self._script.pop(0)
        if item is HANG:
            await asyncio.Event().wait()
        if isinstance(item, grpc.aio.AioRpcError):
            raise item
        return item

    def cancel(self) -> bool:
        self.cancelled = True
        return True


class FakeStreams:
    """A dependency that answers attempt n (1-based) with `scripts[n - 1]`."""

    def __init__(self, clock: FakeClock, scripts: list[list[Any]], step_s: float = 0.0) -> None:
        self.clock = clock
        self.scripts = scripts
        self.step_s = step_s
        self.calls: list[FakeStream] = []
        self.metadata: list[dict[str, str]] = []
        self.timeouts_s: list[float | None] = []

    async def continuation(self, details: grpc.aio.ClientCallDetails, request: Any) -> FakeStream:
        self.metadata.append(dict(details.metadata or ()))
        self.timeouts_s.append(details.timeout)
        call = FakeStream(self.clock, self.scripts[len(self.calls)], self.step_s)
        self.calls.append(call)
        return call


def policy(max_attempts: int = 3, attempt_s: float = 0.3, total_s: float = 5.0) -> EdgePolicy:
    return from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": total_s, "attempt_s": attempt_s},
            "retry": {"max_attempts": max_attempts, "budget": {"enabled": False}},
            "breaker": {"enabled": False},
            "bulkhead": {"enabled": False},
        },
    )


async def run(
    streams: FakeStreams, edge: EdgePolicy | None = None
) -> tuple[list[Any], BaseException | None, list[Any], ResilientStreamCall]:
    """One stream through a real pipeline: (messages, error, events, call)."""
    bus, events = recording_bus()
    clock = streams.clock
    base = build_pipeline(
        edge or policy(), dependency="dep", bus=bus, clock=clock, rng=random.Random(1)
    )
    details = grpc.aio.ClientCallDetails(METHOD.encode(), None, None, None, None)
    ctx = StreamContext("dep", METHOD, object(), details, streams.continuation, bus=bus)
    call = ResilientStreamCall(base.with_wire(StreamWire(clock)), ctx, clock)
    got: list[Any] = []
    error: BaseException | None = None
    try:
        async for message in call:
            got.append(message)
    except grpc.aio.AioRpcError as err:
        error = err
    return got, error, events, call


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def test_a_failure_before_the_first_message_is_retried_after_a_jittered_backoff() -> None:
    clock = FakeClock()
    streams = FakeStreams(clock, [[rpc_error(UNAVAILABLE)], ["a", "b", "c"]])
    got, error, events, call = await run(streams)
    assert (got, error) == (["a", "b", "c"], None)
    assert len(streams.calls) == 2
    assert "grpc-previous-rpc-attempts" not in streams.metadata[0]
    assert streams.metadata[1]["grpc-previous-rpc-attempts"] == "1"
    [retry] = of(events, RetryScheduled)
    assert retry.attempt == 1 and 0 <= retry.delay_s <= 0.05  # full jitter, base 50 ms
    assert clock.sleeps_s == [retry.delay_s]  # the backoff, slept on the injected clock
    assert [e.attempt for e in of(events, StreamCommitted)] == [2]
    assert [e.outcome for e in of(events, StreamEnded)] == ["retried-before-first-message"]
    assert await call.code() is grpc.StatusCode.OK
    assert not call.partial


@pytest.mark.parametrize("after", [1, 3])
async def test_a_failure_after_part_of_the_answer_is_never_retried(after: int) -> None:
    clock = FakeClock()
    script: list[Any] = [f"m{i}" for i in range(after)] + [rpc_error(UNAVAILABLE)]
    streams = FakeStreams(clock, [script, ["never", "sent"]])
    got, error, events, call = await run(streams)
    assert got == [f"m{i}" for i in range(after)]
    assert isinstance(error, StreamBrokenError)
    assert error.code() is UNAVAILABLE and error.messages == after
    assert len(streams.calls) == 1  # the second script was never asked for
    assert of(events, RetryScheduled) == [] and clock.sleeps_s == []
    assert [(e.reason, e.code) for e in of(events, RetrySkipped)] == [("committed", "UNAVAILABLE")]
    [ended] = of(events, StreamEnded)
    assert (ended.outcome, ended.messages, ended.code) == ("partial", after, "UNAVAILABLE")
    assert call.partial and call.messages == after
    assert await call.code() is UNAVAILABLE


async def test_a_non_retryable_failure_after_the_commit_ends_with_its_own_error() -> None:
    clock = FakeClock()
    streams = FakeStreams(clock, [["m0", rpc_error(grpc.StatusCode.INTERNAL)]])
    got, error, events, _ = await run(streams)
    assert got == ["m0"]
    assert isinstance(error, grpc.aio.AioRpcError) and not isinstance(error, StreamBrokenError)
    assert error.code() is grpc.StatusCode.INTERNAL
    assert of(events, RetrySkipped) == []  # not a retryable code: nothing was skipped


async def test_the_attempt_timeout_bounds_only_the_wait_for_the_first_message() -> None:
    clock = FakeClock()
    # Attempt 1 never sends anything; attempt 2 streams 5 messages 0.2 s apart (1 s in all,
    # past the 0.3 s attempt timeout, inside the 5 s total).
    streams = FakeStreams(clock, [[HANG], ["a", "b", "c", "d", "e"]], step_s=0.2)
    got, error, events, _ = await run(streams)
    assert (got, error) == (["a", "b", "c", "d", "e"], None)
    assert streams.calls[0].cancelled  # the silent attempt was cancelled, then retried
    assert [e.reason for e in of(events, RetryScheduled)] == ["DEADLINE_EXCEEDED"]
    assert clock.sleeps_s[0] == 0.3  # attempt 1 waited attempt_s for its first message
    # Each attempt's own gRPC deadline is the call's time left, not attempt_s.
    assert all(t is not None and t > 0.3 for t in streams.timeouts_s)


async def test_a_long_stream_outlives_the_attempt_timeout() -> None:
    clock = FakeClock()
    streams = FakeStreams(clock, [["a", "b", "c", "d", "e"]], step_s=0.2)
    got, error, _, _ = await run(streams, policy(attempt_s=0.3, total_s=5.0))
    assert (got, error) == (["a", "b", "c", "d", "e"], None)
    assert clock.now() - 1000.0 >= 1.0  # the stream ran past attempt_s


async def test_cancelling_the_reader_cancels_the_attempt() -> None:
    clock = FakeClock()
    streams = FakeStreams(clock, [["a", HANG]])
    bus, _ = recording_bus()
    base = build_pipeline(policy(), dependency="dep", bus=bus, clock=clock)
    details = grpc.aio.ClientCallDetails(METHOD.encode(), None, None, None, None)
    ctx = StreamContext("dep", METHOD, object(), details, streams.continuation, bus=bus)
    call = ResilientStreamCall(base.with_wire(StreamWire(clock)), ctx, clock)
    assert await call.read() == "a"
    reader = asyncio.ensure_future(call.read())
    await asyncio.sleep(0)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    assert await call.code() is grpc.StatusCode.CANCELLED
    assert streams.calls[0].cancelled


async def test_a_reader_that_takes_nothing_until_the_deadline_is_no_failure_of_the_dependency() -> (
    None
):
    """A stalled client's relayed stream ends on its reader's deadline: that says nothing about
    the dependency, so a breaker that opens on one failure stays closed for the next caller."""
    clock = FakeClock()
    streams = FakeStreams(clock, [["a", "b", "c"], ["x", "y"]], step_s=3.0)
    edge = from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 5.0, "attempt_s": 5.0},
            "retry": {"max_attempts": 1},
            "breaker": {"consecutive_failures": 1, "failure_rate": None},
            "bulkhead": {"enabled": False},
        },
    )
    bus, events = recording_bus()
    pipeline = build_pipeline(edge, dependency="dep", bus=bus, clock=clock).with_wire(
        StreamWire(clock)
    )
    details = grpc.aio.ClientCallDetails(METHOD.encode(), 5.0, None, None, None)

    def call() -> ResilientStreamCall:
        ctx = StreamContext("dep", METHOD, object(), details, streams.continuation, bus=bus)
        ctx.deadline_s = clock.now() + 5.0
        return ResilientStreamCall(pipeline, ctx, clock)

    stalled = call()
    assert await stalled.code() is grpc.StatusCode.DEADLINE_EXCEEDED  # never read from
    assert "the reader took no message" in await stalled.details()
    streams.step_s = 0.0
    assert [message async for message in call()] == ["x", "y"]  # the breaker let it through
    assert not of(events, BreakerStateChanged)
