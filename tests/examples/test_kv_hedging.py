"""The kv example's client over two replicas, one slowed by the proxy: hedged calls are
answered by the fast one, and no call waits for the slow one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import pytest

from examples.kv import kv_pb2, kv_pb2_grpc
from examples.kv.client import kv_channel
from examples.kv.store import KeyValueStore
from grpc_aio_resilience import (
    DeadlinePolicy,
    EdgePolicy,
    EventBus,
    HedgeSettled,
    HedgeStarted,
    HedgingOptions,
    RetryBudgetPolicy,
    RetryPolicy,
    close_channel,
)
from tests.examples.kv_harness import Recorder, kv_serving, proxy, toxiproxy

pytestmark = pytest.mark.timeout(30)

SLOW_MS = 1000
HEDGING_DELAY_S = 0.05
CALLS = 20
DEADLINE = DeadlinePolicy(total_s=4.5, attempt_s=1.5)
"""An attempt outlasts the slow replica: an unhedged call waits for it, never times out."""
# Every hedge is paid from the retry budget; the default one would refuse most of this test's
# (HedgeSkipped; docs/library.md, "The traps"), so it is one no hedge here can exhaust.
BUDGET = RetryPolicy(budget=RetryBudgetPolicy(max_tokens=100.0))
HEDGED = EdgePolicy(
    deadline=DEADLINE,
    retry=BUDGET,
    hedging=HedgingOptions(enabled=True, hedging_delay_s=HEDGING_DELAY_S, max_attempts=2),
)
UNHEDGED = EdgePolicy(deadline=DEADLINE, retry=BUDGET)
GET = kv_pb2.GetRequest(key="colour")


@asynccontextmanager
async def replicas_channel(
    target: str, policy: EdgePolicy, bus: EventBus
) -> AsyncIterator[kv_pb2_grpc.KeyValueStub]:
    channel = kv_channel(target, policy, bus)
    try:
        yield kv_pb2_grpc.KeyValueStub(channel)
    finally:
        await close_channel(channel)  # the replicas' own channels too


async def latencies_s(kv: kv_pb2_grpc.KeyValueStub, calls: int) -> list[float]:
    took = []
    for _ in range(calls):
        started = time.perf_counter()
        reply = await kv.Get(GET, timeout=5.0)
        took.append(time.perf_counter() - started)
        assert reply.value == "green"
    return took


async def test_a_hedge_on_the_fast_replica_wins_over_the_slow_one() -> None:
    bus = EventBus()
    seen = Recorder(bus)
    async with AsyncExitStack() as stack:
        tp = stack.enter_context(toxiproxy())
        listens = []
        for name in ("fast", "slow"):
            store = KeyValueStore()
            store.values["colour"] = "green"
            address = await stack.enter_async_context(kv_serving(store))
            listens.append(await proxy(tp, name, address))
        target = ",".join(listens)
        hedged = await stack.enter_async_context(replicas_channel(target, HEDGED, bus))
        unhedged = await stack.enter_async_context(replicas_channel(target, UNHEDGED, EventBus()))
        await latencies_s(hedged, 4)  # both replicas connected, on both channels
        await latencies_s(unhedged, 4)
        latency = {"latency": SLOW_MS}
        await asyncio.to_thread(tp.add_toxic, "slow", "latency", attributes=latency)
        seen.events.clear()
        hedged_s = await latencies_s(hedged, CALLS)
        unhedged_s = await latencies_s(unhedged, 2)  # gRPC's round robin: one on each
    ms = {
        name: round(max(took) * 1000, 1)
        for name, took in (("hedged", hedged_s), ("unhedged", unhedged_s))
    }
    print("slowest call, ms:", ms, "hedges:", len(seen.of(HedgeStarted)), "of", CALLS)
    # The fault is real: without hedging, calls sent to the slow replica wait for it ...
    assert max(unhedged_s) >= SLOW_MS / 1000
    # ... with it, each call the slow replica holds is answered by a hedge on the fast one.
    hedges = seen.of(HedgeStarted)
    won = [e.attempt for e in seen.of(HedgeSettled) if e.outcome == "won"]
    assert hedges
    assert won == [2] * len(hedges)
    assert {e.trigger for e in hedges} == {"delay"}
    # p99 (the slowest of 20): the hedging delay and a fast call (about 55 ms measured); the
    # bound is loose so that a stall of this shared machine cannot fail it.
    assert max(hedged_s) < SLOW_MS / 1000 / 2, sorted(hedged_s)[-3:]
