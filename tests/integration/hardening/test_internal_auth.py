"""The services behind the gateway on a shared host (review round 4, item 5): with the mesh's
internal token set, a local process that calls recommendation or profile straight on its port,
with or without `resilience-criticality: CRITICAL_PLUS`, is refused and not counted, so it can
neither take their capacity at the gateway's expense nor read a profile; the gateway's own calls,
which carry the token on every edge (gateway -> recommendation -> profile), go on as before.
Health stays open for readiness probes."""

from __future__ import annotations

import secrets
from collections import Counter

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_aio_resilience.criticality import METADATA_KEY
from grpc_resilience_mesh.services.runtime.internal_auth import TOKEN_ENV, internal_metadata
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    recommendation_pb2,
    recommendation_pb2_grpc,
)
from tests.integration.hardening.inproc_services import Served, serving
from tests.support.polling import await_until

KEY = "internal-auth-test-key"
TOKEN = secrets.token_urlsafe(32)
RECOMMEND = "/mesh.v1.RecommendationService/Recommend"
GET_PROFILE = "/mesh.v1.ProfileService/GetProfile"
GET_HOME = "/mesh.v1.Gateway/GetHome"
UPGRADE = ((METADATA_KEY, "CRITICAL_PLUS"),)


@pytest.fixture
async def served() -> Served:  # type: ignore[misc]
    async with serving(env={"MESH_API_KEYS": KEY, TOKEN_ENV: TOKEN}) as running:
        yield running


async def _recommend(addr: str, metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = recommendation_pb2_grpc.RecommendationServiceStub(channel)
        try:
            await stub.Recommend(
                recommendation_pb2.RecommendRequest(user_id="u-0001", limit=3),
                metadata=metadata,
                timeout=10,
            )
        except grpc.aio.AioRpcError as err:
            return err.code()
    return grpc.StatusCode.OK


async def _counted(served: Served, name: str, method: str) -> int:
    return sum((await served.server_calls(name, method)).values())


async def test_a_caller_without_the_token_is_refused_uncounted_whatever_its_criticality(
    served: Served,
) -> None:
    addr = served.listen["recommendation"]
    before = await _counted(served, "recommendation", RECOMMEND)
    wrong = (("authorization", f"Bearer {secrets.token_urlsafe(32)}"),)
    codes = Counter([await _recommend(addr, UPGRADE) for _ in range(5)])
    codes[await _recommend(addr, (*wrong, *UPGRADE))] += 1
    codes[await _recommend(addr, ())] += 1
    assert codes == {grpc.StatusCode.UNAUTHENTICATED: 7}
    assert await _counted(served, "recommendation", RECOMMEND) == before
    async with grpc.aio.insecure_channel(addr) as channel:
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=10
        )
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert await _recommend(addr, (*internal_metadata(TOKEN), *UPGRADE)) == grpc.StatusCode.OK


async def test_the_gateways_calls_carry_the_token_on_every_edge(served: Served) -> None:
    before = {
        "recommendation": Counter(await served.server_calls("recommendation", RECOMMEND)),
        "profile": Counter(await served.server_calls("profile", GET_PROFILE)),
    }
    async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
        reply = await gateway_pb2_grpc.GatewayStub(channel).GetHome(
            gateway_pb2.GetHomeRequest(user_id="u-0002", limit=3),
            metadata=(("authorization", f"Bearer {KEY}"),),
            timeout=10,
        )
        streamed = [
            product
            async for product in gateway_pb2_grpc.GatewayStub(channel).StreamRecommendations(
                gateway_pb2.GetHomeRequest(user_id="u-0002", limit=3),
                metadata=(("authorization", f"Bearer {KEY}"),),
                timeout=10,
            )
        ]
    assert list(reply.degraded) == []
    assert reply.profile.user_id == "u-0002" and len(reply.recommendations) == 3
    assert len(streamed) == 3  # a stream's attempt carries the token as a unary one does

    async def both_answered() -> bool:
        rec = Counter(await served.server_calls("recommendation", RECOMMEND))
        prof = Counter(await served.server_calls("profile", GET_PROFILE))
        rec.subtract(before["recommendation"])
        prof.subtract(before["profile"])
        return rec["OK"] >= 1 and prof["OK"] >= 2 and not (+rec).keys() - {"OK"}

    # profile answers the gateway and, for the ranking, recommendation: two hops with the token.
    await await_until(both_answered, timeout_s=10.0, what="recommendation and profile counting OK")
