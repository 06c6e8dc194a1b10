"""Recommendations that degrade: personalised -> popular -> the last good popular list -> none.

The popular list is the same for everyone, so the gateway keeps it: a fallback served while
the list is fresh (younger than `popular_ttl_s`) costs no call at all, and one refresh at a
time goes to `Popular` when it is stale. When `Popular` fails too, the last good list is
served however old it is ("cached-popular"); with none, recommendations are omitted.
"""

from __future__ import annotations

import asyncio

import grpc

from grpc_aio_resilience import (
    Clock,
    Criticality,
    EventBus,
    FallbackServed,
    SystemClock,
    set_criticality,
)
from grpc_resilience_mesh.services.runtime.edges import Edge
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    recommendation_pb2,
    recommendation_pb2_grpc,
)

RECOMMEND = "/mesh.v1.RecommendationService/Recommend"
RecommendationEdge = Edge[recommendation_pb2_grpc.RecommendationServiceStub]
"""Called through its `stub`, which a policy swap may replace
(grpc_resilience_mesh.services.runtime.edges)."""
POPULAR_LIMIT = 50


class PopularCache:
    """The last good popular list and when it was fetched; one refresh in flight at a time."""

    def __init__(self, edge: RecommendationEdge, ttl_s: float, clock: Clock) -> None:
        self._edge = edge
        self.ttl_s = ttl_s
        self._clock = clock
        self.products: list[recommendation_pb2.Product] = []
        self._fetched_s = float("-inf")
        self._refresh: asyncio.Task[list[recommendation_pb2.Product]] | None = None
        self.criticality = Criticality.SHEDDABLE
        """What a refresh carries, whoever's call started it: it only improves a degraded
        answer, so an overloaded recommendation sheds it first (policy
        `criticality.popular_refresh`)."""

    def fresh(self) -> bool:
        return bool(self.products) and self._clock.now() - self._fetched_s < self.ttl_s

    async def refresh(self) -> list[recommendation_pb2.Product]:
        """Call Popular (sharing a call already in flight); raises its error."""
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.create_task(self._fetch())
        return await asyncio.shield(self._refresh)

    async def _fetch(self) -> list[recommendation_pb2.Product]:
        set_criticality(self.criticality)  # this task's own context: nobody else's
        reply = await self._edge.stub.Popular(
            recommendation_pb2.PopularRequest(limit=POPULAR_LIMIT)
        )
        self.products = list(reply.products)
        self._fetched_s = self._clock.now()
        return self.products


class RecommendationsWithFallback:
    """Asks for personalised picks and, when they fail, serves the next simpler source.

    Each step that answers instead of the one asked is reported twice: in the response's
    `degraded` list (for the user) and as a FallbackServed event (for metrics and traces).
    """

    def __init__(
        self,
        edge: RecommendationEdge,
        bus: EventBus,
        popular_ttl_s: float = 30.0,
        clock: Clock | None = None,
    ) -> None:
        self._edge = edge
        self._bus = bus
        self.popular = PopularCache(edge, popular_ttl_s, clock or SystemClock())

    async def warm(self) -> None:
        """Best effort: fill the cache at start so a fallback has something to serve."""
        try:
            await self.popular.refresh()
        except grpc.aio.AioRpcError:
            return

    async def get(
        self, user_id: str, limit: int
    ) -> tuple[list[recommendation_pb2.Product], list[gateway_pb2.Degradation]]:
        try:
            reply = await self._edge.stub.Recommend(
                recommendation_pb2.RecommendRequest(user_id=user_id, limit=limit)
            )
            return list(reply.products), []
        except grpc.aio.AioRpcError as err:
            cause = err
        if self.popular.fresh():
            return self.popular.products[:limit], [self._degrade("popular", cause)]
        try:
            products = await self.popular.refresh()
        except grpc.aio.AioRpcError as popular_err:
            served_by = "cached-popular" if self.popular.products else "omitted"
            extra = f"popular also failed: {popular_err.code().name}"
            return self.popular.products[:limit], [self._degrade(served_by, cause, extra)]
        return products[:limit], [self._degrade("popular", cause)]

    def _degrade(
        self, served_by: str, cause: grpc.aio.AioRpcError, extra: str = ""
    ) -> gateway_pb2.Degradation:
        reason = (cause.details() or cause.code().name)[:200]
        if extra:
            reason = f"{reason}; {extra}"
        self._bus.emit(
            FallbackServed(
                dependency="recommendation",
                method=RECOMMEND,
                served_by=served_by,
                code=cause.code().name,
                reason=reason,
            )
        )
        return gateway_pb2.Degradation(
            part="recommendations", served_by=served_by, code=cause.code().name, reason=reason
        )
