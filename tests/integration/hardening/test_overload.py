"""A burst far beyond what the gateway handles at once: every caller that did not cancel gets an
answer or RESOURCE_EXHAUSTED with a pushback, and the gateway counts every call it was sent."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import grpc
import grpc.aio

from grpc_aio_resilience.errors import PUSHBACK_KEY
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.hardening.inproc_services import Served, serving

BURST = 2000
"""Enough to overflow grpc core's queue of calls the application has not picked up yet
(1000 by default), the source of the uncounted CANCELLED answers this test pins."""
CALL_DEADLINE_S = 60.0
"""What the answers are is the subject, not how soon they come: a deadline no machine reaches.
The burst takes about 6 s of this process's CPU (services and client share it); at 10 s a
starved CI run saw 101 calls end DEADLINE_EXCEEDED before the gateway answered them."""
GET_HOME = "/mesh.v1.Gateway/GetHome"
KEY = "overload-test-key"
Outcome = tuple[str, int | None]


async def _get_home(stub: gateway_pb2_grpc.GatewayStub, i: int) -> Outcome:
    try:
        await stub.GetHome(
            gateway_pb2.GetHomeRequest(user_id=f"u-{i % 200 + 1:04d}", limit=5),
            timeout=CALL_DEADLINE_S,
            metadata=(("authorization", f"Bearer {KEY}"),),
        )
        return "OK", None
    except grpc.aio.AioRpcError as err:
        pushback = [int(v) for k, v in err.trailing_metadata() or () if k == PUSHBACK_KEY]
        return err.code().name, pushback[0] if pushback else None


async def _burst(served: Served, calls: int) -> tuple[list[Outcome], Counter[str], float]:
    """`calls` GetHome at once; their outcomes, what the gateway counted meanwhile, and the
    seconds from the first call sent to the last answer (every call reached the gateway within
    them)."""
    before = await served.server_calls("gateway", GET_HOME)
    async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        started = time.monotonic()
        outcomes = await asyncio.wait_for(
            asyncio.gather(*(_get_home(stub, i) for i in range(calls))),
            timeout=CALL_DEADLINE_S + 15,
        )
        elapsed = time.monotonic() - started
    counted: Counter[str] = Counter()
    give_up = time.monotonic() + 15
    while sum(counted.values()) < calls and time.monotonic() < give_up:
        after = await served.server_calls("gateway", GET_HOME)
        counted = Counter({code: after[code] - before[code] for code in after})
        await asyncio.sleep(0.05)
    return outcomes, +counted, elapsed


def _assert_actionable_and_counted(outcomes: list[Outcome], counted: Counter[str]) -> None:
    """No CANCELLED: every refusal is RESOURCE_EXHAUSTED with a pushback to wait. On a starved
    machine profile may also time out under the burst: the gateway then answers UNAVAILABLE
    with its breaker's pushback, or -1 ("retried here already"), also a status to act on."""
    codes = Counter(code for code, _ in outcomes)
    assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED", "UNAVAILABLE"}, codes
    assert codes["OK"] > 0, codes
    pushbacks = [p for code, p in outcomes if code == "RESOURCE_EXHAUSTED"]
    assert all(p is not None and p >= 1 for p in pushbacks), Counter(pushbacks)
    unavailable = [p for code, p in outcomes if code == "UNAVAILABLE"]
    assert all(p is not None and (p >= 1 or p == -1) for p in unavailable), Counter(unavailable)
    assert sum(counted.values()) == len(outcomes), (counted, codes)
    assert counted == codes, (counted, codes)


async def test_a_burst_gets_answers_or_pushback_and_every_call_is_counted() -> None:
    async with serving(env={"MESH_API_KEYS": KEY, "MESH_POLICY": "full"}) as served:
        outcomes, counted, _ = await _burst(served, BURST)
    _assert_actionable_and_counted(outcomes, counted)


RATE_PER_S, BURST_TOKENS = 20, 50


async def test_rate_limited_calls_are_counted_too() -> None:
    env = {
        "MESH_API_KEYS": KEY,
        "MESH_RATE_LIMIT_RPS": str(RATE_PER_S),
        "MESH_RATE_LIMIT_BURST": str(BURST_TOKENS),
    }
    async with serving(env=env) as served:
        outcomes, counted, elapsed = await _burst(served, 300)
    _assert_actionable_and_counted(outcomes, counted)
    # The bucket lets through its burst plus what refills while the calls arrive, and they all
    # arrived within `elapsed`. (A fixed ">= 200 refused" failed on a starved CI run whose burst
    # took about 3 s: 112 got through, 50 + 20 x 3.1.)
    admitted = sum(counted.values()) - counted["RESOURCE_EXHAUSTED"]
    assert admitted <= BURST_TOKENS + RATE_PER_S * elapsed + 1, (counted, elapsed)
    assert counted["RESOURCE_EXHAUSTED"] > 0, counted
