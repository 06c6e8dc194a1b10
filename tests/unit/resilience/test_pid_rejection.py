"""The PID rejector (limit.algorithm "pid", after Uber's Cinnamon) in a server's admission,
against a simulated backend of C workers x S seconds (a FIFO pool) on a fake clock: under a
steady overload it settles at the ratio the capacity leaves (1 - capacity / offered) without
swinging, refuses the least critical calls first, and lets go when the load drops."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from grpc_aio_resilience import PidPolicy, RejectionRatioChanged, from_dict
from grpc_aio_resilience.admission import Admission, Place
from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import ShedError
from grpc_aio_resilience.events import CallShed, Event, EventBus
from grpc_aio_resilience.options import OptionError
from grpc_aio_resilience.rejection import PidRejector, queueing_delay_x, refusal_shares

M = "/mesh.v1.RecommendationService/Recommend"
WORKERS = 4
SERVICE_S = 0.25
CAPACITY = WORKERS / SERVICE_S  # 16 calls/s
PID_LIMIT = {"max_in_flight": 0, "limit": {"algorithm": "pid"}}


class SimClock:
    """Time the simulation sets; nothing here sleeps."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("admit_now and release never sleep")


class PoolPolicy(ServerPolicy):
    """A server in front of a pool of WORKERS x SERVICE_S, declared as the mesh's pools are."""

    def declared_concurrency(self) -> int | None:
        return WORKERS

    def declared_service_s(self) -> float | None:
        return SERVICE_S


