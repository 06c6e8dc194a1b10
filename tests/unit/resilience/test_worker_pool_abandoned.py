"""The declared pool's treatment of callers who gave up (`abandoned: drop | run`), its bounded
queue (`max_queue`) and its slowdown (the fault table's service_time_factor), on a fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.errors import PoolFullError
from grpc_aio_resilience.events import Event, EventBus, PoolWorkDone
from grpc_resilience_mesh.services.faults.injection import (
    FaultSpec,
    FaultTable,
    FaultValidationError,
)
from grpc_resilience_mesh.services.policy.pool import PoolPolicy
from grpc_resilience_mesh.services.runtime.worker_pool import WorkerPool
from tests.unit.resilience.manual_clock import ManualClock, settle


def _pool(
    clock: ManualClock, slowdown: Any = None, **policy: Any
) -> tuple[WorkerPool, list[Event]]:
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    settings = from_dict(PoolPolicy, {"workers": 1, "service_time_s": 0.1, **policy})
    return WorkerPool("recommendation", settings, clock, bus, slowdown), seen


async def _call(pool: WorkerPool, ended: list[float], clock: ManualClock) -> None:
    async with pool.work():
        pass
    ended.append(clock.now())


@pytest.mark.parametrize(("abandoned", "third_ends_s"), [("drop", 0.25), ("run", 0.375)])
async def test_work_for_a_caller_who_gave_up_is_dropped_or_still_run(
    abandoned: str, third_ends_s: float
) -> None:
    """One worker of 125 ms, three calls; the first two callers give up at 62.5 ms (one in
    service, one waiting). drop: the waiter leaves, so the third is served 125-250 ms; run:
    both abandoned calls take their whole service time, and the third ends at 375 ms.
    (Binary fractions of a second, so that the fake clock's sums are exact.)"""
    clock = ManualClock(start_s=0.0)
    pool, seen = _pool(clock, abandoned=abandoned, service_time_s=0.125)
    ended: list[float] = []
    first, second, third = (asyncio.ensure_future(_call(pool, ended, clock)) for _ in range(3))
    await settle()
    await clock.advance(0.0625)
    first.cancel()
    second.cancel()
    for _ in range(8):
        await clock.advance(0.0625)
    assert third.done() and ended == [third_ends_s]
    gone = [e for e in seen if isinstance(e, PoolWorkDone) and e.abandoned]
    assert len(gone) == (2 if abandoned == "run" else 0)
    assert (pool.in_use, pool.queued) == (0, 0)


async def test_a_full_queue_refuses_at_once_without_pushback_abandoned_work_counting() -> None:
    clock = ManualClock(start_s=0.0)
    pool, _ = _pool(clock, max_queue=2, abandoned="run", service_time_s=0.125)
    ended: list[float] = []
    calls = [asyncio.ensure_future(_call(pool, ended, clock)) for _ in range(3)]
    await settle()
    calls[1].cancel()  # gone, but its work still waits for the worker
    await settle()
    with pytest.raises(PoolFullError) as refused:
        async with pool.work():
            pass
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.value.pushback_s is None and "2 calls waiting" in (refused.value.details() or "")
    for _ in range(4):
        await clock.advance(0.125)
    assert len(ended) == 2 and (pool.in_use, pool.queued) == (0, 0)
    pool.check_room()  # room again


async def test_a_slowdown_stretches_the_service_time_of_work_that_starts_while_it_is_set() -> None:
    clock = ManualClock(start_s=0.0)
    faults = FaultTable()
    pool, seen = _pool(clock, slowdown=faults.service_time_factor, service_time_s=0.125)
    ended: list[float] = []
    first = asyncio.ensure_future(_call(pool, ended, clock))
    second = asyncio.ensure_future(_call(pool, ended, clock))
    await settle()
    faults.set(FaultSpec.parse("*", 0.0, "UNAVAILABLE", 0.0, -1, service_time_factor=3.0))
    await clock.advance(0.125)  # the first, started before the fault, took 125 ms
    faults.clear()
    await clock.advance(0.25)
    assert not second.done(), "the second started under the fault: 375 ms"
    await clock.advance(0.125)
    assert first.done() and second.done() and ended == [0.125, 0.5]
    times = [e.service_s for e in seen if isinstance(e, PoolWorkDone)]
    assert times == [0.125, 0.375]


def test_service_time_factor_is_none_or_within_1_to_100() -> None:
    assert FaultSpec.parse("*", 0.0, "", 0.0, -1).service_time_factor == 1.0
    assert FaultSpec.parse("*", 0.0, "", 0.0, -1, service_time_factor=3).service_time_factor == 3
    for bad in (0.5, 101.0, float("nan")):
        with pytest.raises(FaultValidationError, match="service_time_factor"):
            FaultSpec.parse("*", 0.0, "", 0.0, -1, service_time_factor=bad)
    table = FaultTable([FaultSpec.parse("*", 0.0, "", 0.0, -1, service_time_factor=2.5)])
    assert table.service_time_factor() == 2.5
    table.clear()
    assert table.service_time_factor() == 1.0
