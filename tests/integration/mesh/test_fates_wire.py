"""Each fate (grpc_aio_resilience.fates) pinned to the mechanism that produces it: the real gateway,
recommendation and profile (serve(), in this process), a fault or a policy that sets the
mechanism off, GetHome calls, and the fate each answer's `resilience-fate` trailer carries; the
gateway's mesh_request_fates_total counts every call once."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import fates
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.hardening.inproc_services import Served, serving

GET_PROFILE = "/mesh.v1.ProfileService/GetProfile"
RECOMMEND = "/mesh.v1.RecommendationService/Recommend"
GET_HOME = "/mesh.v1.Gateway/GetHome"
NO_BREAKER = {"MESH_POLICY__EDGE_DEFAULTS__BREAKER__ENABLED": "false"}
NO_BUDGET = {"MESH_POLICY__EDGE_DEFAULTS__RETRY__BUDGET__ENABLED": "false"}
NO_THROTTLE = {"MESH_POLICY__EDGE_DEFAULTS__THROTTLE__ENABLED": "false"}
NO_OUTLIER = {"MESH_POLICY__EDGE_DEFAULTS__OUTLIER__ENABLED": "false"}


def faults(*specs: dict[str, object]) -> dict[str, str]:
    return {"MESH_FAULTS": json.dumps(list(specs)), "MESH_FAULT_SEED": "7"}


def failing_profile(**extra: object) -> dict[str, str]:
    return faults({"method": GET_PROFILE, "error_rate": 1.0, "code": "UNAVAILABLE", **extra})


async def home(stub: gateway_pb2_grpc.GatewayStub, user: str = "u-0001") -> str:
    """One GetHome, and the fate its caller records."""
    call = stub.GetHome(gateway_pb2.GetHomeRequest(user_id=user, limit=3), timeout=3.0)
    try:
        reply = await call
    except grpc.aio.AioRpcError as err:
        return fates.seen_by_caller(err.code().name, err.trailing_metadata(), "")
    degraded = ",".join(f"{d.part}:{d.served_by}" for d in reply.degraded)
    return fates.seen_by_caller("OK", await call.trailing_metadata(), degraded)


async def counted(served: Served) -> Counter[str]:
    """The gateway's mesh_request_fates_total for GetHome, by fate."""
    text = await served.scrape("gateway")
    found = re.findall(
        rf'^mesh_request_fates_total{{fate="([^"]+)",method="{GET_HOME}"}} (\S+)$', text, re.M
    )
    return Counter({fate: int(float(v)) for fate, v in found})


