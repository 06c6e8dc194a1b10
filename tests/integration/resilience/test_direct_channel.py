"""The channels `insecure_channel` and `resilient_channel` make run a unary call's pipeline in
the caller's own task, past grpc.aio's interceptor API (grpc_aio_resilience.direct), and stay
drop-in grpc.aio channels: a stub over one, its call objects, cancel, done callbacks, close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest

import grpc_aio_resilience as resilience
from grpc_aio_resilience import outlier_router
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import (
    ProfileFake,
    profile_servicer,
    serving,
    wait_until,
)

REQUEST = profile_pb2.GetProfileRequest(user_id="u1")
PATH = "/mesh.v1.ProfileService/GetProfile"


def _failing_first(times: int, code: grpc.StatusCode) -> ProfileFake:
    """A profile service that fails its first `times` calls with `code`, with a trailer."""

    async def handler(request: object, context: grpc.aio.ServicerContext) -> None:
        if len(fake.arrivals_s) <= times:
            await context.abort(code, "not yet", trailing_metadata=(("why", "warming"),))
        context.set_trailing_metadata((("served", "yes"),))

    fake = ProfileFake(handler)
    return fake


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[str, ProfileFake]]:
    fake = _failing_first(1, grpc.StatusCode.UNAVAILABLE)
    async with serving(profile_servicer(fake)) as target:
        yield target, fake


async def test_a_unary_call_runs_its_pipeline_in_the_callers_task(
    flaky: tuple[str, ProfileFake],
) -> None:
    """No task of its own per call: every attempt starts in the task that awaits the call."""
    target, fake = flaky
    bus = resilience.EventBus()
    tasks: list[asyncio.Task[object] | None] = []
    bus.subscribe(
        lambda _: tasks.append(asyncio.current_task()), kinds=(resilience.AttemptStarted,)
    )
    async with resilience.insecure_channel(target, bus=bus) as channel:
        reply = await profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=5)
    assert reply.profile.user_id == "u1"
    assert len(fake.arrivals_s) == 2  # retried once
    assert tasks == [asyncio.current_task()] * 2


async def test_the_channel_is_a_grpc_aio_channel_and_its_call_a_grpc_aio_call(
    flaky: tuple[str, ProfileFake],
) -> None:
    target, _ = flaky
    channel = resilience.insecure_channel(target)
    try:
        assert isinstance(channel, grpc.aio.Channel)
        await asyncio.wait_for(channel.channel_ready(), 5)
        assert channel.get_state() is grpc.ChannelConnectivity.READY
        call = profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=5)
        assert isinstance(call, grpc.aio.UnaryUnaryCall)
        assert not call.done()
        assert (await call).profile.user_id == "u1"
        assert call.done() and not call.cancelled()
        assert await call.code() is grpc.StatusCode.OK
        assert ("served", "yes") in tuple(await call.trailing_metadata() or ())
        assert (await call).profile.user_id == "u1"  # awaited again: the same answer, no call
        assert resilience.pipeline_of(channel).names[-1] == "attempt_hook"
    finally:
        await resilience.close_channel(channel)
    assert channel.get_state() is grpc.ChannelConnectivity.SHUTDOWN


async def test_a_failed_call_tells_its_code_and_trailers_without_raising() -> None:
    fake = _failing_first(9, grpc.StatusCode.INVALID_ARGUMENT)  # not retried
    async with serving(profile_servicer(fake)) as target:
        async with resilience.insecure_channel(target) as channel:
            call = channel.unary_unary(
                PATH,
                request_serializer=profile_pb2.GetProfileRequest.SerializeToString,
                response_deserializer=profile_pb2.GetProfileResponse.FromString,
            )(REQUEST, timeout=5)
            assert await call.code() is grpc.StatusCode.INVALID_ARGUMENT  # runs it, no raise
            assert await call.details() == "not yet"
            assert ("why", "warming") in tuple(await call.trailing_metadata() or ())
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await call
    assert raised.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert len(fake.arrivals_s) == 1


async def test_a_call_cancelled_before_it_is_awaited_is_never_sent(
    flaky: tuple[str, ProfileFake],
) -> None:
    target, fake = flaky
    async with resilience.insecure_channel(target) as channel:
        call = profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST)
        assert call.cancel()
        assert call.cancelled() and call.done()
        assert await call.code() is grpc.StatusCode.CANCELLED
        with pytest.raises(asyncio.CancelledError):
            await call
    assert fake.arrivals_s == []


async def test_cancel_while_it_runs_reaches_the_server_and_leaves_the_awaiting_task_alone() -> None:
    started, ended = asyncio.Event(), asyncio.Event()

    async def stall(request: object, context: grpc.aio.ServicerContext) -> None:
        context.add_done_callback(lambda _: ended.set())
        started.set()
        await asyncio.sleep(30)

    async with serving(profile_servicer(ProfileFake(stall))) as target:
        async with resilience.insecure_channel(target) as channel:
            call = profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=10)

            async def awaiting() -> int:
                with pytest.raises(asyncio.CancelledError):
                    await call
                task = asyncio.current_task()
                assert task is not None
                return task.cancelling()  # 0: only the call was cancelled, not this task

            waiting = asyncio.create_task(awaiting())
            await asyncio.wait_for(started.wait(), 5)
            assert call.cancel()
            assert await waiting == 0
            await asyncio.wait_for(ended.wait(), 5)  # the server saw the cancellation
            assert call.cancelled()
            assert await call.code() is grpc.StatusCode.CANCELLED


async def test_a_done_callback_runs_a_call_nobody_awaits(flaky: tuple[str, ProfileFake]) -> None:
    """As grpc.aio's intercepted calls: a call waited for by a callback still goes out."""
    target, fake = flaky
    async with resilience.insecure_channel(target) as channel:
        call = profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=5)
        finished: asyncio.Future[grpc.aio.Call] = asyncio.get_running_loop().create_future()
        call.add_done_callback(finished.set_result)
        assert await asyncio.wait_for(finished, 5) is call
        assert await call.code() is grpc.StatusCode.OK
    assert len(fake.arrivals_s) == 2


