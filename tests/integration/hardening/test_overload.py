"""A burst far beyond what the gateway handles at once: every caller that did not cancel gets an
answer or RESOURCE_EXHAUSTED with a pushback, and the gateway counts every call it was sent."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import grpc
import grpc.aio
from inproc_services import serving

from mesh.resilience.errors import PUSHBACK_KEY
from mesh.v1 import gateway_pb2, gateway_pb2_grpc

BURST = 2000
"""Enough to overflow grpc core's queue of calls the application has not picked up yet
(1000 by default), the source of the uncounted CANCELLED answers this test pins."""
CALL_DEADLINE_S = 10.0
GET_HOME = "/mesh.v1.Gateway/GetHome"
KEY = "overload-test-key"


async def _get_home(stub: gateway_pb2_grpc.GatewayStub, i: int) -> tuple[str, int | None]:
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


async def test_a_burst_gets_answers_or_pushback_and_every_call_is_counted() -> None:
    async with serving(env={"MESH_API_KEYS": KEY, "MESH_POLICY": "full"}) as served:
        before = served.server_calls("gateway", GET_HOME)
        async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            outcomes = await asyncio.wait_for(
                asyncio.gather(*(_get_home(stub, i) for i in range(BURST))), timeout=25
            )
        counted: Counter[str] = Counter()
        give_up = time.monotonic() + 5
        while sum(counted.values()) < BURST and time.monotonic() < give_up:
            after = served.server_calls("gateway", GET_HOME)
            counted = Counter({code: after[code] - before[code] for code in after})
            await asyncio.sleep(0.05)

    codes = Counter(code for code, _ in outcomes)
    assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, codes
    assert codes["OK"] > 0, codes
    pushbacks = [p for code, p in outcomes if code == "RESOURCE_EXHAUSTED"]
    assert all(p is not None and p >= 1 for p in pushbacks), Counter(pushbacks)
    assert sum(counted.values()) == BURST, (counted, codes)
    assert +counted == +codes, (counted, codes)
