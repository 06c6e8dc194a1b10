"""One caller's too-short deadlines are not the dependency's failure (hardening round 4, item 3).

A real gateway -> recommendation -> profile chain on loopback: the gateway's recommendation
edge under the `full` policy (breaker per method, client throttle, retry budget) and
RecommendationsWithFallback as GetHome uses it; recommendation's real server layers under each
admission policy of the overload lesson, its real profile edge and relay. A Recommend normally
needs RECOMMEND_WORK_S of recommendation's own, then its profile read (PROFILE_S). One caller
sends 150 calls/s with 40 ms deadlines (shorter than that), another 20 calls/s with a normal
deadline: the second's homes stay personalised during the attack and all of them are within
2 s of its end.

Before the fix the 40 ms calls came back as failures the shared edge counted: a deadline-aware
refusal (RESOURCE_EXHAUSTED, pushback), and recommendation relaying the profile read it could
not start in the caller's last milliseconds as UNAVAILABLE (pushback -1); five in a row opened
the gateway's breaker for everyone.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import grpc.aio
import pytest

from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.deadline import reset_inbound_deadline, set_inbound_deadline
from grpc_aio_resilience.events import (
    BreakerStateChanged,
    CallShed,
    ClientThrottled,
    Event,
    EventBus,
)
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.faults.injection import FaultSpec, FaultTable
from grpc_resilience_mesh.services.gateway.fallback import RECOMMEND, RecommendationsWithFallback
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.policy.model import MeshPolicy
from grpc_resilience_mesh.services.recommendation.servicer import RecommendationServicer
from grpc_resilience_mesh.services.runtime.edges import Edge
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc, recommendation_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving

RECOMMEND_WORK_S = 0.036
"""Recommendation's own work before its profile read (a fault-table delay): a 40 ms call
reaches the read with less than the 5 ms `min_attempt_s` its profile edge starts one with."""
PROFILE_S = 0.02
ATTACK_PER_S, ATTACK_DEADLINE_S = 150.0, 0.04
USER_PER_S, USER_DEADLINE_S = 20.0, 2.0
WARM_S, ATTACK_S, AFTER_S = 0.5, 2.0, 3.0
ATTACK = (WARM_S, WARM_S + ATTACK_S)
END_S = ATTACK[1] + AFTER_S
RECOVERED_AFTER_S = 2.0
"""From this long after the attack's end every home of the other user is personalised."""
S = TypeVar("S")
EDGE_ACTED = (BreakerStateChanged, ClientThrottled)

ADMISSION = {
    "static": {},  # full's server_defaults: max_in_flight 64
    "vegas": {"LIMIT": "{algorithm: vegas, window: {enabled: true}}"},
    "gradient2": {"LIMIT": "{algorithm: gradient2, window: {enabled: true}}"},
    "deadline-aware": {"LIMIT": "{deadline_aware: true}", "QUEUE": "{discipline: fifo}"},
}
"""The overload lesson's admission policies on recommendation, over `full`."""


def _policy(admission: str) -> MeshPolicy:
    env = {f"MESH_POLICY__RECOMMENDATION__{k}": v for k, v in ADMISSION[admission].items()}
    return load_policy("full", env)


def _edge(
    policy: MeshPolicy,
    caller: str,
    dependency: str,
    target: str,
    bus: EventBus,
    make_stub: Callable[[grpc.aio.Channel], S],
) -> Edge[S]:
    """The edge `caller` -> `dependency` under `policy`, built as a service builds it."""
    edge_policy = policy.edge(f"{caller}_to_{dependency}")
    pipeline = build_pipeline(edge_policy, dependency=dependency, bus=bus)
    interceptor = ResilienceInterceptor(pipeline, dependency=dependency, clock=SystemClock())
    channel = resilient_channel(target, interceptor)
    return Edge(dependency, edge_policy, interceptor, channel, make_stub)


@asynccontextmanager
async def _chain(
    admission: str, sheds: list[str], edge_acted: list[Event]
) -> AsyncIterator[RecommendationsWithFallback]:
    """Profile, recommendation under `admission`, and the gateway's side of the chain; what
    recommendation refused (by reason), and what the gateway's edge did (breaker, throttle)."""
    policy = _policy(admission)

    async def slow(_: profile_pb2.GetProfileRequest, __: grpc.aio.ServicerContext) -> None:
        await asyncio.sleep(PROFILE_S)

    rec_bus, gateway_bus = EventBus(), EventBus()
    rec_bus.subscribe(lambda e: sheds.append(e.reason) if isinstance(e, CallShed) else None)
    gateway_bus.subscribe(lambda e: edge_acted.append(e) if isinstance(e, EDGE_ACTED) else None)
    async with serving(profile_servicer(ProfileFake(slow))) as profile:
        stub = profile_pb2_grpc.ProfileServiceStub
        profiles = _edge(policy, "recommendation", "profile", profile, rec_bus, stub)
        servicer = RecommendationServicer(profiles)
        work = FaultSpec.parse(RECOMMEND, 0.0, "UNAVAILABLE", RECOMMEND_WORK_S, -1)
        rec_policy = policy.server("recommendation")
        layers = server_layers("recommendation", rec_policy, rec_bus, FaultTable([work]))

        def register(server: grpc.aio.Server) -> None:
            recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(servicer, server)

        async with serving(register, layers) as recommendation:
            recs_stub = recommendation_pb2_grpc.RecommendationServiceStub
            edge = _edge(
                policy, "gateway", "recommendation", recommendation, gateway_bus, recs_stub
            )
            try:
                recs = RecommendationsWithFallback(edge, gateway_bus)
                await recs.warm()
                yield recs
            finally:
                await edge.channel.close()
                await profiles.channel.close()


