"""Server streams over two real replicas: the ReplicaRouter opens each attempt of a stream on a
replica of its own choosing, as it does for unary calls. Streams alternate between replicas
named by host name (which gRPC's `ipv4:` round_robin cannot take), a dead replica gets none, a
retry before the first message goes to the other replica, a cancel still reaches the replica,
and a stream's outcome (before or after its messages) feeds outlier ejection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import replica_router, resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.errors import StreamBrokenError
from grpc_aio_resilience.events import Event, EventBus, ReplicaEjected, RetryScheduled, StreamEnded
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import recommendation_pb2_grpc
from tests.integration.resilience.servers import serving
from tests.integration.resilience.test_streams_wire import REQUEST, StreamFake, register
from tests.support.polling import await_until

NO_EJECTION = OutlierPolicy(enabled=False)


def by_name(target: str) -> str:
    """`localhost:PORT` for a server on 127.0.0.1: a host name, as Compose gives replicas."""
    return target.replace("127.0.0.1", "localhost")


@asynccontextmanager
async def replicas(*fakes: StreamFake) -> AsyncIterator[tuple[list[str], list[AsyncExitStack]]]:
    """The fakes' targets, and for each the stack whose aclose() kills that replica."""
    async with AsyncExitStack() as outer:
        stacks = [await outer.enter_async_context(AsyncExitStack()) for _ in fakes]
        targets = [
            await s.enter_async_context(serving(register(f)))
            for s, f in zip(stacks, fakes, strict=True)
        ]
        yield targets, stacks


class Edge:
    """A resilient channel to the replicas (several addresses: the router's), and its events."""

    def __init__(self, addresses: list[str], outlier: OutlierPolicy, attempts: int = 3) -> None:
        self.events: list[Event] = []
        bus = EventBus()
        bus.subscribe(self.events.append)
        policy = from_dict(
            EdgePolicy,
            {
                "deadline": {"total_s": 10.0, "attempt_s": 5.0},
                "retry": {
                    "max_attempts": attempts,
                    "base_backoff_s": 0.001,
                    "max_backoff_s": 0.002,
                    "budget": {"enabled": False},
                },
                "breaker": {"enabled": False},
                "bulkhead": {"enabled": False},
            },
        )
        clock = SystemClock()
        pipeline = build_pipeline(policy, dependency="recommendation", bus=bus, clock=clock)
        self.channel = resilient_channel(
            ",".join(addresses),
            ResilienceInterceptor(pipeline, dependency="recommendation", clock=clock),
            outlier=outlier,
            bus=bus,
            dependency="recommendation",
        )
        self.stub = recommendation_pb2_grpc.RecommendationServiceStub(self.channel)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def read_all(self) -> tuple[list[int], Any]:
        """The ranks received and the error that ended the stream (None when it completed)."""
        ranks: list[int] = []
        try:
            async for item in self.stub.StreamRecommend(REQUEST, timeout=5.0):
                ranks.append(item.rank)
        except grpc.aio.AioRpcError as err:
            return ranks, err
        return ranks, None

    async def close(self) -> None:
        router = replica_router(self.channel)
        if router is not None:
            await router.close()
        await self.channel.close()


FULL = [1, 2, 3, 4, 5]


def failed_attempts(outcomes: list[tuple[list[int], Any]], edge: Edge) -> str:
    """For a failure's message: each failed call's attempts, last first (retry chains each
    attempt's error to the one before as its __cause__), and the retries' reasons."""
    lines = []
    for i, (_, err) in enumerate(outcomes):
        chain = []
        while isinstance(err, grpc.aio.AioRpcError):
            chain.append(f"{err.code().name}: {err.details()}")
            err = err.__cause__
        if chain:
            lines.append(f"call {i}: " + " <- ".join(chain))
    retries = [e.reason for e in edge.of(RetryScheduled)]
    return "; ".join(lines) + f"; retries after {retries}"


@pytest.mark.parametrize("outlier", [False, True], ids=["no-ejection", "ejection"])
async def test_streams_alternate_between_replicas_named_by_host(outlier: bool) -> None:
    a, b = StreamFake(), StreamFake()
    async with replicas(a, b) as (targets, _):
        edge = Edge([by_name(t) for t in targets], OutlierPolicy(enabled=outlier))
        outcomes = [await edge.read_all() for _ in range(10)]
        await edge.close()
    assert outcomes == [(FULL, None)] * 10
    assert a.attempts + b.attempts == 10
    assert min(a.attempts, b.attempts) >= 4  # round robin: both serve about half


