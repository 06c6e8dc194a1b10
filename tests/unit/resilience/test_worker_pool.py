"""The declared worker pool on a fake clock: its capacity is workers / service time, and its
service-time distributions have the declared mean."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.events import Event, EventBus, PoolWorkDone
from grpc_resilience_mesh.services.policy.pool import PoolPolicy
from grpc_resilience_mesh.services.runtime.worker_pool import WorkerPool, service_times
from tests.unit.resilience.manual_clock import ManualClock, settle


async def test_eight_calls_on_four_workers_of_20_ms_take_40_ms_and_the_later_four_wait() -> None:
    clock = ManualClock(start_s=0.0)
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    pool = WorkerPool("recommendation", PoolPolicy(workers=4, service_time_s=0.02), clock, bus)

    async def call() -> None:
        async with pool.work():
            pass

    calls = [asyncio.ensure_future(call()) for _ in range(8)]
    await settle()
    assert (pool.in_use, pool.queued) == (4, 4)
    await clock.advance(0.02)
    assert sum(c.done() for c in calls) == 4 and pool.queued == 0
    await clock.advance(0.02)
    assert all(c.done() for c in calls) and pool.in_use == 0
    waits = sorted(e.waited_s for e in seen if isinstance(e, PoolWorkDone))
    assert waits == [0.0] * 4 + [pytest.approx(0.02)] * 4


async def test_a_late_event_loop_does_not_lower_the_capacity() -> None:
    clock = ManualClock(start_s=0.0)
    pool = WorkerPool("r", PoolPolicy(workers=1, service_time_s=0.02), clock, EventBus())

    async def call() -> None:
        async with pool.work():
            pass

    calls = [asyncio.ensure_future(call()) for _ in range(3)]
    await settle()
    await clock.advance(0.025)  # the first ends 5 ms late: the second started at 20 ms
    await clock.advance(0.015)
    assert sum(c.done() for c in calls) == 2, "the second ended at 40 ms, not 45"


@pytest.mark.parametrize("distribution", ["fixed", "exponential", "lognormal"])
def test_service_times_have_the_declared_mean(distribution: str) -> None:
    policy = {"workers": 1, "service_time_s": 0.02, "distribution": distribution, "seed": 7}
    draw = service_times(from_dict(PoolPolicy, policy))
    samples = [draw() for _ in range(20_000)]
    assert statistics.fmean(samples) == pytest.approx(0.02, rel=0.05)
    assert min(samples) > 0


async def test_recommendation_gets_a_pool_only_when_its_policy_declares_workers() -> None:
    from grpc_resilience_mesh.services.policy.loading import load_policy
    from grpc_resilience_mesh.services.recommendation.servicer import DeclaredCapacity

    capacity = DeclaredCapacity(EventBus(), ManualClock())
    capacity.update(load_policy("full", {}).server("recommendation").pool)
    assert capacity.pool is None, "off by default: today's behaviour"
    env = {"MESH_POLICY__RECOMMENDATION__POOL__WORKERS": "4"}
    capacity.update(load_policy("full", env).server("recommendation").pool)
    first = capacity.pool
    assert first is not None and first.capacity_per_s == pytest.approx(200.0)
    capacity.update(load_policy("full", env).server("recommendation").pool)
    assert capacity.pool is first, "the same settings keep the pool (and its queue)"
    capacity.update(load_policy("full", {}).server("recommendation").pool)
    assert capacity.pool is None


class _AbortingContext:
    """A servicer context whose abort raises, as grpc.aio's does."""

    def __init__(self) -> None:
        self.aborted: tuple[object, str] | None = None

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def time_remaining(self) -> None:
        return None

    async def abort(self, code: object, details: str, trailers: object = ()) -> None:
        self.aborted = (code, details)
        raise RuntimeError("aborted")


async def test_recommendation_calls_hold_a_declared_worker_and_a_full_pool_refuses() -> None:
    import grpc

    from grpc_resilience_mesh.services.recommendation.servicer import DeclaredCapacity

    clock = ManualClock(start_s=0.0)
    capacity = DeclaredCapacity(EventBus(), clock)
    free = _AbortingContext()
    async with capacity.work(free):
        pass  # no pool: nothing held, nothing refused
    assert free.aborted is None
    capacity.update(PoolPolicy(workers=1, service_time_s=0.02, max_queue=1))
    pool = capacity.pool
    assert pool is not None

    async def call(context: _AbortingContext) -> None:
        async with capacity.work(context):
            pass

    held, queued = asyncio.ensure_future(call(free)), asyncio.ensure_future(call(free))
    await settle()
    assert (pool.in_use, pool.queued) == (1, 1)
    refused = _AbortingContext()
    with pytest.raises(RuntimeError, match="aborted"):
        await call(refused)
    assert refused.aborted is not None and refused.aborted[0] is grpc.StatusCode.RESOURCE_EXHAUSTED
    await clock.advance(0.02)
    assert held.done() and not queued.done()
    await clock.advance(0.02)
    assert queued.done() and pool.in_use == 0
