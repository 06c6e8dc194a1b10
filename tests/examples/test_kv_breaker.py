"""The kv example's client behind a breaker: the server gone (its proxy disabled), the breaker
opens after its count of failures, refuses calls without touching the wire, and closes again
once a probe finds the server back."""

from __future__ import annotations

import asyncio
import time

import grpc
import grpc.aio
import pytest

from examples.kv import kv_pb2, kv_pb2_grpc
from examples.kv.client import kv_channel
from grpc_aio_resilience import (
    AttemptStarted,
    BreakerOpenError,
    BreakerPolicy,
    BreakerRejected,
    BreakerStateChanged,
    EdgePolicy,
    EventBus,
    RetryPolicy,
)
from tests.examples.kv_harness import Recorder, kv_serving, proxy, toxiproxy

pytestmark = pytest.mark.timeout(30)

FAILURES = 3
POLICY = EdgePolicy(
    retry=RetryPolicy(max_attempts=1),  # one attempt per call: each failure counts once
    breaker=BreakerPolicy(consecutive_failures=FAILURES, failure_rate=None, open_s=0.5),
)
GET = kv_pb2.GetRequest(key="colour")


async def call_until(kv: kv_pb2_grpc.KeyValueStub, ok: bool, timeout_s: float = 10.0) -> int:
    """Calls Get until one succeeds (`ok`) or one is refused by the open breaker; the calls
    made. Each call is bounded by its deadline, the loop by `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    for calls in range(1, 1000):
        try:
            await kv.Get(GET, timeout=1.0)
            if ok:
                return calls
        except BreakerOpenError:
            if not ok:
                return calls
        except grpc.aio.AioRpcError:
            pass
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {'answer' if ok else 'refusal'} within {timeout_s} s")


async def test_breaker_opens_on_a_dead_server_refuses_fast_and_closes_when_it_is_back() -> None:
    bus = EventBus()
    seen = Recorder(bus)
    with toxiproxy() as tp:
        async with kv_serving() as address:
            listen = await proxy(tp, "kv", address)
            async with kv_channel(listen, POLICY, bus) as channel:
                kv = kv_pb2_grpc.KeyValueStub(channel)
                await kv.Get(GET, timeout=5.0)
                await asyncio.to_thread(tp.disable, "kv")  # the server is gone
                seen.events.clear()
                calls_to_refusal = await call_until(kv, ok=False)
                opened = len(seen.events)
                with pytest.raises(BreakerOpenError) as refused:
                    await kv.Get(GET, timeout=1.0)
                refusal = seen.events[opened:]
                await asyncio.to_thread(tp.enable, "kv")  # back
                await call_until(kv, ok=True)
    states = [e.to_state.name for e in seen.of(BreakerStateChanged)]
    # FAILURES calls failed on the wire, then the breaker opened and the next one was refused.
    assert calls_to_refusal == FAILURES + 1
    assert states[0] == "OPEN"
    # Refused fast: an error carrying UNAVAILABLE, and no attempt reached the wire.
    assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    assert [type(e) for e in refusal if isinstance(e, AttemptStarted | BreakerRejected)] == [
        BreakerRejected
    ]
    # A probe found the server back: half-open, then closed.
    assert states[-2:] == ["HALF_OPEN", "CLOSED"]
