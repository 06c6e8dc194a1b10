"""Gateway: the public API; composes profile, recommendation and payment."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import NoReturn

import grpc

from grpc_aio_resilience import ResilienceError, note_degraded
from grpc_resilience_mesh.services.contracts.charge_ids import charge_id_for, check_charge_lookup
from grpc_resilience_mesh.services.contracts.fields import (
    check_amount,
    check_currency,
    check_idempotency_key,
    check_limit,
    check_user_id,
    checked_fields,
)
from grpc_resilience_mesh.services.gateway.auth import ApiKeys, AuthInterceptor
from grpc_resilience_mesh.services.gateway.fallback import RecommendationsWithFallback
from grpc_resilience_mesh.services.gateway.ratelimit import RateLimitInterceptor, RateLimitPolicy
from grpc_resilience_mesh.services.gateway.streams import relay_stream
from grpc_resilience_mesh.services.runtime.edges import Edge
from grpc_resilience_mesh.services.runtime.relay import relay_failure
from grpc_resilience_mesh.services.runtime.server import Runtime, Service
from grpc_resilience_mesh.services.telemetry.tracing.public import PUBLIC_TRACEPARENT
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    payment_pb2,
    payment_pb2_grpc,
    profile_pb2,
    profile_pb2_grpc,
    recommendation_pb2,
    recommendation_pb2_grpc,
)

RELAYED = ("profile", "payment", "recommendation")
"""Dependencies whose failures a call may relay to the caller (GetHome degrades instead)."""

CALLER_ERRORS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.FAILED_PRECONDITION,
    }
)
"""Payment's answers about the request itself: passed on, never turned into PENDING."""


def charge_may_have_happened(err: grpc.aio.AioRpcError) -> bool:
    """False only when we know the request never reached payment (our own fast rejection)."""
    if err.code() in CALLER_ERRORS:
        return False
    if isinstance(err, ResilienceError):
        return err.attempts_sent > 0
    return True


class GatewayServicer(gateway_pb2_grpc.GatewayServicer):
    """GetHome degrades recommendations instead of failing; Checkout never charges twice."""

    def __init__(self, runtime: Runtime) -> None:
        # Each edge's stub follows its channel through a policy swap: call `edge.stub`.
        self._profiles = runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub)
        self._payments = runtime.edge("payment", payment_pb2_grpc.PaymentServiceStub)
        self._recommender = runtime.edge(
            "recommendation", recommendation_pb2_grpc.RecommendationServiceStub
        )
        self._relayed: dict[str, Edge[object]] = {
            dep: runtime.edges[dep] for dep in RELAYED
        }  # each edge says whether its calls are retried here, under the policy in force
        self._busy_pushback_ms = runtime.policy.server(runtime.config.name).shed_pushback_ms
        self.recommendations = RecommendationsWithFallback(
            self._recommender,
            runtime.bus,
            popular_ttl_s=runtime.policy.fallbacks.popular_ttl_s,
        )
        self.recommendations.popular.criticality = runtime.policy.criticality.for_popular_refresh()
        runtime.on_policy(lambda _: self._policy_changed(runtime))

    def _policy_changed(self, runtime: Runtime) -> None:
        self._busy_pushback_ms = runtime.policy.server(runtime.config.name).shed_pushback_ms
        self.recommendations.popular.ttl_s = runtime.policy.fallbacks.popular_ttl_s
        self.recommendations.popular.criticality = runtime.policy.criticality.for_popular_refresh()

    async def _relay(
        self,
        context: grpc.aio.ServicerContext,
        err: grpc.aio.AioRpcError,
        dependency: str,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> NoReturn:
        retried = self._relayed[dependency].retries
        await relay_failure(context, err, dependency, retried, self._busy_pushback_ms, trailers)

    async def StreamRecommendations(
        self, request: gateway_pb2.GetHomeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[recommendation_pb2.RankedProduct]:
        async with checked_fields(context):
            user_id = check_user_id(request.user_id)
            limit = check_limit(request.limit)

        async def relay(err: grpc.aio.AioRpcError, trailers: Sequence[tuple[str, str]]) -> None:
            await self._relay(context, err, "recommendation", trailers)

        async for item in relay_stream(self._recommender.stub, user_id, limit, relay):
            yield item

    async def GetHome(
        self, request: gateway_pb2.GetHomeRequest, context: grpc.aio.ServicerContext
    ) -> gateway_pb2.GetHomeResponse:
        async with checked_fields(context):
            user_id = check_user_id(request.user_id)
            limit = check_limit(request.limit)
        recs = asyncio.create_task(self.recommendations.get(user_id, limit))
        try:
            profile = await self._profiles.stub.GetProfile(
                profile_pb2.GetProfileRequest(user_id=user_id)
            )
        except grpc.aio.AioRpcError as err:
            recs.cancel()
            await self._relay(context, err, "profile")
        except asyncio.CancelledError:
            recs.cancel()
            raise
        products, degraded = await recs
        return gateway_pb2.GetHomeResponse(
            profile=profile.profile, recommendations=products, degraded=degraded
        )

    async def Checkout(
        self, request: gateway_pb2.CheckoutRequest, context: grpc.aio.ServicerContext
    ) -> gateway_pb2.CheckoutResponse:
        async with checked_fields(context):
            key = check_idempotency_key(request.idempotency_key)
            user_id = check_user_id(request.user_id)
            amount = check_amount(request.amount_cents)
            currency = check_currency(request.currency)
        charge = payment_pb2.ChargeRequest(
            user_id=user_id, amount_cents=amount, currency=currency, idempotency_key=key
        )
        try:
            reply = await self._payments.stub.Charge(charge)
        except grpc.aio.AioRpcError as err:
            if not charge_may_have_happened(err):
                await self._relay(context, err, "payment")
            note_degraded("payment", "pending")
            return gateway_pb2.CheckoutResponse(
                charge_id=charge_id_for(key),
                status=payment_pb2.CHARGE_STATUS_PENDING,
                decline_reason=f"outcome unknown ({err.code().name}): resolve with GetCharge",
            )
        return gateway_pb2.CheckoutResponse(
            charge_id=reply.charge.charge_id,
            status=reply.charge.status,
            decline_reason=reply.charge.decline_reason,
            replayed=reply.replayed,
        )

    async def GetCharge(
        self, request: payment_pb2.GetChargeRequest, context: grpc.aio.ServicerContext
    ) -> gateway_pb2.CheckoutResponse:
        async with checked_fields(context):
            charge_id, key = check_charge_lookup(request.charge_id, request.idempotency_key)
        lookup = payment_pb2.GetChargeRequest(charge_id=charge_id, idempotency_key=key)
        try:
            reply = await self._payments.stub.GetCharge(lookup)
        except grpc.aio.AioRpcError as err:
            await self._relay(context, err, "payment")
        return gateway_pb2.CheckoutResponse(
            charge_id=reply.charge.charge_id,
            status=reply.charge.status,
            decline_reason=reply.charge.decline_reason,
            replayed=True,
        )


async def build(runtime: Runtime) -> Service:
    keys = ApiKeys.from_env(runtime.environ)  # no keys and no MESH_AUTH=off: refuse to start
    rate_limit = RateLimitPolicy.from_env(runtime.environ)
    servicer = GatewayServicer(runtime)
    warm = asyncio.create_task(servicer.recommendations.warm())

    async def close() -> None:
        warm.cancel()

    return Service(
        names=[gateway_pb2.DESCRIPTOR.services_by_name["Gateway"].full_name],
        register=lambda server: gateway_pb2_grpc.add_GatewayServicer_to_server(servicer, server),
        close=close,
        front=[AuthInterceptor(keys)],  # a call without a valid key is refused, uncounted
        admission=[RateLimitInterceptor(rate_limit, keys)],  # refusals counted
        # A public client's resilience-criticality is ignored: each RPC gets the policy's.
        criticality=lambda method: runtime.policy.criticality.for_rpc(method),
        own_traces=PUBLIC_TRACEPARENT.read(runtime.environ) == "link",
    )