@pytest.mark.parametrize("outlier", [False, True], ids=["no-ejection", "ejection"])
async def test_with_one_replica_killed_every_stream_goes_to_the_other(outlier: bool) -> None:
    a, b = StreamFake(), StreamFake()
    async with replicas(a, b) as (targets, stacks):
        edge = Edge([by_name(t) for t in targets], OutlierPolicy(enabled=outlier))
        for _ in range(2):  # both replicas connected and serving
            assert await edge.read_all() == (FULL, None)
        assert a.attempts == b.attempts == 1
        await stacks[0].aclose()  # replica A is gone
        outcomes = [await edge.read_all() for _ in range(10)]
        await edge.close()
    # None fails: a stream whose first attempt met the dead replica (before its connection
    # was known to be down) was retried once, on the other one, before any message.
    assert outcomes == [(FULL, None)] * 10
    assert b.attempts == 1 + 10
    assert all(r.attempt == 1 for r in edge.of(RetryScheduled))
    ended = edge.of(StreamEnded)[2:]
    retried = [e for e in ended if e.outcome == "retried-before-first-message"]
    assert len(retried) == len(edge.of(RetryScheduled))
    assert all(e.outcome == "committed" for e in ended if e not in retried)


async def test_a_stream_retried_before_its_first_message_goes_to_the_other_replica() -> None:
    """Concurrent streams move the rotation between a stream's attempts; its retry still
    avoids the replica its first attempt failed on (2 attempts: a retry there would fail)."""

    async def refuse(n: int, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAVAILABLE, "reset before the first message")

    broken, healthy = StreamFake(before=refuse), StreamFake()
    async with replicas(broken, healthy) as (targets, _):
        edge = Edge([by_name(t) for t in targets], NO_EJECTION, attempts=2)
        outcomes = []
        for _ in range(4):
            outcomes += await asyncio.gather(*(edge.read_all() for _ in range(8)))
        await edge.close()
    assert outcomes == [(FULL, None)] * 32
    assert healthy.attempts == 32
    assert len(edge.of(RetryScheduled)) == broken.attempts >= 1
    # gRFC A6's header: each stream that met the broken replica came to the healthy one as a
    # retry of its first attempt.
    assert healthy.previous_attempts.count("1") == broken.attempts
    retried = [e for e in edge.of(StreamEnded) if e.outcome == "retried-before-first-message"]
    assert len(retried) == broken.attempts


async def test_a_callers_cancel_cancels_the_stream_on_its_replica_and_ejects_nothing() -> None:
    async def hold_after_first(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == 1:
            await asyncio.sleep(30)

    a, b = StreamFake(before=hold_after_first), StreamFake(before=hold_after_first)
    one_failure_ejects = OutlierPolicy(enabled=True, consecutive_failures=1, base_ejection_s=30)
    async with replicas(a, b) as (targets, _):
        edge = Edge([by_name(t) for t in targets], one_failure_ejects)

        async def cancel_after_first(seen: int) -> None:
            call = edge.stub.StreamRecommend(REQUEST, timeout=20.0)
            assert (await call.read()).rank == 1
            call.cancel()  # the caller goes away mid-stream
            await await_until(
                lambda: a.cancelled + b.cancelled == seen, timeout_s=15, what="replica saw cancel"
            )

        await cancel_after_first(1)
        await cancel_after_first(2)
        a.before = b.before = None
        outcomes = [await edge.read_all() for _ in range(4)]
        await edge.close()
    assert (a.cancelled, b.cancelled) == (1, 1)  # one stream on each replica
    assert outcomes == [(FULL, None)] * 4
    assert (a.attempts, b.attempts) == (3, 3)
    assert edge.of(ReplicaEjected) == []  # a cancel says nothing about the replica


@pytest.mark.parametrize("cut_at", [0, 2], ids=["before-first-message", "after-two-messages"])
@pytest.mark.parametrize("named", [False, True], ids=["ipv4", "host-names"])
async def test_a_replica_whose_streams_fail_is_ejected_and_gets_no_more(
    cut_at: int, named: bool
) -> None:
    """Before its first message a broken stream is retried on the other replica; after it, the
    caller gets what arrived and the error. Either way the replica failed, and 2 such failures
    in a row eject it (with `ipv4:` addresses too, where gRPC's round_robin would ignore it)."""

    async def cut(n: int, context: grpc.aio.ServicerContext) -> None:
        if n == cut_at:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"reset after {n} messages")

    broken, healthy = StreamFake(before=cut), StreamFake()
    policy = OutlierPolicy(enabled=True, consecutive_failures=2, base_ejection_s=30)
    async with replicas(broken, healthy) as (targets, _):
        edge = Edge([by_name(t) if named else t for t in targets], policy)
        outcomes = [await edge.read_all() for _ in range(10)]
        await edge.close()
    why = failed_attempts(outcomes, edge)
    assert [(e.replica, e.reason) for e in edge.of(ReplicaEjected)] == [
        (edge_target, "consecutive_failures")
        for edge_target in [by_name(targets[0]) if named else targets[0]]
    ], why
    assert broken.attempts == 2, why  # ejected after its second failure: nothing more reaches it
    if cut_at == 0:
        assert outcomes == [(FULL, None)] * 10, why
        assert healthy.attempts == 10
    else:
        failed = [(ranks, err) for ranks, err in outcomes if err is not None]
        assert [ranks for ranks, _ in failed] == [[1, 2], [1, 2]]  # what arrived stands
        assert all(isinstance(err, StreamBrokenError) for _, err in failed)
        assert healthy.attempts == 8
