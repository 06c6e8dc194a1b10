"""The guard over a topology run's own outcomes: its window, bounds and minimum, on a fake clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from grpc_resilience_mesh.chaos.topology.guard import Breach, Guard, GuardSpec


@dataclass(frozen=True)
class Call:
    started_s: float
    latency_s: float
    code: str = "OK"


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _feed(guard: Guard, clock: FakeClock, calls: int, code: str, latency_s: float = 0.01) -> None:
    """`calls` calls ending at the clock's now, each `latency_s` long."""
    for _ in range(calls):
        guard.watch(Call(clock.now - latency_s, latency_s, code))


def test_the_error_rate_trips_once_the_window_has_its_minimum() -> None:
    clock = FakeClock()
    guard = Guard(GuardSpec(min_requests=10, max_error_rate=0.5), clock)
    _feed(guard, clock, 9, "UNAVAILABLE")
    assert guard.check() is None  # 9 failures of 9, but fewer calls than min_requests
    _feed(guard, clock, 1, "UNAVAILABLE")
    breach = guard.check()
    assert breach == Breach("error_rate", 1.0, 0.5, clock.now)
    assert str(breach) == "error_rate 1 > 0.5"


def test_a_rate_at_the_bound_holds_and_one_failure_more_trips() -> None:
    clock = FakeClock()
    guard = Guard(GuardSpec(min_requests=10, max_error_rate=0.5), clock)
    _feed(guard, clock, 5, "OK")
    _feed(guard, clock, 5, "DEADLINE_EXCEEDED")
    assert guard.check() is None  # 0.5 is not above 0.5
    _feed(guard, clock, 1, "DEADLINE_EXCEEDED")
    breach = guard.check()
    assert breach is not None and breach.metric == "error_rate"
    assert breach.value == pytest.approx(6 / 11)
    assert str(breach) == "error_rate 0.545 > 0.5"


def test_failures_older_than_the_window_are_forgotten() -> None:
    clock = FakeClock()
    guard = Guard(GuardSpec(window_s=1.0, min_requests=10), clock)
    _feed(guard, clock, 20, "UNAVAILABLE")
    clock.now += 1.5
    _feed(guard, clock, 10, "OK")
    assert guard.check() is None  # the 20 failures ended 1.5 s ago: out of the window
    _feed(guard, clock, 11, "UNAVAILABLE")
    assert guard.check() is not None


def test_the_window_is_of_completions_not_of_starts() -> None:
    clock = FakeClock()
    guard = Guard(GuardSpec(window_s=1.0, min_requests=10), clock)
    for _ in range(10):  # started 3 s ago, failed just now (a deadline of 3 s)
        guard.watch(Call(clock.now - 3.0, 3.0, "DEADLINE_EXCEEDED"))
    breach = guard.check()
    assert breach is not None and breach.metric == "error_rate"


def test_p99_trips_on_the_slowest_percent_of_the_window() -> None:
    clock = FakeClock()
    spec = GuardSpec(min_requests=10, max_error_rate=None, max_p99_s=0.5)
    guard = Guard(spec, clock)
    _feed(guard, clock, 99, "OK", latency_s=0.1)
    _feed(guard, clock, 1, "OK", latency_s=0.9)
    assert guard.check() is None  # nearest-rank p99 of 100 calls is the 99th: 0.1 s
    _feed(guard, clock, 1, "OK", latency_s=0.9)
    breach = guard.check()
    assert breach == Breach("p99_s", 0.9, 0.5, clock.now)
    assert str(breach) == "p99_s 0.9 > 0.5"


def test_goodput_counts_ok_calls_per_second_of_the_window() -> None:
    clock = FakeClock()
    spec = GuardSpec(window_s=1.0, min_requests=10, max_error_rate=None, min_goodput_per_s=20)
    guard = Guard(spec, clock)
    clock.now += 2.0  # the guard has watched for longer than its window
    _feed(guard, clock, 25, "OK")
    assert guard.check() is None  # 25 OK in the last second
    clock.now += 0.5
    _feed(guard, clock, 5, "UNAVAILABLE")
    _feed(guard, clock, 10, "OK")
    clock.now += 0.6  # the first 25 have left the window: 10 OK in 1 s
    breach = guard.check()
    assert breach == Breach("goodput_per_s", 10.0, 20, clock.now)
    assert str(breach) == "goodput_per_s 10 < 20"


def test_goodput_early_in_the_run_is_over_the_time_watched() -> None:
    clock = FakeClock()
    spec = GuardSpec(window_s=1.0, min_requests=10, max_error_rate=None, min_goodput_per_s=20)
    guard = Guard(spec, clock)
    clock.now += 0.5
    _feed(guard, clock, 12, "OK")  # 12 in half a second is 24/s, not 12/s
    assert guard.check() is None


def test_the_error_rate_is_judged_first() -> None:
    clock = FakeClock()
    spec = GuardSpec(min_requests=10, max_error_rate=0.1, max_p99_s=0.01)
    guard = Guard(spec, clock)
    _feed(guard, clock, 10, "UNAVAILABLE", latency_s=1.0)
    breach = guard.check()
    assert breach is not None and breach.metric == "error_rate"


@pytest.mark.parametrize(
    "bad",
    [{"check_every_s": 0.3}, {"check_every_s": 0}, {"window_s": 0}, {"min_requests": 0}],
)
def test_a_guard_that_cannot_protect_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        GuardSpec(**bad)  # type: ignore[arg-type]


async def test_run_reports_a_breach_once_and_returns() -> None:
    clock = FakeClock()
    guard = Guard(GuardSpec(min_requests=10), clock)
    _feed(guard, clock, 10, "UNAVAILABLE")
    seen: list[Breach] = []
    await asyncio.wait_for(guard.run(seen.append, asyncio.Event()), 1.0)
    assert [b.metric for b in seen] == ["error_rate"]


async def test_run_ends_without_a_breach_when_stopped() -> None:
    clock = FakeClock()
    guard = Guard(GuardSpec(min_requests=10), clock)
    _feed(guard, clock, 10, "OK")
    stop = asyncio.Event()
    stop.set()
    seen: list[Breach] = []
    await asyncio.wait_for(guard.run(seen.append, stop), 1.0)
    assert seen == []


def test_slow_failures_are_judged_though_fewer_than_the_minimum_end_per_window() -> None:
    """A blackholed link under 8 closed-loop workers and a 1 s deadline: 8 calls end per
    second, all DEADLINE_EXCEEDED. The window never holds 10, yet the guard must trip once 10
    have ended, on the last 10."""
    clock = FakeClock()
    guard = Guard(GuardSpec(window_s=1.0, min_requests=10, max_error_rate=0.5), clock)
    _feed(guard, clock, 8, "DEADLINE_EXCEEDED", latency_s=1.0)
    clock.now += 1.05  # each worker's next call ends a deadline (and a little) later
    assert guard.check() is None  # 8 calls so far: fewer than the minimum
    _feed(guard, clock, 8, "DEADLINE_EXCEEDED", latency_s=1.0)
    breach = guard.check()
    assert breach is not None and breach.metric == "error_rate" and breach.value == 1.0


def test_goodput_counts_only_the_window_when_older_calls_fill_the_minimum() -> None:
    clock = FakeClock()
    spec = GuardSpec(window_s=1.0, min_requests=10, max_error_rate=None, min_goodput_per_s=5)
    guard = Guard(spec, clock)
    _feed(guard, clock, 10, "OK")
    clock.now += 2.0  # nothing ended since: the 10 OK calls are older than the window
    breach = guard.check()
    assert breach is not None and breach.metric == "goodput_per_s" and breach.value == 0