@dataclass
class Homes:
    """For each home: when it was asked for (seconds from the run's start), and whether it
    came back personalised."""

    asked: list[tuple[float, bool]] = field(default_factory=list)

    def share(self, from_s: float, to_s: float) -> tuple[float, int]:
        """The personalised share of the homes asked for in [from_s, to_s), and their number."""
        picked = [p for s, p in self.asked if from_s <= s < to_s]
        return (sum(picked) / len(picked) if picked else 0.0), len(picked)


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """The deadline of the GetHome the gateway serves, as its inbound layer sets it."""
    token = set_inbound_deadline(time.monotonic() + seconds)
    try:
        yield
    finally:
        reset_inbound_deadline(token)


async def _open_loop(
    recs: RecommendationsWithFallback,
    homes: Homes,
    t0: float,
    window: tuple[float, float],
    per_s: float,
    deadline_s: float,
) -> None:
    """Starts a home every 1 / per_s seconds over `window` (from t0), whatever the answers.
    A start the loop is already a whole interval late for is skipped, not made up in a burst:
    on a starved machine a burst of 40 ms calls would fill the edge's bulkhead, which is not
    what this test is about."""

    async def one(n: int) -> None:
        started_s = time.monotonic() - t0
        with _deadline(deadline_s):
            _, degraded = await recs.get(f"u-{n % 200 + 1:04d}", 5)
        homes.asked.append((started_s, not degraded))

    start_s, end_s = window
    tasks: list[asyncio.Task[None]] = []
    for n in range(round((end_s - start_s) * per_s)):
        delay_s = t0 + start_s + n / per_s - time.monotonic()
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        elif delay_s < -1 / per_s:
            continue
        tasks.append(asyncio.create_task(one(n)))
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=USER_DEADLINE_S + 10)


async def _run(admission: str) -> tuple[Homes, Homes, list[str], list[Event]]:
    """The other user's homes, the attacker's, recommendation's refusals by reason, and what
    the gateway's edge did about it: its breaker opening, its throttle rejecting."""
    sheds: list[str] = []
    user, attacker = Homes(), Homes()
    edge_acted: list[Event] = []
    async with _chain(admission, sheds, edge_acted) as recs:
        t0 = time.monotonic()
        await asyncio.gather(
            _open_loop(recs, user, t0, (0.0, END_S), USER_PER_S, USER_DEADLINE_S),
            _open_loop(recs, attacker, t0, ATTACK, ATTACK_PER_S, ATTACK_DEADLINE_S),
        )
    return user, attacker, sheds, edge_acted


@pytest.mark.slow
@pytest.mark.parametrize("admission", list(ADMISSION))
async def test_short_deadlines_leave_other_users_personalised(admission: str) -> None:
    user, attacker, sheds, edge_acted = await _run(admission)
    assert len(attacker.asked) >= ATTACK_PER_S * ATTACK_S / 3, "the machine starved the attack"
    assert attacker.share(0.0, END_S)[0] <= 0.05, "the 40 ms deadlines were met: no attack"
    if admission == "deadline-aware":
        assert "deadline" in sheds, sheds  # refused as unmeetable, the path under test
    assert edge_acted == []  # the shared breaker never opened, the throttle rejected nothing
    during, calls = user.share(*ATTACK)
    planned = round(USER_PER_S * ATTACK_S)
    if calls < 0.9 * planned:
        # The open loop skips a start it is a whole interval late for: the event loop, shared
        # by all three services and both callers, lagged by more than 50 ms again and again
        # (once under the whole suite: 23 of 40 started, 21 personalised). Its answers then
        # measure the machine, not the edge; the edge's own acts are asserted above.
        pytest.skip(f"the machine starved the user's loop: {calls} of {planned} homes started")
    assert during >= 0.95, (during, calls, sheds[:5])
    after, calls = user.share(ATTACK[1] + RECOVERED_AFTER_S, END_S)
    assert calls >= 10 and after == 1.0, (after, calls)


async def _figures(runs: int) -> None:
    """The other user's personalised share per admission policy, `runs` runs each."""
    print(
        "admission       during     0-1 s after  2-3 s after  attack  refused by recommendation"
        "  gateway edge events"
    )
    for admission in ADMISSION:
        for _ in range(runs):
            user, attacker, sheds, edge_acted = await _run(admission)
            shares = [
                user.share(*ATTACK),
                user.share(ATTACK[1], ATTACK[1] + 1),
                user.share(ATTACK[1] + RECOVERED_AFTER_S, END_S),
            ]
            cells = "  ".join(f"{s:.2f} ({n:>2})" for s, n in shares)
            reasons = ", ".join(f"{r} {sheds.count(r)}" for r in sorted(set(sheds))) or "-"
            attack_per_s = len(attacker.asked) / ATTACK_S
            acted = Counter(type(e).__name__ for e in edge_acted)
            print(f"{admission:<14}  {cells}  {attack_per_s:>5.0f}/s  {reasons}  {dict(acted)}")


if __name__ == "__main__":  # python -m tests.integration.hardening.test_short_deadlines [runs]
    asyncio.run(_figures(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
