"""Server-streaming calls through a real resilient channel to a real grpc.aio server: the
commit rule (retries only before the first message), the partial error, cancellation reaching
the server, the breaker and bulkhead counting streams; and across two hops, the gateway's
relay flagging a partial stream and passing a cancellation and the deadline on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.bulkhead import Bulkhead
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.errors import BreakerOpenError, BulkheadFullError, StreamBrokenError
from grpc_aio_resilience.events import (
    Event,
    EventBus,
    RetryScheduled,
    RetrySkipped,
    StreamCommitted,
    StreamEnded,
)
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.faults.injection import FaultSpec, FaultTable
from grpc_resilience_mesh.services.gateway.streams import MESSAGES_KEY, PARTIAL_KEY, relay_stream
from grpc_resilience_mesh.services.runtime.relay import relay_failure
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    recommendation_pb2,
    recommendation_pb2_grpc,
)
from tests.integration.resilience.servers import serving
from tests.support.polling import await_until

STREAM = "/mesh.v1.RecommendationService/StreamRecommend"
REQUEST = recommendation_pb2.RecommendRequest(user_id="u-0001", limit=5)
Script = Callable[[int, grpc.aio.ServicerContext], Awaitable[None]]


class StreamFake(recommendation_pb2_grpc.RecommendationServiceServicer):
    """StreamRecommend yields `items` ranked products; `before(n, ctx)` runs before item n
    (0-based) of every attempt and may abort or hold it. Records what the server saw."""

    def __init__(self, items: int = 5, before: Script | None = None) -> None:
        self.items = items
        self.before = before
        self.attempts = 0
        self.previous_attempts: list[str | None] = []
        self.cancelled = 0
        self.remaining_s: list[float | None] = []

    async def StreamRecommend(
        self, request: recommendation_pb2.RecommendRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        self.attempts += 1
        metadata = dict(context.invocation_metadata() or ())
        self.previous_attempts.append(metadata.get("grpc-previous-rpc-attempts"))
        self.remaining_s.append(context.time_remaining())
        try:
            for n in range(self.items):
                if self.before is not None:
                    await self.before(n, context)
                product = recommendation_pb2.Product(product_id=f"p-{n}")
                yield recommendation_pb2.RankedProduct(product=product, rank=n + 1)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def Popular(
        self, request: recommendation_pb2.PopularRequest, context: grpc.aio.ServicerContext
    ) -> recommendation_pb2.RecommendResponse:
        return recommendation_pb2.RecommendResponse(source="popular")


def edge(**sections: Any) -> EdgePolicy:
    base: dict[str, Any] = {
        "deadline": {"total_s": 10.0, "attempt_s": 5.0},
        "retry": {"max_attempts": 3, "base_backoff_s": 0.001, "max_backoff_s": 0.002},
        "breaker": {"enabled": False},
        "bulkhead": {"enabled": False},
    }
    base.update(sections)
    return from_dict(EdgePolicy, base)


class Client:
    """A resilient channel to the fake, and every event its pipeline emitted."""

    def __init__(self, target: str, policy: EdgePolicy) -> None:
        self.events: list[Event] = []
        bus = EventBus()
        bus.subscribe(self.events.append)
        clock = SystemClock()
        pipeline = build_pipeline(policy, dependency="recommendation", bus=bus, clock=clock)
        self.pipeline = pipeline
        self.channel = resilient_channel(
            target, ResilienceInterceptor(pipeline, dependency="recommendation", clock=clock)
        )
        self.stub = recommendation_pb2_grpc.RecommendationServiceStub(self.channel)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def read_all(self, timeout_s: float = 5.0) -> tuple[list[int], Any]:
        """The ranks received and the error that ended the stream (None when it completed)."""
        call = self.stub.StreamRecommend(REQUEST, timeout=timeout_s)
        ranks: list[int] = []
        try:
            async for item in call:
                ranks.append(item.rank)
        except grpc.aio.AioRpcError as err:
            return ranks, err
        return ranks, None


async def fail_first_attempt_before_any(fake: StreamFake) -> Script:
    async def before(n: int, context: grpc.aio.ServicerContext) -> None:
        if fake.attempts == 1 and n == 0:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reset before the first message")

    return before


def register(fake: StreamFake) -> Callable[[grpc.aio.Server], None]:
    return lambda s: recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(fake, s)


async def test_a_failure_before_the_first_message_is_retried_transparently() -> None:
    fake = StreamFake()
    fake.before = await fail_first_attempt_before_any(fake)
    async with serving(register(fake)) as target:
        client = Client(target, edge())
        ranks, err = await client.read_all()
        await client.channel.close()
    assert err is None
    assert ranks == [1, 2, 3, 4, 5]
    assert fake.attempts == 2
    assert fake.previous_attempts == [None, "1"]  # gRFC A6's header on the retry
    assert len(client.of(RetryScheduled)) == 1
    assert [e.attempt for e in client.of(StreamCommitted)] == [2]
    [ended] = client.of(StreamEnded)
    assert (ended.outcome, ended.messages, ended.code) == ("retried-before-first-message", 5, "OK")


async def test_a_failure_after_three_messages_is_not_retried_and_is_partial() -> None:
    async def cut_after_three(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 3:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reset after three messages")

    fake = StreamFake(before=cut_after_three)
    async with serving(register(fake)) as target:
        client = Client(target, edge())
        call = client.stub.StreamRecommend(REQUEST, timeout=5.0)
        ranks = []
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            async for item in call:
                ranks.append(item.rank)
        assert await call.code() is grpc.StatusCode.UNAVAILABLE
        await client.channel.close()
    assert ranks == [1, 2, 3]  # what arrived stands
    assert isinstance(raised.value, StreamBrokenError)
    assert raised.value.messages == 3
    assert fake.attempts == 1  # never retried after part of the answer
    assert client.of(RetryScheduled) == []
    assert [e.reason for e in client.of(RetrySkipped)] == ["committed"]
    [ended] = client.of(StreamEnded)
    assert (ended.outcome, ended.messages, ended.code) == ("partial", 3, "UNAVAILABLE")


async def test_a_caller_that_cancels_cancels_the_stream_on_the_server() -> None:
    held = asyncio.Event()

    async def hold_after_first(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 1:
            held.set()
            await asyncio.sleep(30)

    fake = StreamFake(before=hold_after_first)
    async with serving(register(fake)) as target:
        client = Client(target, edge(bulkhead={"enabled": True, "max_concurrent": 1}))
        reader_got: list[int] = []

        async def reader() -> None:
            async for item in client.stub.StreamRecommend(REQUEST, timeout=20.0):
                reader_got.append(item.rank)

        task = asyncio.create_task(reader())
        await asyncio.wait_for(held.wait(), timeout=5)
        await await_until(lambda: reader_got == [1], timeout_s=5, what="first item read")
        task.cancel()  # the caller goes away mid-stream
        with pytest.raises(asyncio.CancelledError):
            await task
        await await_until(lambda: fake.cancelled == 1, timeout_s=5, what="server saw the cancel")
        bulkhead = client.pipeline.strategy("bulkhead")
        assert isinstance(bulkhead, Bulkhead)
        await await_until(lambda: bulkhead.in_flight == 0, timeout_s=5, what="slot released")
        await client.channel.close()
    assert reader_got == [1]


async def test_the_bulkhead_slot_is_held_for_the_streams_whole_life() -> None:
    release = asyncio.Event()

    async def hold_after_first(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 1:
            await release.wait()

    fake = StreamFake(items=2, before=hold_after_first)
    async with serving(register(fake)) as target:
        client = Client(target, edge(bulkhead={"enabled": True, "max_concurrent": 1}))
        first = client.stub.StreamRecommend(REQUEST, timeout=10.0)
        assert (await first.read()).rank == 1  # committed and still open
        ranks, err = await client.read_all()
        assert ranks == []
        assert isinstance(err, BulkheadFullError)
        release.set()
        assert (await first.read()).rank == 2
        assert await first.read() is grpc.aio.EOF
        ranks, err = await client.read_all()  # the slot is free again
        await client.channel.close()
    assert (ranks, err) == ([1, 2], None)
    assert fake.attempts == 2  # the rejected stream never reached the server


async def test_the_breaker_counts_broken_streams_and_then_rejects_before_the_wire() -> None:
    async def cut_after_three(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 3:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reset after three messages")

    fake = StreamFake(before=cut_after_three)
    breaker = {"enabled": True, "consecutive_failures": 2, "failure_rate": None, "open_s": 30}
    async with serving(register(fake)) as target:
        client = Client(target, edge(breaker=breaker))
        outcomes = [await client.read_all() for _ in range(3)]
        await client.channel.close()
    assert [len(ranks) for ranks, _ in outcomes] == [3, 3, 0]
    assert isinstance(outcomes[2][1], BreakerOpenError)
    assert fake.attempts == 2  # the third never reached the server


async def test_the_servers_faults_cut_streams_and_the_deadline_travels() -> None:
    """The fault interceptor's `after_messages` and `first_attempt_only` on a stream, and the
    caller's deadline as the server's time remaining."""
    faults = FaultTable()
    bus = EventBus()
    fake = StreamFake()
    interceptors = server_layers("recommendation", ServerPolicy(), bus, faults)
    async with serving(register(fake), interceptors) as target:
        client = Client(target, edge())
        faults.set(FaultSpec.parse(STREAM, 1.0, "UNAVAILABLE", 0.0, -1, 0, True))
        assert await client.read_all(timeout_s=3.0) == ([1, 2, 3, 4, 5], None)
        faults.set(FaultSpec.parse(STREAM, 1.0, "UNAVAILABLE", 0.0, -1, 3, False))
        ranks, err = await client.read_all(timeout_s=3.0)
        await client.channel.close()
    assert ranks == [1, 2, 3]
    assert isinstance(err, StreamBrokenError)
    assert fake.attempts == 3  # 2 for the retried stream, 1 for the cut one
    # The caller's 3 s, not the edge's 10 s total (grpc-timeout is rounded up on the wire).
    assert all(r is not None and 0 < r <= 3.1 for r in fake.remaining_s)


class Relay(gateway_pb2_grpc.GatewayServicer):
    """Hop A: the gateway's stream relay (grpc_resilience_mesh.services.gateway.streams) over a
    resilient channel to B."""

    def __init__(self, b_target: str) -> None:
        self.b = Client(b_target, edge())

    async def StreamRecommendations(
        self, request: gateway_pb2.GetHomeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        async def relay(err: grpc.aio.AioRpcError, trailers: Sequence[tuple[str, str]]) -> None:
            await relay_failure(context, err, "recommendation", True, None, trailers)

        async for item in relay_stream(self.b.stub, request.user_id, request.limit, relay):
            yield item


@asynccontextmanager
async def two_hops(fake: StreamFake) -> AsyncIterator[gateway_pb2_grpc.GatewayStub]:
    """client -> A (Relay, the mesh's server interceptors) -> B (the fake)."""
    async with serving(register(fake)) as b_target:
        relay = Relay(b_target)
        interceptors = server_layers("gateway", ServerPolicy(), EventBus(), FaultTable())
        register_a = partial(gateway_pb2_grpc.add_GatewayServicer_to_server, relay)
        async with serving(register_a, interceptors) as a_target:
            async with grpc.aio.insecure_channel(a_target) as channel:
                yield gateway_pb2_grpc.GatewayStub(channel)
        await relay.b.channel.close()


HOME = gateway_pb2.GetHomeRequest(user_id="u-0001", limit=5)


async def test_a_relayed_stream_gives_its_caller_what_arrived_then_the_error_flagged_partial() -> (
    None
):
    async def cut_after_three(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 3:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reset after three messages")

    fake = StreamFake(before=cut_after_three)
    async with two_hops(fake) as gateway:
        call = gateway.StreamRecommendations(HOME, timeout=5)
        ranks = []
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            async for item in call:
                ranks.append(item.rank)
        trailers = dict(raised.value.trailing_metadata() or ())
    assert ranks == [1, 2, 3]
    assert raised.value.code() is grpc.StatusCode.UNAVAILABLE
    assert trailers[PARTIAL_KEY] == "true" and trailers[MESSAGES_KEY] == "3"
    assert fake.attempts == 1


async def test_a_caller_cancelling_the_relayed_stream_cancels_it_two_hops_down() -> None:
    async def hold_after_first(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 1:
            await asyncio.sleep(30)

    fake = StreamFake(before=hold_after_first)
    async with two_hops(fake) as gateway:
        call = gateway.StreamRecommendations(HOME, timeout=5)
        first = await call.read()
        assert first.rank == 1
        call.cancel()
        await await_until(lambda: fake.cancelled == 1, timeout_s=5, what="B saw the cancel")
    # A calls B with no timeout of its own: B's deadline is the caller's 5 s, carried by A's
    # inbound deadline, not the edge's 10 s total.
    assert fake.remaining_s[0] is not None and 0 < fake.remaining_s[0] <= 5.1


async def test_a_stream_holds_its_place_among_streams_and_a_server_sheds_past_their_limit() -> None:
    release = asyncio.Event()

    async def hold_after_first(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 1:
            await release.wait()

    fake = StreamFake(items=2, before=hold_after_first)
    policy = ServerPolicy(max_in_flight=1, max_streams_in_flight=1, shed_pushback_ms=150)
    interceptors = server_layers("recommendation", policy, EventBus(), FaultTable())
    async with serving(register(fake), interceptors) as target:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = recommendation_pb2_grpc.RecommendationServiceStub(channel)
            first = stub.StreamRecommend(REQUEST, timeout=10)
            assert (await first.read()).rank == 1  # open, holding the one place
            second = stub.StreamRecommend(REQUEST, timeout=10)
            assert await second.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert dict(await second.trailing_metadata())["grpc-retry-pushback-ms"] == "150"
            assert "1 streams in flight" in await second.details()
            # Streams have places of their own: the unary call's one place is still free.
            popular = await stub.Popular(recommendation_pb2.PopularRequest(limit=1), timeout=10)
            assert popular.source == "popular"
            release.set()
            assert (await first.read()).rank == 2
            assert await first.read() is grpc.aio.EOF
            third = stub.StreamRecommend(REQUEST, timeout=10)
            assert [i.rank async for i in third] == [1, 2]  # the place was given back
    assert fake.attempts == 2  # the shed stream never reached the handler
