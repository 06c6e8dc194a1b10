"""The server's limits on a stream's time (grpc_aio_resilience.stream_guard) over a real server:
a stream without a client deadline ends at the server's default, a client's own deadline is
left to grpc, and a reader that takes no message is let go of whatever deadline it sent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import grpc
import grpc.aio

from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.events import Event, EventBus, ServerCallFinished, StreamExpired
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.v1 import recommendation_pb2, recommendation_pb2_grpc
from tests.integration.hardening.stalled_h2 import stall
from tests.integration.resilience.servers import serving
from tests.support.polling import await_until

STREAM = "/mesh.v1.RecommendationService/StreamRecommend"
REQUEST = recommendation_pb2.RecommendRequest(user_id="u-0001", limit=5)


class Slow(recommendation_pb2_grpc.RecommendationServiceServicer):
    """Two items, `pause_s` apart; counts the streams cancelled under it."""

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s
        self.cancelled = 0

    async def StreamRecommend(
        self, request: recommendation_pb2.RecommendRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        try:
            yield recommendation_pb2.RankedProduct(rank=1)
            await asyncio.sleep(self.pause_s)
            yield recommendation_pb2.RankedProduct(rank=2)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def server(policy: ServerPolicy, events: list[Event]) -> list[grpc.aio.ServerInterceptor]:
    bus = EventBus()
    bus.subscribe(events.append)
    return list(server_layers("recommendation", policy, bus, FaultTable()))


def register(fake: Slow) -> Callable[[grpc.aio.Server], None]:
    return lambda s: recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(fake, s)


def finished(events: list[Event]) -> list[str]:
    return [e.code for e in events if isinstance(e, ServerCallFinished)]


async def test_a_stream_without_a_client_deadline_ends_at_the_servers_default() -> None:
    fake, events = Slow(pause_s=30), list[Event]()
    policy = ServerPolicy(stream_deadline_s=0.5)
    async with serving(register(fake), server(policy, events)) as target:
        async with grpc.aio.insecure_channel(target) as channel:
            call = recommendation_pb2_grpc.RecommendationServiceStub(channel).StreamRecommend(
                REQUEST
            )
            started = time.monotonic()
            assert (await call.read()).rank == 1
            assert await call.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            took_s = time.monotonic() - started
            assert "no client deadline" in await call.details()
        await await_until(lambda: finished(events), timeout_s=5, what="the stream counted")
    assert took_s < 3.0, took_s
    assert fake.cancelled == 1  # the handler was stopped, not left running
    assert finished(events) == ["DEADLINE_EXCEEDED"]
    assert [e.method for e in events if isinstance(e, StreamExpired)] == [STREAM]


async def test_a_client_deadline_is_the_clients_to_keep() -> None:
    fake, events = Slow(pause_s=0.8), list[Event]()
    policy = ServerPolicy(stream_deadline_s=0.3)
    async with serving(register(fake), server(policy, events)) as target:
        async with grpc.aio.insecure_channel(target) as channel:
            call = recommendation_pb2_grpc.RecommendationServiceStub(channel).StreamRecommend(
                REQUEST, timeout=10
            )
            assert [item.rank async for item in call] == [1, 2]
    assert not [e for e in events if isinstance(e, StreamExpired)]


async def test_a_reader_that_takes_no_message_is_let_go_of_despite_a_long_deadline() -> None:
    fake, events = Slow(pause_s=0), list[Event]()
    policy = ServerPolicy(stream_write_timeout_s=0.5)
    async with serving(register(fake), server(policy, events)) as target:
        started = time.monotonic()
        stalled = await stall(target, STREAM, REQUEST.SerializeToString(), 3, grpc_timeout="3600S")
        try:
            await await_until(
                lambda: len(finished(events)) == 3, timeout_s=10, what="the streams ended"
            )
            took_s = time.monotonic() - started
        finally:
            await stalled.close()
    assert took_s < 4.0, took_s
    assert finished(events) == ["DEADLINE_EXCEEDED"] * 3
    reasons = [e.reason for e in events if isinstance(e, StreamExpired)]
    assert reasons == ["no message accepted in 0.5s"] * 3
