"""RecommendationService: personalised picks (via ProfileService) and popular items."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext

import grpc

from grpc_aio_resilience import Clock, EventBus, PoolFullError, SystemClock
from grpc_resilience_mesh.services.contracts.fields import (
    check_limit,
    check_user_id,
    checked_fields,
)
from grpc_resilience_mesh.services.customers import Product, customers
from grpc_resilience_mesh.services.policy.pool import PoolPolicy
from grpc_resilience_mesh.services.runtime.edges import Edge
from grpc_resilience_mesh.services.runtime.refusal import abort
from grpc_resilience_mesh.services.runtime.relay import relay_failure
from grpc_resilience_mesh.services.runtime.server import Runtime, Service
from grpc_resilience_mesh.services.runtime.worker_pool import WorkerPool
from grpc_resilience_mesh.services.v1 import (
    profile_pb2,
    profile_pb2_grpc,
    recommendation_pb2,
    recommendation_pb2_grpc,
)


def _product(p: Product, score: float) -> recommendation_pb2.Product:
    return recommendation_pb2.Product(
        product_id=p.product_id,
        title=p.title,
        category=p.category,
        price_cents=p.price_cents,
        score=round(score, 4),
    )


def personalised(interests: list[str], limit: int) -> list[recommendation_pb2.Product]:
    """Rank products by popularity weighted by how high the category is in the interests."""
    weight = {c: 1.0 - 0.25 * i for i, c in enumerate(interests)}
    scored = [
        (p.popularity * weight[p.category], p) for p in customers().products if p.category in weight
    ]
    scored.sort(key=lambda sp: (-sp[0], sp[1].product_id))
    return [_product(p, s) for s, p in scored[:limit]]


def popular(limit: int) -> list[recommendation_pb2.Product]:
    return [_product(p, p.popularity) for p in customers().products[:limit]]


class DeclaredCapacity:
    """The recommendation's declared worker pool (policy `servers.recommendation.pool`), if
    any: a new pool when its settings change (calls on the old one finish there). `slowdown`
    multiplies its service times (the fault table's service_time_factor)."""

    def __init__(
        self,
        bus: EventBus,
        clock: Clock | None = None,
        slowdown: Callable[[], float] | None = None,
    ) -> None:
        self._bus = bus
        self._clock = clock or SystemClock()
        self._slowdown = slowdown
        self.pool: WorkerPool | None = None

    def update(self, policy: PoolPolicy) -> None:
        if self.pool is not None and self.pool.policy == policy:
            return
        self.pool = None
        if policy.workers:
            self.pool = WorkerPool("recommendation", policy, self._clock, self._bus, self._slowdown)

    def work(self, context: grpc.aio.ServicerContext) -> AbstractAsyncContextManager[None]:
        """A worker's service time (or nothing without a pool); a full pool ends the call with
        RESOURCE_EXHAUSTED."""
        pool = self.pool
        if pool is None:
            return _NO_POOL  # every call of a mesh without a declared pool: nothing to build
        return _pooled(pool, context)


_NO_POOL: AbstractAsyncContextManager[None] = nullcontext()


@asynccontextmanager
async def _pooled(pool: WorkerPool, context: grpc.aio.ServicerContext) -> AsyncIterator[None]:
    """Holds one of the pool's workers for the call's service time."""
    try:
        pool.check_room()
    except PoolFullError as err:
        await abort(context, err.code(), err.details())
    async with pool.work():
        yield


class RecommendationServicer(recommendation_pb2_grpc.RecommendationServiceServicer):
    """Recommend crosses a second hop (to profile); Popular is the cheap fallback source.
    Both hold a worker of the declared pool, when there is one, for each call."""

    def __init__(
        self,
        profiles: Edge[profile_pb2_grpc.ProfileServiceStub],
        capacity: DeclaredCapacity | None = None,
    ) -> None:
        self._profiles = profiles
        self.capacity = capacity or DeclaredCapacity(EventBus())

    async def _ranked(
        self, request: recommendation_pb2.RecommendRequest, context: grpc.aio.ServicerContext
    ) -> list[recommendation_pb2.Product]:
        """The user's personalised ranking (validated request, profile read through its edge)."""
        async with checked_fields(context):
            user_id = check_user_id(request.user_id)
            limit = check_limit(request.limit)
        try:
            reply = await self._profiles.stub.GetProfile(
                profile_pb2.GetProfileRequest(user_id=user_id)
            )
        except grpc.aio.AioRpcError as err:
            # Retried here: then our callers are told not to retry it again.
            spent_s = self._profiles.policy.deadline.min_attempt_s
            await relay_failure(context, err, "profile", self._profiles.retries, spent_s=spent_s)
        async with self.capacity.work(context):
            return personalised(list(reply.profile.interests), limit)

    async def Recommend(
        self, request: recommendation_pb2.RecommendRequest, context: grpc.aio.ServicerContext
    ) -> recommendation_pb2.RecommendResponse:
        products = await self._ranked(request, context)
        return recommendation_pb2.RecommendResponse(products=products, source="personalised")

    async def StreamRecommend(
        self, request: recommendation_pb2.RecommendRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        """Recommend's answer one product at a time, best first: the caller can show each as it
        comes, and a stream cut after some has those."""
        for rank, product in enumerate(await self._ranked(request, context), 1):
            yield recommendation_pb2.RankedProduct(product=product, rank=rank)

    async def Popular(
        self, request: recommendation_pb2.PopularRequest, context: grpc.aio.ServicerContext
    ) -> recommendation_pb2.RecommendResponse:
        async with checked_fields(context):
            limit = check_limit(request.limit)
        async with self.capacity.work(context):
            return recommendation_pb2.RecommendResponse(products=popular(limit), source="popular")


async def build(runtime: Runtime) -> Service:
    capacity = DeclaredCapacity(runtime.bus, slowdown=runtime.faults.service_time_factor)
    capacity.update(runtime.policy.server("recommendation").pool)
    servicer = RecommendationServicer(
        runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub), capacity=capacity
    )

    def policy_changed(_: object) -> None:
        capacity.update(runtime.policy.server("recommendation").pool)

    runtime.on_policy(policy_changed)
    return Service(
        names=[recommendation_pb2.DESCRIPTOR.services_by_name["RecommendationService"].full_name],
        register=lambda server: recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(
            servicer, server
        ),
    )