async def fates_of(
    env: dict[str, str], calls: int, concurrent: int = 1
) -> tuple[list[str], Counter[str]]:
    """`calls` GetHome calls, `concurrent` at a time, on a mesh started with `env`: the fates
    the caller recorded (in order of the waves) and what the gateway counted."""
    async with serving(env={"MESH_AUTH": "off", **NO_OUTLIER, **env}) as served:
        async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            seen: list[str] = []
            for _ in range(calls // concurrent):
                seen += await asyncio.gather(*(home(stub) for _ in range(concurrent)))
        return seen, await counted(served)


def assert_counted_once_each(seen: list[str], gateway: Counter[str]) -> None:
    assert sum(gateway.values()) == len(seen)
    assert gateway == Counter(seen)


async def test_a_whole_answer_is_ok_and_a_bad_request_not_retryable() -> None:
    async with serving(env={"MESH_AUTH": "off"}) as served:
        async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            seen = [await home(stub), await home(stub, user="")]
        gateway = await counted(served)
    assert seen == ["ok", "failed-not-retryable(INVALID_ARGUMENT)"]
    assert_counted_once_each(seen, gateway)


async def test_an_attempt_that_fails_and_a_retry_that_answers_is_ok_after_retry() -> None:
    # Half of profile's answers fail (seeded dice): recommendation's calls to profile throw
    # them too, so some answers degrade, and a few calls may run out of attempts. The dice are
    # seeded, but gateway and recommendation call profile at once, so which call draws which
    # throw varies: how many retries an answer took is not fixed, only that some took one or more.
    seen, gateway = await fates_of(
        {**failing_profile(error_rate=0.5), **NO_BREAKER, **NO_BUDGET}, calls=10
    )
    retried = [f for f in seen if fates.kind_of(f) == "ok-after-retry"]
    assert retried, seen
    assert all(int(f[len("ok-after-retry(") : -1]) >= 1 for f in retried), retried
    kinds = {fates.kind_of(f) for f in seen}
    assert kinds <= {"ok", "ok-after-retry", "ok-degraded", "failed-retry-skipped"}
    assert {f for f in seen if f.startswith("failed")} <= {"failed-retry-skipped(attempts)"}
    assert_counted_once_each(seen, gateway)


async def test_recommendations_failing_is_ok_degraded_by_the_popular_list() -> None:
    env = faults({"method": RECOMMEND, "error_rate": 1.0, "code": "INTERNAL"})
    seen, gateway = await fates_of(env, calls=3)
    assert seen == ["ok-degraded(recommendation:popular)"] * 3
    assert_counted_once_each(seen, gateway)


async def test_retries_run_out_then_the_budget_skips_them() -> None:
    seen, gateway = await fates_of({**failing_profile(), **NO_BREAKER, **NO_THROTTLE}, calls=12)
    assert seen[0] == "failed-retry-skipped(attempts)"
    assert seen[-1] == "failed-retry-skipped(budget)"
    assert set(seen) == {"failed-retry-skipped(attempts)", "failed-retry-skipped(budget)"}
    assert_counted_once_each(seen, gateway)


async def test_an_open_breaker_skips_the_retries() -> None:
    seen, gateway = await fates_of({**failing_profile(), **NO_BUDGET, **NO_THROTTLE}, calls=8)
    assert seen[0] == "failed-retry-skipped(attempts)"
    assert seen[-1] == "failed-retry-skipped(breaker-open)"
    assert_counted_once_each(seen, gateway)


async def test_the_adaptive_throttle_is_client_throttled() -> None:
    # The throttle counts overload refusals: RESOURCE_EXHAUSTED with a pushback to honour.
    refusing = faults(
        {"method": GET_PROFILE, "error_rate": 1.0, "code": "RESOURCE_EXHAUSTED", "pushback_ms": 1}
    )
    seen, gateway = await fates_of({**refusing, **NO_BUDGET, **NO_BREAKER}, calls=30)
    assert "client-throttled(profile)" in seen
    assert set(seen) <= {"failed-retry-skipped(attempts)", "client-throttled(profile)"}
    assert_counted_once_each(seen, gateway)


async def test_a_pushback_longer_than_the_deadline_skips_the_retry() -> None:
    seen, gateway = await fates_of({**failing_profile(pushback_ms=5000), **NO_BREAKER}, calls=2)
    assert seen == ["failed-retry-skipped(pushback-past-deadline)"] * 2
    assert_counted_once_each(seen, gateway)


async def test_a_slow_profile_is_failed_deadline() -> None:
    # Each timed-out attempt is a breaker failure: with the breaker on, the second call would
    # find it open (failed-retry-skipped(breaker-open), another test's mechanism).
    env = {**faults({"method": GET_PROFILE, "delay_s": 2.0}), **NO_BUDGET, **NO_BREAKER}
    seen, gateway = await fates_of(env, calls=2)
    assert seen == ["failed-deadline"] * 2
    assert_counted_once_each(seen, gateway)


async def test_the_gateway_rate_limit_is_shed_by_the_gateway() -> None:
    env = {"MESH_RATE_LIMIT_RPS": "0.01", "MESH_RATE_LIMIT_BURST": "1"}
    seen, gateway = await fates_of(env, calls=3)
    assert seen == ["ok", "shed(gateway:rate-limit)", "shed(gateway:rate-limit)"]
    assert_counted_once_each(seen, gateway)


async def test_a_full_bulkhead_is_shed_by_the_gateway() -> None:
    env = {
        **faults({"method": GET_PROFILE, "delay_s": 0.2}),
        "MESH_POLICY__GATEWAY_TO_PROFILE__BULKHEAD__MAX_CONCURRENT": "1",
    }
    seen, gateway = await fates_of(env, calls=4, concurrent=4)
    assert seen.count("shed(gateway:bulkhead-profile)") == 3
    assert [fates.kind_of(f) for f in seen if not f.startswith("shed")] in (["ok"], ["ok-degraded"])
    assert_counted_once_each(seen, gateway)


@pytest.mark.parametrize("in_flight", ["1"])
async def test_profile_shedding_is_shed_by_profile(in_flight: str) -> None:
    env = {
        **faults({"method": GET_PROFILE, "delay_s": 0.25}),
        "MESH_POLICY__SERVER_DEFAULTS__MAX_IN_FLIGHT": in_flight,
        "MESH_POLICY__SERVER_DEFAULTS__SHED_PUSHBACK_MS": "0",
        **NO_BREAKER,
        **NO_BUDGET,
        **NO_THROTTLE,
    }
    seen, gateway = await fates_of(env, calls=4, concurrent=4)
    assert "shed(profile:limit)" in seen
    assert {fates.kind_of(f) for f in seen} <= {"ok", "ok-degraded", "shed", "failed-deadline"}
    assert_counted_once_each(seen, gateway)
