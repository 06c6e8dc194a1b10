"""The gateway's recommendations degrade personalised -> popular -> cached-popular -> omitted,
each step reported in `degraded` and as a FallbackServed event. A fake stub, a fake clock."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.events import Event, EventBus, FallbackServed
from grpc_resilience_mesh.services.gateway.fallback import (
    POPULAR_LIMIT,
    RecommendationsWithFallback,
)
from grpc_resilience_mesh.services.v1 import recommendation_pb2
from tests.support.fake_clock import FakeClock

TTL_S = 30.0


def products(*ids: str) -> list[recommendation_pb2.Product]:
    return [recommendation_pb2.Product(product_id=i) for i in ids]


def failure(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


class FakeStub:
    """Answers Recommend and Popular with what the test sets (a product list or an error)."""

    def __init__(self) -> None:
        self.recommend: list[recommendation_pb2.Product] | grpc.aio.AioRpcError = []
        self.popular: list[recommendation_pb2.Product] | grpc.aio.AioRpcError = []
        self.popular_calls: list[int] = []

    async def Recommend(
        self, request: recommendation_pb2.RecommendRequest
    ) -> recommendation_pb2.RecommendResponse:
        if isinstance(self.recommend, grpc.aio.AioRpcError):
            raise self.recommend
        return recommendation_pb2.RecommendResponse(products=self.recommend[: request.limit])

    async def Popular(
        self, request: recommendation_pb2.PopularRequest
    ) -> recommendation_pb2.RecommendResponse:
        self.popular_calls.append(request.limit)
        if isinstance(self.popular, grpc.aio.AioRpcError):
            raise self.popular
        return recommendation_pb2.RecommendResponse(products=self.popular)


def make() -> tuple[RecommendationsWithFallback, FakeStub, FakeClock, list[Event]]:
    stub, clock, bus = FakeStub(), FakeClock(), EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    edge = SimpleNamespace(stub=stub)  # what the fallback reads of its Edge
    recs = RecommendationsWithFallback(edge, bus, popular_ttl_s=TTL_S, clock=clock)  # type: ignore[arg-type]
    return recs, stub, clock, seen


def ids(items: list[Any]) -> list[str]:
    return [p.product_id for p in items]


async def test_personalised_picks_when_recommend_answers() -> None:
    recs, stub, _, seen = make()
    stub.recommend = products("p1", "p2", "p3")
    got, degraded = await recs.get("u-0001", 2)
    assert (ids(got), list(degraded), seen) == (["p1", "p2"], [], [])
    assert stub.popular_calls == []


async def test_popular_when_recommend_fails() -> None:
    recs, stub, _, seen = make()
    stub.recommend = failure(grpc.StatusCode.UNAVAILABLE, "recommendation: down")
    stub.popular = products("a", "b", "c")
    got, degraded = await recs.get("u-0001", 2)
    assert ids(got) == ["a", "b"]
    [d] = degraded
    assert (d.part, d.served_by, d.code, d.reason) == (
        "recommendations",
        "popular",
        "UNAVAILABLE",
        "recommendation: down",
    )
    assert stub.popular_calls == [POPULAR_LIMIT]
    [event] = seen
    assert isinstance(event, FallbackServed)
    assert (event.served_by, event.code) == ("popular", "UNAVAILABLE")


async def test_a_fresh_popular_list_is_served_without_a_call_and_a_stale_one_is_refreshed() -> None:
    recs, stub, clock, _ = make()
    stub.recommend = failure(grpc.StatusCode.DEADLINE_EXCEEDED, "")
    stub.popular = products("a")
    await recs.warm()
    assert stub.popular_calls == [POPULAR_LIMIT]
    clock.advance(TTL_S - 1)
    got, degraded = await recs.get("u-0001", 5)
    assert (ids(got), [d.served_by for d in degraded]) == (["a"], ["popular"])
    assert degraded[0].reason == "DEADLINE_EXCEEDED"  # no details: the code names the cause
    assert stub.popular_calls == [POPULAR_LIMIT]  # fresh: no call
    clock.advance(2)
    stub.popular = products("b")
    got, _ = await recs.get("u-0001", 5)
    assert ids(got) == ["b"]
    assert stub.popular_calls == [POPULAR_LIMIT, POPULAR_LIMIT]  # stale: refreshed


async def test_the_last_good_list_when_popular_fails_too_however_old() -> None:
    recs, stub, clock, seen = make()
    stub.popular = products("a", "b")
    await recs.warm()
    clock.advance(10 * TTL_S)
    stub.recommend = failure(grpc.StatusCode.UNAVAILABLE, "down")
    stub.popular = failure(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy")
    got, degraded = await recs.get("u-0001", 1)
    assert ids(got) == ["a"]
    [d] = degraded
    assert (d.served_by, d.reason) == (
        "cached-popular",
        "down; popular also failed: RESOURCE_EXHAUSTED",
    )
    assert [e.served_by for e in seen if isinstance(e, FallbackServed)] == ["cached-popular"]


async def test_omitted_when_nothing_was_ever_fetched() -> None:
    recs, stub, _, _ = make()
    stub.recommend = failure(grpc.StatusCode.UNAVAILABLE, "down")
    stub.popular = failure(grpc.StatusCode.UNAVAILABLE, "also down")
    await recs.warm()  # best effort: a failure is swallowed
    got, degraded = await recs.get("u-0001", 3)
    assert got == []
    assert [(d.served_by, d.code) for d in degraded] == [("omitted", "UNAVAILABLE")]