@dataclass
class Run:
    """What a simulated run saw: per second, arrivals and refusals by criticality, the ratios
    the arrivals met."""

    arrived: dict[tuple[int, Criticality], int] = field(default_factory=dict)
    refused: dict[tuple[int, Criticality], int] = field(default_factory=dict)
    ratios: dict[int, list[float]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    def ratio(self, second: int) -> float:
        """The mean ratio the arrivals of that second met."""
        return sum(self.ratios[second]) / len(self.ratios[second])

    def refused_share(self, seconds: range, level: Criticality | None = None) -> float:
        keys = [(s, c) for s in seconds for c in Criticality if level in (None, c)]
        arrived = sum(self.arrived.get(k, 0) for k in keys)
        return sum(self.refused.get(k, 0) for k in keys) / arrived


def simulate(
    rate_at: Callable[[float], float],
    duration_s: float,
    mix: Callable[[int], Criticality] = lambda _: Criticality.CRITICAL,
    **pid: float,
) -> Run:
    """Evenly spaced arrivals at rate_at(t) through admission into a FIFO pool of WORKERS."""
    clock, bus, run = SimClock(), EventBus(), Run()
    bus.subscribe(run.events.append)
    policy = from_dict(
        ServerPolicy, {"max_in_flight": 0, "limit": {"algorithm": "pid", "pid": pid}}
    )
    adm = Admission("recommendation", PoolPolicy(max_in_flight=0, limit=policy.limit), clock, bus)
    free = [0.0] * WORKERS
    ends: list[tuple[float, int, Place]] = []
    order = itertools.count()
    for n in itertools.count():
        t = clock.t + 1.0 / rate_at(clock.t)
        if t >= duration_s:
            return run
        while ends and ends[0][0] <= t:
            clock.t, _, done = heapq.heappop(ends)
            adm.release(done, False)
        clock.t = t
        level, second = mix(n), int(t)
        run.arrived[second, level] = run.arrived.get((second, level), 0) + 1
        place: Place | None = None
        try:
            place = adm.admit_now(M, level, None)
        except ShedError:
            run.refused[second, level] = run.refused.get((second, level), 0) + 1
        run.ratios.setdefault(second, []).append(adm._rejector.ratio if adm._rejector else 0.0)
        if place is None:
            continue
        start = max(t, heapq.heappop(free))
        heapq.heappush(free, start + SERVICE_S)
        heapq.heappush(ends, (start + SERVICE_S, next(order), place))
    raise AssertionError("unreachable")


@pytest.mark.parametrize("offered_x", [3.0, 8.0])
def test_a_steady_overload_settles_at_the_ratio_the_capacity_leaves(offered_x: float) -> None:
    run = simulate(lambda _: offered_x * CAPACITY, 60.0)
    settled = range(30, 60)
    assert run.refused_share(settled) == pytest.approx(1 - 1 / offered_x, abs=0.03)
    ratios = [run.ratio(s) for s in settled]
    assert max(ratios) - min(ratios) <= 0.05  # the amplitude docs/library/pid-shedding.md states


def test_the_refusals_are_the_rejectors_and_say_so() -> None:
    run = simulate(lambda _: 3 * CAPACITY, 10.0)
    reasons = {e.reason for e in run.events if isinstance(e, CallShed)}
    assert reasons == {"ratio"}
    changes = [e for e in run.events if isinstance(e, RejectionRatioChanged)]
    assert changes and max(e.delay_x for e in changes) > PidPolicy().target_x


def test_it_lets_go_when_the_load_drops() -> None:
    run = simulate(lambda t: 8 * CAPACITY if t < 20 else 0.5 * CAPACITY, 40.0)
    assert run.refused_share(range(15, 20)) > 0.8
    assert run.refused_share(range(25, 40)) == 0.0  # within 5 s (20 service times)
    assert run.ratio(39) == 0.0


def test_sheddable_calls_go_first() -> None:
    def mix(n: int) -> Criticality:
        return Criticality.CRITICAL if n % 5 == 0 else Criticality.SHEDDABLE

    run = simulate(lambda _: 3 * CAPACITY, 60.0, mix)
    settled = range(30, 60)
    assert run.refused_share(settled, Criticality.CRITICAL) <= 0.02
    assert run.refused_share(settled, Criticality.SHEDDABLE) == pytest.approx(
        (1 - 1 / 3) / 0.8, abs=0.04
    )


def test_under_capacity_nothing_is_refused() -> None:
    run = simulate(lambda _: 0.9 * CAPACITY, 30.0)
    assert run.refused == {}


def test_shares_take_the_least_critical_first_and_a_ratio_exactly() -> None:
    arrivals = {Criticality.SHEDDABLE: 20, Criticality.CRITICAL: 80}
    shares = refusal_shares(0.5, arrivals)
    assert shares[Criticality.SHEDDABLE] == 1.0
    assert shares[Criticality.CRITICAL] == pytest.approx(30 / 80)
    rejector = PidRejector(PidPolicy(), 0.0)
    rejector.ratio = 0.3
    rejector._shares = refusal_shares(0.3, {})
    assert sum(rejector.refuses(Criticality.CRITICAL) for _ in range(100)) == 30


def test_the_delay_is_the_queue_beyond_the_declared_workers() -> None:
    assert queueing_delay_x(12, 4, None, 0.25) == 2.0
    assert queueing_delay_x(3, 4, None, 0.25) == 0.0
    assert queueing_delay_x(5, None, 0.5, 0.25) == 1.0
    assert queueing_delay_x(0, None, 0.5, 0.25) == 0.0


def test_options_are_checked_at_build_time() -> None:
    with pytest.raises(OptionError):
        from_dict(ServerPolicy, {"limit": {"algorithm": "pid", "pid": {"max_ratio": 1.5}}})


def test_a_call_the_queue_would_make_late_is_refused_for_its_deadline() -> None:
    """With the workers declared, the ratio is not all: a call whose deadline cannot hold the
    wait for a worker is refused (`deadline`), before the ratio counts it."""
    clock, bus = SimClock(), EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    policy = PoolPolicy(max_in_flight=0, limit=from_dict(ServerPolicy, PID_LIMIT).limit)
    adm = Admission("recommendation", policy, clock, bus)
    for _ in range(WORKERS):
        adm.admit_now(M, Criticality.CRITICAL, 1.0)
    assert adm.admit_now(M, Criticality.CRITICAL, 2 * SERVICE_S + 0.01) is not None
    with pytest.raises(ShedError):
        adm.admit_now(M, Criticality.CRITICAL, 2 * SERVICE_S - 0.01)
    assert [e.reason for e in seen if isinstance(e, CallShed)] == ["deadline"]


def test_on_one_worker_the_target_is_a_whole_waiting_call() -> None:
    assert PidRejector(PidPolicy(), 0.0, concurrency=1).target_x == 1.0
    assert PidRejector(PidPolicy(), 0.0, concurrency=WORKERS).target_x == 0.5
    assert PidRejector(PidPolicy(target_x=2.0), 0.0, concurrency=1).target_x == 2.0
