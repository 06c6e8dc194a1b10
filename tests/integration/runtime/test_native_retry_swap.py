"""SetPolicy switches gRPC's own retries on and off in a running service, with no restart:
new calls take the new channel, calls already in flight finish on the old one (their retries
included), and the old channel closes once they have.

Recommendation, served by serve() in this process, calls a fake profile on 127.0.0.1:0 that
records each attempt and its `grpc-previous-rpc-attempts` (gRFC A6: gRPC's own retries send it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.services.recommendation import servicer as recommendation
from grpc_resilience_mesh.services.runtime.server import Runtime, Service, serve
from grpc_resilience_mesh.services.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    profile_pb2,
    recommendation_pb2,
)
from grpc_resilience_mesh.services.v1 import recommendation_pb2_grpc as rec_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving
from tests.support.polling import await_until

EDGE = """
  deadline: {total_s: 5.0, attempt_s: 5.0}
  breaker: {enabled: false}
  bulkhead: {enabled: false}
"""
OWN = f"""name: own-retries
edge_defaults:{EDGE}
  retry: {{max_attempts: 3, base_backoff_s: 0.01, max_backoff_s: 0.02, budget: {{enabled: false}}}}
"""
NATIVE = f"""name: grpc-native
edge_defaults:{EDGE}
  retry: {{max_attempts: 1}}
  native_retry: {{enabled: true, max_attempts: 3, initial_backoff_s: 0.01, max_backoff_s: 0.02,
                 max_tokens: 1000, token_ratio: 1}}
"""
SINGLE = f"""name: one-attempt
edge_defaults:{EDGE}
  retry: {{max_attempts: 1}}
"""
DOWN = "u-0404"
"""Profile answers this user with UNAVAILABLE, every attempt."""
HELD = ("u-0901", "u-0902", "u-0903", "u-0904")
"""Profile holds these users' first attempt until released, then fails it (UNAVAILABLE); any
later attempt succeeds: a call in flight across the swap that needs its retry."""


@dataclass
class Profile:
    """The fake dependency's script and what it saw."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    """(user, grpc-previous-rpc-attempts) of every attempt received."""
    holding: set[str] = field(default_factory=set)
    """The held users whose first attempt arrived (and is held, or failed)."""

    def next_round(self) -> None:
        self.release.clear()
        self.seen.clear()
        self.holding.clear()

    def attempts(self, user: str) -> list[str | None]:
        return [previous for who, previous in self.seen if who == user]

    async def __call__(
        self, request: profile_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> None:
        metadata = dict(context.invocation_metadata() or ())
        previous = metadata.get("grpc-previous-rpc-attempts")
        self.seen.append((request.user_id, str(previous) if previous is not None else None))
        if request.user_id == DOWN:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "profile is down")
        if request.user_id in HELD and request.user_id not in self.holding:
            self.holding.add(request.user_id)
            await self.release.wait()
            await context.abort(grpc.StatusCode.UNAVAILABLE, "dropped")


@dataclass
class Served:
    runtime: Runtime
    listen: str
    admin: str


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Served, Profile]]:
    script = Profile()
    async with serving(profile_servicer(ProfileFake(script))) as profile_addr:
        policy = tmp_path / "own.yaml"
        policy.write_text(OWN)
        listen, admin, metrics = (f"127.0.0.1:{p}" for p in free_ports(3))
        env = {
            "LISTEN_ADDR": listen,
            "ADMIN_ADDR": admin,
            "METRICS_ADDR": metrics,
            "PROFILE_ADDR": profile_addr,
            "MESH_POLICY": str(policy),
            "MESH_TRACING": "0",
            "SHUTDOWN_GRACE_S": "5",
        }
        runtimes: list[Runtime] = []

        async def build(runtime: Runtime) -> Service:
            runtimes.append(runtime)
            return await recommendation.build(runtime)

        stop = asyncio.Event()
        task = asyncio.create_task(serve("recommendation", build, env, stop_event=stop))
        try:
            async with grpc.aio.insecure_channel(listen) as channel:
                await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), wait_for_ready=True, timeout=15
                )
            yield Served(runtimes[0], listen, admin), script
        finally:
            script.release.set()
            stop.set()
            await asyncio.wait_for(task, timeout=20)


async def set_policy(admin: str, text: str) -> str:
    async with grpc.aio.insecure_channel(admin) as channel:
        stub = admin_pb2_grpc.PolicyAdminStub(channel)
        await stub.SetPolicy(admin_pb2.SetPolicyRequest(yaml=text), timeout=5)
        info = await stub.GetPolicy(admin_pb2.GetPolicyRequest(), timeout=5)
        return str(info.name)


async def recommend(stub: rec_grpc.RecommendationServiceStub, user: str) -> grpc.StatusCode:
    try:
        await stub.Recommend(recommendation_pb2.RecommendRequest(user_id=user, limit=3), timeout=10)
    except grpc.aio.AioRpcError as err:
        return err.code()
    return grpc.StatusCode.OK


async def test_set_policy_turns_grpc_retries_on_and_off_while_calls_are_in_flight(
    served: tuple[Served, Profile],
) -> None:
    service, profile = served
    async with grpc.aio.insecure_channel(service.listen) as channel:
        stub = rec_grpc.RecommendationServiceStub(channel)

        # Our own retries (the interceptor's): 3 attempts, none marked by gRPC.
        assert await recommend(stub, DOWN) != grpc.StatusCode.OK
        assert profile.attempts(DOWN) == [None, None, None]

        # In flight on the first channel: four calls whose first attempt is held.
        first_channel = service.runtime.edges["profile"].channel
        held = [asyncio.create_task(recommend(stub, user)) for user in HELD]
        await await_until(lambda: profile.holding == set(HELD), 10, "the held calls at profile")
        assert await set_policy(service.admin, NATIVE) == "grpc-native"
        assert service.runtime.edges["profile"].channel is not first_channel

        # New calls: gRPC's own retries, each retry numbered on the wire.
        profile.seen.clear()
        assert await recommend(stub, DOWN) != grpc.StatusCode.OK
        assert profile.attempts(DOWN) == [None, "1", "2"]

        # The held calls fail their first attempt now; the interceptor retries each on the
        # channel they started on, still open, and all four answer.
        profile.release.set()
        assert await asyncio.gather(*held) == [grpc.StatusCode.OK] * 4
        assert all(profile.attempts(u) == [None] for u in HELD)  # their retries: after clear()
        await await_until(
            lambda: not len(service.runtime.edges.retiring), 10, "the old channel closed"
        )
        assert first_channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN

        # And off again, with calls in flight that now need gRPC's own retry on the old channel.
        profile.next_round()
        native_channel = service.runtime.edges["profile"].channel
        held = [asyncio.create_task(recommend(stub, user)) for user in HELD]
        await await_until(lambda: profile.holding == set(HELD), 10, "the held calls at profile")
        assert await set_policy(service.admin, SINGLE) == "one-attempt"
        profile.release.set()
        assert await asyncio.gather(*held) == [grpc.StatusCode.OK] * 4
        assert all(profile.attempts(u) == [None, "1"] for u in HELD)
        profile.seen.clear()
        assert await recommend(stub, DOWN) != grpc.StatusCode.OK
        assert profile.attempts(DOWN) == [None]
        await await_until(
            lambda: not len(service.runtime.edges.retiring), 10, "the old channel closed"
        )
        assert native_channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN
