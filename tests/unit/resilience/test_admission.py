"""The admission layer's decisions on a fake clock: each limit algorithm, each queue
discipline, deadline-aware refusal and criticality (sheddable refused before critical)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from grpc_aio_resilience import SheddingInterceptor, from_dict
from grpc_aio_resilience.admission import Admission, Place
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import PUSHBACK_KEY, ShedError
from grpc_aio_resilience.events import CallShed, ConcurrencyLimitChanged, Event, EventBus
from tests.unit.resilience.manual_clock import ManualClock, settle

M = "/mesh.v1.RecommendationService/Popular"
CRITICAL = Criticality.CRITICAL
SHEDDABLE = Criticality.SHEDDABLE


@pytest.fixture(autouse=True)
async def no_waiter_left() -> AsyncIterator[None]:
    """Waiters a test leaves in a queue are cancelled (their cleanup runs) before the loop ends."""
    yield
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


def admission(**policy: Any) -> tuple[Admission, ManualClock, list[Event]]:
    clock = ManualClock()
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    return Admission("recommendation", from_dict(ServerPolicy, policy), clock, bus), clock, seen


def sheds(seen: list[Event]) -> list[str]:
    return [e.reason for e in seen if isinstance(e, CallShed)]


async def refused(adm: Admission, level: Criticality = CRITICAL, left: float | None = None) -> str:
    with pytest.raises(ShedError) as info:
        await adm.acquire(M, level, left)
    err = info.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert dict(err.trailing_metadata())[PUSHBACK_KEY] == "200"
    return err.reason


def waiting(adm: Admission, level: Criticality = CRITICAL) -> asyncio.Task[Place]:
    return asyncio.ensure_future(adm.acquire(M, level, None))


async def test_static_refuses_past_max_in_flight_at_once_as_today() -> None:
    adm, _, seen = admission(max_in_flight=2)
    await adm.acquire(M, CRITICAL, None)
    await adm.acquire(M, CRITICAL, None)
    assert await refused(adm) == "limit"
    assert sheds(seen) == ["limit"]
    assert seen[0] == ConcurrencyLimitChanged("recommendation", "static", 2)


async def test_static_with_no_limit_steps_aside() -> None:
    adm, _, _ = admission(max_in_flight=0)
    assert not adm.active
    assert adm.limit == 0


async def rounds(adm: Admission, clock: ManualClock, rtt_s: float, n: int) -> None:
    """`n` rounds of as many calls as the limit admits, each taking `rtt_s`."""
    for _ in range(n):
        places = [await adm.acquire(M, CRITICAL, None) for _ in range(adm.limit)]
        await clock.advance(rtt_s)
        for place in places:
            adm.release(place, dropped=False)


@pytest.mark.parametrize("algorithm", ["vegas", "gradient2"])
async def test_an_adaptive_limit_grows_at_a_steady_rtt_and_shrinks_as_the_rtt_grows(
    algorithm: str,
) -> None:
    settings = {"vegas": {"probe_multiplier": 10_000}, "gradient2": {"min_limit": 2}}
    adm, clock, seen = admission(limit={"algorithm": algorithm, algorithm: settings[algorithm]})
    assert adm.limit == 20
    await rounds(adm, clock, 0.020, 5)
    grown = adm.limit
    assert grown > 20
    await rounds(adm, clock, 0.200, 10)
    assert adm.limit < grown
    limits = [e.limit for e in seen if isinstance(e, ConcurrencyLimitChanged)]
    assert limits[0] == 20 and limits[-1] == adm.limit, "every change is announced"


async def test_an_aimd_limit_grows_while_busy_and_backs_off_on_a_drop_or_a_slow_call() -> None:
    aimd = {"min_limit": 2, "timeout_s": 0.1}
    adm, clock, seen = admission(limit={"algorithm": "aimd", "aimd": aimd})
    assert adm.limit == 20
    await rounds(adm, clock, 0.020, 3)
    grown = adm.limit
    assert grown > 20, "one more place per sample while at least half the limit is in use"
    place = await adm.acquire(M, CRITICAL, None)
    await clock.advance(0.020)
    adm.release(place, dropped=True)
    assert adm.limit == int(grown * 0.9)
    backed_off = adm.limit
    await rounds(adm, clock, 0.200, 1)
    assert adm.limit < backed_off, "a call slower than timeout_s counts as a drop"
    changed = [e for e in seen if isinstance(e, ConcurrencyLimitChanged)]
    assert changed[-1].limit == adm.limit and changed[-1].algorithm == "aimd"


async def test_a_windowed_limit_moves_once_a_window_where_a_per_call_one_moves_every_call() -> None:
    # 15 rounds of as many calls as the limit admits, 200 ms each: 3 s. Per call, Gradient2 (at
    # gradient 1, a steady RTT) grows by smoothing x queue_size = 0.8 per sample; inside the
    # reference's WindowedLimit (1 s windows, >= 10 samples) it takes one sample per window.
    limits: dict[bool, list[int]] = {}
    for enabled in (False, True):
        policy = {"algorithm": "gradient2", "window": {"enabled": enabled}}
        adm, clock, seen = admission(limit=policy)
        await rounds(adm, clock, 0.200, 15)
        limits[enabled] = [e.limit for e in seen if isinstance(e, ConcurrencyLimitChanged)][1:]
    assert 1 <= len(limits[True]) <= 3, limits[True]
    assert len(limits[False]) > 3 * len(limits[True]), limits[False]
    assert limits[False][-1] > limits[True][-1]


async def test_vegas_ignores_an_rtt_of_zero_instead_of_failing() -> None:
    adm, _, _ = admission(limit={"algorithm": "vegas"})
    place = await adm.acquire(M, CRITICAL, None)
    adm.release(place, dropped=False)  # no time passed on the fake clock
    assert adm.limit == 20


async def test_fifo_serves_the_oldest_waiter_and_times_out_after_max_wait() -> None:
    adm, clock, seen = admission(max_in_flight=1, queue={"discipline": "fifo", "max_wait_s": 0.1})
    held = await adm.acquire(M, CRITICAL, None)
    first, second = waiting(adm), waiting(adm)
    await settle()
    adm.release(held, dropped=False)
    await settle()
    assert first.done() and not second.done()
    await clock.advance(0.1)
    with pytest.raises(ShedError):
        await second
    assert sheds(seen) == ["queue_timeout"]
    assert [e.waited_s for e in seen if isinstance(e, CallShed)] == [pytest.approx(0.1)]


async def test_codel_times_new_waiters_out_after_m_once_a_standing_queue_forms() -> None:
    adm, clock, seen = admission(max_in_flight=1, queue={"discipline": "codel"})
    await adm.acquire(M, CRITICAL, None)
    oldest = waiting(adm)  # the queue was empty: may wait N = 100 ms
    await clock.advance(0.050)
    middle = waiting(adm)  # not empty for 50 ms only: N too
    await clock.advance(0.051)
    assert oldest.done() and not middle.done(), "the first waited its N"
    late = waiting(adm)  # not empty for 101 ms: a standing queue, so M = 5 ms
    await clock.advance(0.005)
    assert late.done() and not middle.done()
    with pytest.raises(ShedError):
        await late
    shed = [e for e in seen if isinstance(e, CallShed)]
    assert [e.reason for e in shed] == ["queue_timeout", "queue_timeout"]
    assert shed[1].waited_s == pytest.approx(0.005)
    with pytest.raises(ShedError):
        await oldest
    await clock.advance(0.05)
    assert middle.done(), "the middle one keeps its N"
    with pytest.raises(ShedError):
        await middle


async def test_adaptive_lifo_is_fifo_without_a_standing_queue() -> None:
    adm, _, _ = admission(max_in_flight=1, queue={"discipline": "adaptive_lifo"})
    held = await adm.acquire(M, CRITICAL, None)
    first, second = waiting(adm), waiting(adm)
    await settle()
    adm.release(held, dropped=False)
    await settle()
    assert first.done() and not second.done()


async def test_adaptive_lifo_serves_the_newest_first_under_a_standing_queue() -> None:
    adm, clock, _ = admission(
        max_in_flight=1, queue={"discipline": "adaptive_lifo", "max_wait_s": 1.0}
    )
    held = await adm.acquire(M, CRITICAL, None)
    oldest = waiting(adm)
    await clock.advance(0.150)
    middle, newest = waiting(adm), waiting(adm)
    await settle()
    adm.release(held, dropped=False)
    await settle()
    assert newest.done() and not middle.done() and not oldest.done()


async def test_deadline_aware_refuses_a_call_with_less_left_than_the_service_time() -> None:
    adm, _, seen = admission(
        max_in_flight=64,
        limit={"deadline_aware": True},
        expected_service_s=0.020,
    )
    assert await refused(adm, left=0.005) == "deadline"
    await adm.acquire(M, CRITICAL, 0.050)
    assert sheds(seen) == ["deadline"]


async def slow_calls(adm: Admission, clock: ManualClock, rtt_s: float, n: int) -> None:
    """`n` rounds of 3 OK calls of `rtt_s`, each admitted behind a call already in flight
    (the busy average; none had nobody ahead), that one ending without a sample."""
    ahead = await adm.acquire(M, CRITICAL, None)
    for _ in range(n):
        places = [await adm.acquire(M, CRITICAL, None) for _ in range(3)]
        await clock.advance(rtt_s)
        for place in places:
            adm.release(place, dropped=False)
    adm.release(ahead, dropped=None)


DEADLINE_AWARE = {
    "max_in_flight": 4,
    "limit": {"deadline_aware": True},
    "expected_service_s": 0.050,
}


async def test_a_policy_swap_starts_the_expected_time_afresh() -> None:
    """The demo's miss (metastable-retry-storm, full-adaptive, 0 goodput before the trigger):
    the overload sweep's ~2 s RTTs, kept as the expected time across the swap, refused every
    call of the next experiment, whose attempts have 1 s."""
    adm, clock, seen = admission(**DEADLINE_AWARE)
    await slow_calls(adm, clock, 2.0, 20)
    assert adm.expected_s == pytest.approx(2.0, rel=0.05)
    adm.update(from_dict(ServerPolicy, DEADLINE_AWARE))
    assert adm.expected_s == adm.idle_s == 0.050
    held = await adm.acquire(M, CRITICAL, 0.9)
    assert await adm.acquire(M, CRITICAL, 0.9) and held
    assert sheds(seen) == []


async def test_an_idle_server_is_judged_by_its_calls_alone_so_refusals_cannot_lock_in() -> None:
    """With the busy average above every caller's deadline, a call arriving while others run
    is refused, but with none in flight the call is compared with what calls admitted with
    nobody ahead took; it is admitted, and its RTT brings the busy average back down."""
    adm, clock, seen = admission(**DEADLINE_AWARE)
    await slow_calls(adm, clock, 2.0, 20)  # a slowdown's queue
    first = await adm.acquire(M, CRITICAL, 0.9)  # none in flight: 0.050 expected
    assert await refused(adm, left=0.9) == "deadline"  # one in flight: ~2 s expected
    shed = [e for e in seen if isinstance(e, CallShed)][-1]
    assert shed.deadline_left_s == 0.9
    assert shed.expected_s == pytest.approx(2.0, rel=0.05)
    refusals = 1
    for _ in range(10):
        await clock.advance(0.050)
        adm.release(first, dropped=False)
        first = await adm.acquire(M, CRITICAL, 0.9)
        try:
            await adm.acquire(M, CRITICAL, 0.9)
            break
        except ShedError:
            refusals += 1
    assert 1 < refusals <= 5, "each lone call lowers the busy average by a fifth of the gap"
    assert adm.expected_s is not None and adm.expected_s < 0.9
    assert adm.idle_s == pytest.approx(0.050)
    assert await refused(adm, left=0.01) == "deadline"  # too little left, idle or not


async def test_sheddable_calls_are_refused_while_critical_ones_still_get_places() -> None:
    adm, _, seen = admission(max_in_flight=4, limit={"critical_reserve": 0.25})
    for _ in range(3):
        await adm.acquire(M, SHEDDABLE, None)
    assert await refused(adm, SHEDDABLE) == "criticality"
    await adm.acquire(M, CRITICAL, None)
    assert await refused(adm, CRITICAL) == "limit"
    assert sheds(seen) == ["criticality", "limit"]


async def test_a_critical_call_takes_a_free_place_that_queued_sheddable_calls_may_not() -> None:
    """Sheddable waiters that the reserve keeps out of a free place must not make a critical
    call that may take it wait or be refused (the criticality experiment's first run: 0.59
    of the critical calls served at 3x, 61 of them refused with reason criticality)."""
    adm, _, seen = admission(
        max_in_flight=2,
        limit={"critical_reserve": 0.5},
        queue={"discipline": "fifo", "max_wait_s": 1.0},
    )
    first = await adm.acquire(M, SHEDDABLE, None)
    await adm.acquire(M, CRITICAL, None)
    sheddable = waiting(adm, SHEDDABLE)  # the limit is reached: it waits
    await settle()
    adm.release(first, dropped=False)  # one place free, but only for critical calls
    await settle()
    assert not sheddable.done() and adm.queued == 1
    await adm.acquire(M, CRITICAL, None)  # takes the free place at once
    assert adm.in_flight == 2 and sheds(seen) == []


async def test_a_full_queue_drops_its_least_critical_waiter_for_a_critical_call() -> None:
    adm, _, seen = admission(max_in_flight=1, queue={"discipline": "fifo", "max_length": 1})
    held = await adm.acquire(M, CRITICAL, None)
    sheddable = waiting(adm, SHEDDABLE)
    await settle()
    critical = waiting(adm, CRITICAL)
    await settle()
    with pytest.raises(ShedError):
        await sheddable
    assert sheds(seen) == ["criticality"]
    assert await refused(adm, CRITICAL) == "queue_full", "no one less critical left to drop"
    adm.release(held, dropped=False)
    await settle()
    assert critical.done() and critical.exception() is None


async def test_a_policy_swap_changes_the_algorithm_for_calls_from_then_on() -> None:
    adm, _, seen = admission(max_in_flight=2)
    held = await adm.acquire(M, CRITICAL, None)
    adm.update(from_dict(ServerPolicy, {"limit": {"algorithm": "vegas"}}))
    assert adm.limit == 20 and adm.in_flight == 1, "calls in flight keep their places"
    adm.release(held, dropped=None)
    assert adm.in_flight == 0
    assert [e for e in seen if isinstance(e, ConcurrencyLimitChanged)][-1].algorithm == "vegas"


async def test_a_policy_swap_starts_a_learnt_limit_afresh_as_it_does_breakers() -> None:
    policy = from_dict(ServerPolicy, {"limit": {"algorithm": "gradient2"}})
    adm, clock, _ = admission(limit={"algorithm": "gradient2"})
    await rounds(adm, clock, 0.020, 5)
    assert adm.limit > 20, "learnt from the samples"
    adm.update(policy)  # the same policy again: a new variant's swap
    assert adm.limit == 20


def test_a_new_shedding_layer_announces_its_limit_once() -> None:
    """The first limit is one event (a user printing the bus saw it twice at start)."""
    bus = EventBus()
    seen: list[object] = []
    bus.subscribe(seen.append, kinds=(ConcurrencyLimitChanged,))
    layer = SheddingInterceptor("kv", ServerPolicy(max_in_flight=7), bus)
    assert seen == [ConcurrencyLimitChanged("kv", "static", 7)]
    layer.update(ServerPolicy(max_in_flight=9))
    assert seen[-1] == ConcurrencyLimitChanged("kv", "static", 9)
