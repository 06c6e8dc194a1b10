"""Bulkhead: reject mode fails the K+1th call at once; queue mode waits a bounded time."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from grpc_aio_resilience.bulkhead import Bulkhead
from grpc_aio_resilience.context import CallContext
from grpc_aio_resilience.edge_policy import BulkheadPolicy
from grpc_aio_resilience.errors import BulkheadFullError
from grpc_aio_resilience.events import BulkheadRejected
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import GET_PROFILE, recording_bus


def ctx(deadline_s: float = float("inf")) -> CallContext:
    return CallContext("dep", GET_PROFILE, None, None, None, deadline_s)  # type: ignore[arg-type]


class Held:
    """An inner call that stays in flight until released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def __call__(self, _: CallContext) -> Any:
        self.entered += 1
        await self.release.wait()
        return "ok"


async def test_reject_mode_fails_the_next_call_at_once() -> None:
    bus, seen = recording_bus()
    bulkhead = Bulkhead(BulkheadPolicy(max_concurrent=2), FakeClock(), bus, "dep")
    held = Held()
    running = [asyncio.create_task(bulkhead.execute(ctx(), held)) for _ in range(2)]
    await asyncio.sleep(0)
    with pytest.raises(BulkheadFullError) as caught:
        await bulkhead.execute(ctx(), held)
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert held.entered == 2
    assert [type(e) for e in seen] == [BulkheadRejected]
    held.release.set()
    assert await asyncio.gather(*running) == ["ok", "ok"]
    assert await bulkhead.execute(ctx(), held) == "ok"
    assert bulkhead.in_flight == 0


async def test_queue_mode_admits_a_waiter_when_a_slot_frees() -> None:
    clock = FakeClock()
    policy = BulkheadPolicy(max_concurrent=1, mode="queue", max_wait_s=0.5)
    bulkhead = Bulkhead(policy, clock, recording_bus()[0], "dep")
    held = Held()
    first = asyncio.create_task(bulkhead.execute(ctx(), held))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(bulkhead.execute(ctx(), held))
    await asyncio.sleep(0)  # the waiter is queued; its fake max-wait timer is pending
    held.release.set()
    assert await first == "ok"
    assert await waiter == "ok"
    assert held.entered == 2
    assert bulkhead.in_flight == 0


async def test_queue_mode_gives_up_after_max_wait() -> None:
    clock = FakeClock()
    policy = BulkheadPolicy(max_concurrent=1, mode="queue", max_wait_s=0.25)
    bulkhead = Bulkhead(policy, clock, recording_bus()[0], "dep")
    held = Held()
    first = asyncio.create_task(bulkhead.execute(ctx(), held))
    await asyncio.sleep(0)
    with pytest.raises(BulkheadFullError):
        await bulkhead.execute(ctx(), held)
    assert clock.sleeps_s == [0.25]
    held.release.set()
    await first
    assert bulkhead.in_flight == 0


async def test_queue_wait_never_outlives_the_call_deadline() -> None:
    clock = FakeClock()
    policy = BulkheadPolicy(max_concurrent=1, mode="queue", max_wait_s=5.0)
    bulkhead = Bulkhead(policy, clock, recording_bus()[0], "dep")
    held = Held()
    first = asyncio.create_task(bulkhead.execute(ctx(), held))
    await asyncio.sleep(0)
    with pytest.raises(BulkheadFullError):
        await bulkhead.execute(ctx(clock.now() + 0.1), held)
    assert clock.sleeps_s == [pytest.approx(0.1)]
    held.release.set()
    await first


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    policy = BulkheadPolicy(max_concurrent=1, mode="queue", max_wait_s=5.0)
    bulkhead = Bulkhead(policy, FakeClock(), recording_bus()[0], "dep")
    held = Held()
    first = asyncio.create_task(bulkhead.execute(ctx(), held))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(bulkhead.execute(ctx(), held))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    held.release.set()
    await first
    assert bulkhead.in_flight == 0
    assert await bulkhead.execute(ctx(), held) == "ok"