async def test_two_tasks_awaiting_one_call_share_it(flaky: tuple[str, ProfileFake]) -> None:
    target, fake = flaky
    async with resilience.insecure_channel(target) as channel:
        call = profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=5)
        first, second = await asyncio.gather(call, asyncio.ensure_future(call.code()))
    assert first.profile.user_id == "u1" and second is grpc.StatusCode.OK
    assert len(fake.arrivals_s) == 2  # one logical call: the failed attempt and its retry


async def test_a_call_between_attempts_is_in_flight_on_its_channel() -> None:
    """What a drain waits on (grpc_resilience_mesh.services.runtime.edge_channels) holds the call
    during its backoff."""
    release = asyncio.Event()

    async def handler(request: object, context: grpc.aio.ServicerContext) -> None:
        if len(fake.arrivals_s) == 1:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "not yet")
        await release.wait()  # the retry is held: the call cannot end before the assertion

    fake = ProfileFake(handler)
    async with serving(profile_servicer(fake)) as target:
        channel = resilience.insecure_channel(target)
        call = profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(REQUEST, timeout=5)
        running = asyncio.ensure_future(call)
        await wait_until(lambda: len(fake.arrivals_s) >= 1)
        assert call in channel._active_calls  # in its backoff, or its retry on the wire
        release.set()
        await running
        assert len(fake.arrivals_s) == 2
        assert call not in channel._active_calls
        await channel.close()


async def test_a_failed_replica_is_not_remembered_past_its_call() -> None:
    """The retry loop avoids the replica an attempt failed on; the caller's next call, which
    ran in this same task, does not inherit that."""
    down = ProfileFake(_abort_unavailable)
    async with (
        serving(profile_servicer(down)) as one,
        serving(profile_servicer(ProfileFake())) as two,
    ):
        channel = resilience.insecure_channel(f"{one},{two}")
        try:
            stub = profile_pb2_grpc.ProfileServiceStub(channel)
            for _ in range(4):
                await stub.GetProfile(REQUEST, timeout=5)
            assert outlier_router._failed_on.get() is None
        finally:
            await resilience.close_channel(channel)
    assert down.arrivals_s  # a replica failed at least once


async def _abort_unavailable(request: object, context: grpc.aio.ServicerContext) -> None:
    await context.abort(grpc.StatusCode.UNAVAILABLE, "down")


async def test_a_call_with_compression_and_metadata_is_answered_with_its_metadata() -> None:
    """Compression as grpc.aio's own multicallable takes it (a header of grpc's own)."""
    seen: list[tuple[tuple[str, str | bytes], ...]] = []

    async def record(request: object, context: grpc.aio.ServicerContext) -> None:
        seen.append(tuple(context.invocation_metadata() or ()))

    async with serving(profile_servicer(ProfileFake(record))) as target:
        async with resilience.insecure_channel(target) as channel:
            reply = await profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(
                REQUEST, timeout=5, metadata=(("k", "v"),), compression=grpc.Compression.Gzip
            )
    assert reply.profile.user_id == "u1"
    assert ("k", "v") in seen[0]
