"""A PID controller that sets the share of calls a server refuses from its queueing delay,
after Uber's Cinnamon ("PID Controller for Cinnamon", 2023), with the refusals taken from the
least critical calls first.

Every interval (`interval_x` service times) the controller reads the queueing delay, in
service times, and moves the rejection ratio by the velocity form of a PID controller:

    e = delay_x - target_x
    ratio += kp x (e - e_prev) + ki x e x interval_x + kd x (e - 2 e_prev + e_prev2)

clamped to [0, max_ratio]. Counting time and delay in service times is what makes one set of
gains fit a 50 ms backend and a 1 s one. The velocity form keeps no separate integral, so a
ratio pinned at 0 or at max_ratio never winds up: it moves off the clamp the first interval the
error changes sign.

The ratio becomes a refusal share per criticality from the last interval's arrivals:
SHEDDABLE is refused first, then SHEDDABLE_PLUS, and so on up, until the shares add up to the
ratio (Cinnamon's priority threshold over the cumulative distribution of priorities). Each
criticality refuses its share deterministically (a running debt, not a coin), so a ratio of
0.3 refuses exactly 3 calls in 10.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.options import check, option

MIN_INTERVAL_S = 0.01
"""The shortest control interval, whatever the service time: below it a tick sees too few
calls to say anything."""

MAX_CATCH_UP = 100
"""Intervals applied at most at once after a silence (no arrivals, so no ticks)."""


@dataclass(frozen=True, slots=True)
class PidPolicy:
    """The `limit.pid` settings: Cinnamon-style rejection from queueing delay."""

    target_x: float = option(
        0.5,
        gt=0,
        le=100,
        doc="the queueing delay held, in service times: a queue that never empties under "
        "overload keeps every worker busy, and an accepted call ends within 1.5 service "
        "times, inside the 2-4 service-time deadlines callers give; with C workers declared, "
        "at least 1 / C (one waiting call)",
    )
    kp: float = option(0.2, ge=0, le=10, doc="proportional gain: ratio per service time of error")
    ki: float = option(
        0.2, ge=0, le=10, doc="integral gain: ratio per service time of error, per service time"
    )
    kd: float = option(
        0.0,
        ge=0,
        le=10,
        doc="derivative gain; 0: the delay is sampled from a queue whose length jumps by "
        "whole calls, and a derivative amplifies those jumps",
    )
    interval_x: float = option(
        0.5,
        gt=0,
        le=100,
        doc="service times between updates (at least 10 ms): the delay moves within an "
        "interval and the gains are per service time, so it fits any backend speed",
    )
    max_ratio: float = option(
        0.99,
        gt=0,
        le=1,
        doc="the largest share refused; below 1, a call in a hundred still probes the backend",
    )

    def __post_init__(self) -> None:
        check(self)


def queueing_delay_x(
    in_flight: int, concurrency: int | None, recent_s: float | None, service_s: float | None
) -> float:
    """The queueing delay in service times. With the backend's concurrency C declared, the
    calls in flight beyond C are the queue, and it drains C per service time: (in_flight - C)
    / C, known the moment a call arrives, as Cinnamon reads its own queue. Without it, what the
    recent calls took beyond a call's time alone (recent / service - 1), which lags by a round
    trip; 0 when nothing is in flight or nothing has been timed."""
    if concurrency:
        return max(0, in_flight - concurrency) / concurrency
    if not in_flight or not recent_s or not service_s:
        return 0.0
    return max(0.0, recent_s / service_s - 1.0)


def refusal_shares(ratio: float, arrivals: dict[Criticality, int]) -> dict[Criticality, float]:
    """The share of each criticality's calls to refuse so that `ratio` of all arrivals are
    refused, least critical first (a criticality nobody sent refuses nothing)."""
    total = sum(arrivals.values())
    shares = dict.fromkeys(Criticality, 0.0)
    if total == 0:
        shares[Criticality.CRITICAL] = ratio  # the default criticality: all calls are it
        return shares
    left = ratio * total
    for level in sorted(Criticality):
        count = arrivals.get(level, 0)
        if count == 0 or left <= 0:
            continue
        shares[level] = min(1.0, left / count)
        left -= count * shares[level]
    return shares


class PidRejector:
    """The controller and its refusals; `refuses` is all a server asks, once per call.

    With the backend's concurrency C declared, the delay held (`target_x`) is at least one
    waiting call, 1 / C service times. The signal moves by whole calls, and a ratio refuses
    arrivals whatever queue they find, so below one call it holds the queue empty much of
    the time, and an empty queue is a worker idle until the next arrival: on one worker at
    1.5x offered (deadline 4 service times, Poisson arrivals) a target of 0.5 kept 0.86 of
    capacity, one call 0.955 (tests/unit/mesh/test_pid_grid_model.py). From 2 workers up
    the policy's 0.5 is a call or more, and stays."""

    def __init__(self, policy: PidPolicy, start_s: float, concurrency: int | None = None) -> None:
        self.policy = policy
        self.target_x = max(policy.target_x, 1 / concurrency) if concurrency else policy.target_x
        self.ratio = 0.0
        self.delay_x = 0.0
        self._announced = 0.0
        self._delay_sum = 0.0
        self._delay_count = 0
        self._errors = (-self.target_x, -self.target_x)  # an empty queue: no kick
        self._next_s = start_s
        self._arrivals = dict.fromkeys(Criticality, 0)
        self._mix: dict[Criticality, int] = {}
        self._shares = refusal_shares(0.0, {})
        self._debt = dict.fromkeys(Criticality, 0.0)

    def tick(self, now_s: float, delay_x: float, service_s: float) -> bool:
        """Takes the delay an arrival sees and, if an interval has ended by `now_s`, updates
        the ratio from the interval's mean delay (one step per ended interval, a silence
        counting as intervals at that delay). The mean, not the last sample: a queue of C
        workers moves by 1 / C service times per call, and a single sample would hand that
        jump to the ratio. True when the ratio moved by 0.01 or more since it was last
        announced, or reached or left 0 (worth an event)."""
        self._delay_sum += delay_x
        self._delay_count += 1
        if now_s < self._next_s:
            return False
        interval_s = max(MIN_INTERVAL_S, self.policy.interval_x * service_s)
        steps = min(MAX_CATCH_UP, 1 + int((now_s - self._next_s) / interval_s))
        self._next_s = now_s + interval_s
        self.delay_x = self._delay_sum / self._delay_count
        self._delay_sum, self._delay_count = 0.0, 0
        for _ in range(steps):
            self._step(self.delay_x - self.target_x)
        if any(self._arrivals.values()):
            self._mix = dict(self._arrivals)
            self._arrivals = dict.fromkeys(Criticality, 0)
        self._shares = refusal_shares(self.ratio, self._mix)
        moved = abs(self.ratio - self._announced) >= 0.01 or (self.ratio == 0) != (
            self._announced == 0
        )
        if moved:
            self._announced = self.ratio
        return moved

    def _step(self, error: float) -> None:
        p = self.policy
        last, before = self._errors
        change = p.kp * (error - last) + p.ki * error * p.interval_x
        change += p.kd * (error - 2 * last + before)
        self.ratio = min(p.max_ratio, max(0.0, self.ratio + change))
        self._errors = (error, last)

    def refuses(self, criticality: Criticality) -> bool:
        """Whether this arrival is refused (it counts in the next interval's mix either way)."""
        self._arrivals[criticality] += 1
        share = self._shares[criticality]
        if share <= 0.0:
            return False
        debt = self._debt[criticality] + share
        refused = debt >= 1.0 - 1e-9
        self._debt[criticality] = debt - 1.0 if refused else debt
        return refused
