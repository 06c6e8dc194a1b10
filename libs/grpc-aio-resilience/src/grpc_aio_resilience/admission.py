"""A server's admission of unary calls: one concurrency limit (static, Vegas, Gradient2, AIMD),
deadline-aware refusal, an optional queue for a place, and criticality (sheddable first).

`acquire` gives a call a place or raises ShedError (RESOURCE_EXHAUSTED with pushback) after
emitting CallShed with its reason; `release` gives the place back and feeds the limit the
call's RTT, as the reference's SimpleLimiter listener does: `dropped=False` is onSuccess (the
RTT is a sample), `True` is onDropped (timed out or refused further on: loss-based limits
shrink), `None` is onIgnore (no meaningful RTT: no sample). Refusals made here never took a
place, so they are no sample either, as in the reference.

Deadline-aware refusal compares a call's remaining deadline with the time a call admitted now
is expected to take: while calls are in flight, an average of recent RTTs (waiting behind the
others included); with none in flight, the average RTT of calls admitted with nobody ahead of
them, both first the policy's expected service time and both started afresh by every policy
swap. The idle figure is what keeps the refusal from locking itself in: the busy average
moves only with calls it admits, so an average taken under a heavier load (an earlier
experiment's, or a slowdown's queue) that exceeds every caller's deadline would refuse every
call for good, and with none in flight nothing is queued to make the next one late.
"""

from __future__ import annotations

import asyncio
import bisect
import math

from grpc_aio_resilience.admission_policy import LimitPolicy, ServerPolicy
from grpc_aio_resilience.admission_queue import Waiter, WaitQueue
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import ShedError, ShedReason
from grpc_aio_resilience.events import (
    CallShed,
    ConcurrencyLimitChanged,
    EventBus,
    RejectionRatioChanged,
)
from grpc_aio_resilience.intake import IntakeGate
from grpc_aio_resilience.limits import (
    AIMDLimit,
    AIMDSettings,
    FixedLimit,
    Gradient2Limit,
    Gradient2Settings,
    Limit,
    VegasLimit,
    VegasSettings,
    WindowedLimit,
    WindowedSettings,
)
from grpc_aio_resilience.options import to_dict
from grpc_aio_resilience.rejection import PidRejector, queueing_delay_x

EXPECTED_RTT_WEIGHT = 0.2
"""Weight of each new RTT in the expected times (exponential averages)."""

FITTED = ("vegas", "gradient2", "aimd")
"""The adaptive limits a declared concurrency C fits (LimitPolicy.fitted_to). A call with a
deadline gets a place only where the workers can finish it in time (Admission.queued_s),
and then at least C + WAITING places: the limit's floor is C, and at a limit of C a worker
that finishes idles until the next call arrives, 1 / (offered x C) of a service time on
average (0.86 of capacity at 4 workers and 1.5x offered)."""
WAITING = 2
"""Places beyond the workers for calls whose deadlines hold the wait. With one, a single
worker at 1.5x offered still idled 12% of the time (Poisson arrivals,
tests/unit/mesh/test_overload_grid_model.py); two keep every cell of the grid's model at
0.9 or more where the deadline allows them. A few, not a share of C: on 20 workers a wait
per worker would be a queue of a whole service time that the adaptive limit had kept out.
Without a deadline the adaptive limit alone decides, as nothing bounds such a wait."""
DEADLINE_CHECKED = (*FITTED, "pid")
"""The algorithms that, with a declared concurrency, refuse a call whose deadline cannot hold
the wait for a worker (reason `deadline`). The PID rejector among them: a ratio says how many
arrivals to refuse, not which, and a FIFO behind it serves a call its caller has already
given up on (on one worker, a call that finds one call served and one waiting ends past a
2-service-time deadline, and holds the worker until then); Cinnamon's queue drops such calls
on their timeouts too."""

Place = tuple[float, int]
"""When a call got its place (clock seconds) and the calls in flight with it."""


def _averaged(old: float | None, rtt_s: float) -> float:
    """The exponential average with one more RTT (the RTT itself as the first)."""
    w = EXPECTED_RTT_WEIGHT
    return rtt_s if old is None else (1 - w) * old + w * rtt_s


def build_limit(policy: LimitPolicy, max_in_flight: int) -> Limit | None:
    """The limit the policy names (None: static with max_in_flight 0, no limit); an adaptive
    one inside a WindowedLimit when `window.enabled`."""
    adaptive: Limit
    if policy.algorithm == "vegas":
        adaptive = VegasLimit(VegasSettings(**to_dict(policy.vegas)))
    elif policy.algorithm == "gradient2":
        adaptive = Gradient2Limit(Gradient2Settings(**to_dict(policy.gradient2)))
    elif policy.algorithm == "aimd":
        adaptive = AIMDLimit(AIMDSettings(**to_dict(policy.aimd)))
    else:
        return FixedLimit(max_in_flight) if max_in_flight else None
    if not policy.window.enabled:
        return adaptive
    window = to_dict(policy.window)
    del window["enabled"]
    settings = WindowedSettings(**window)
    return WindowedLimit(adaptive, settings)


class Admission:
    """Places for unary calls under the current limit; see the module docstring."""

    def __init__(self, service: str, policy: ServerPolicy, clock: Clock, bus: EventBus) -> None:
        self._service = service
        self._clock = clock
        self._bus = bus
        self._algorithm = "static"
        self._concurrency: int | None = None
        self._free: list[float] = []
        self._fitted = False
        self._deadline_checked = False
        self._limit: Limit | None = None
        self._queue = WaitQueue(policy.queue, clock)
        self.waiters = self._queue.waiters
        self.intake = IntakeGate(policy.intake, clock)
        self.in_flight = 0
        self.expected_s: float | None = None
        self.idle_s: float | None = None
        self.fixed_shares: tuple[int, ...] | None = None
        self.update(policy)

    def update(self, policy: ServerPolicy) -> None:
        """New settings for calls arriving from now on. The limit starts afresh from its initial
        value and the expected times from the policy's expected service time, as a swap gives fresh
        breakers, budgets and bulkheads: every experiment variant (every sweep point) starts
        from the same state, not from what the last one learnt (a sweep's 1 s calls, kept as
        the expected time, refused every call of a metastable run's 1 s attempts)."""
        self._algorithm = policy.limit.algorithm
        self._concurrency = policy.declared_concurrency()
        self._free = [0.0] * (self._concurrency or 0)
        self._fitted = bool(self._concurrency) and policy.limit.algorithm in FITTED
        self._deadline_checked = bool(self._concurrency) and self._algorithm in DEADLINE_CHECKED
        self._limit = build_limit(policy.limit.fitted_to(self._concurrency), policy.max_in_flight)
        pid = policy.limit.pid
        self._rejector = (
            PidRejector(pid, self._clock.now(), self._concurrency)
            if self._algorithm == "pid"
            else None
        )
        self._announce()
        self._policy = policy.limit
        self._queue.policy = policy.queue
        self.intake.policy = policy.intake
        self._pushback_s = policy.shed_pushback_ms / 1000.0
        self.expected_s = self.idle_s = policy.declared_service_s()
        self.hand_over()
        self.fixed_shares = self._fixed_shares()

    def _fixed_shares(self) -> tuple[int, ...] | None:
        """Places per criticality (by value) when admission is only a count against a fixed
        limit (no limit to feed; no rejector, deadline, intake, queue or workers' times): a layer
        may count calls in and out itself (`in_flight`), ask `admit_now` only to refuse one and
        `hand_over` while `waiters` wait (a queue a swap turned off). None: use `release`."""
        if (
            not isinstance(self._limit, FixedLimit)
            or self._rejector is not None
            or self._policy.deadline_aware
            or self.intake.enabled
            or self._queue.enabled
            or self._free
        ):
            return None
        shares = [0] * (max(Criticality) + 1)
        for level in Criticality:
            shares[level] = self.share(level)
        return tuple(shares)

    @property
    def limit(self) -> int:
        """Calls admitted at once (0: no limit)."""
        return 0 if self._limit is None else self._limit.limit

    @property
    def active(self) -> bool:
        """Whether admission can refuse anything (else the layer steps aside, as today)."""
        return (
            self._limit is not None
            or self._rejector is not None
            or self._policy.deadline_aware
            or self.intake.enabled
        )

    @property
    def queued(self) -> int:
        return len(self._queue)

    def share(self, criticality: Criticality) -> int:
        """The places calls of this criticality may fill (CRITICAL and above: all of them)."""
        limit = self.limit
        if criticality >= Criticality.CRITICAL:
            return limit
        return max(limit - math.ceil(limit * self._policy.critical_reserve), 0)

    async def acquire(
        self, method: str, criticality: Criticality, remaining_s: float | None
    ) -> Place:
        """A place for the call, or ShedError (deadline, criticality, limit, queue_*)."""
        place = self.admit_now(method, criticality, remaining_s)
        if place is not None:
            return place
        return await self.queue_for(method, criticality, remaining_s)

    def admit_now(
        self,
        method: str,
        criticality: Criticality,
        remaining_s: float | None,
        waited_s: float | None = None,
    ) -> Place | None:
        """`acquire` without waiting: a place, ShedError, or None when the call is to queue for
        one (`queue_for`). The server layer calls this first: most calls get their place
        here, without a coroutine of their own. `waited_s`: the call's wait in front of
        admission (grpc_aio_resilience.intake), if known."""
        if waited_s is not None and self.intake.enabled and self.intake.refuses(waited_s):
            raise self._refuse("intake", method, criticality, remaining_s or 0.0, waited_s=waited_s)
        expected_s = self.expected_now_s() if self._policy.deadline_aware else None
        if expected_s is not None and remaining_s is not None and remaining_s < expected_s:
            raise self._refuse(
                "deadline", method, criticality, remaining_s, expected_s, marked=True
            )
        queued_s = self.queued_s() if self._deadline_checked and remaining_s is not None else None
        if queued_s is not None and remaining_s is not None and remaining_s < queued_s:
            # the caller's deadline is why, as deadline-aware's; before the ratio, whose
            # share is then of the calls that could still finish
            raise self._refuse("deadline", method, criticality, remaining_s, queued_s, marked=True)
        if self._rejector is not None and self._rejects(criticality):
            raise self._refuse("ratio", method, criticality)
        if self._limit is None:
            return self._take()
        places = self.share(criticality)
        if queued_s is not None and self._fitted:
            places = max(places, len(self._free) + WAITING)
        may_take = self.in_flight < places
        if may_take and not (self._queue and self._waiter_may_take()):
            return self._take()
        if self.in_flight < self.limit and not may_take:  # reserved for more critical calls
            raise self._refuse("criticality", method, criticality)
        if not self._queue.enabled:
            raise self._refuse("limit", method, criticality)
        return None

    async def queue_for(
        self, method: str, criticality: Criticality, remaining_s: float | None
    ) -> Place:
        """Waits in the queue for a place (after `admit_now` said to), or ShedError."""
        expected_s = self.expected_s if self._policy.deadline_aware else None
        queue_s = self._queue.timeout_s()
        wait_s = queue_s
        if remaining_s is not None:
            wait_s = min(wait_s, remaining_s - (expected_s or 0.0))
        return await self._wait(method, criticality, wait_s, cut=wait_s < queue_s)

    def expected_now_s(self) -> float | None:
        """What a call admitted now is expected to take (None: nothing known yet): the
        larger of the recent average and, with the backend's concurrency declared, the
        calls ahead (`queued_s`). The average alone cannot see a queue: it hears only from
        calls that finished, so the calls that queued past their deadlines never raise it."""
        recent = self.expected_s if self.in_flight else self.idle_s
        queued = self.queued_s()
        if queued is None:
            return recent
        return queued if recent is None else max(recent, queued)

    def queued_s(self) -> float | None:
        """Wait and service of a call admitted now, from the declared concurrency C (None:
        not declared, or no service time known yet): the backend as a FIFO of C workers,
        each free at the time its last admitted call is expected to end (`_free`); a new
        call takes the first free one. A share of the calls ahead (in_flight / C service
        times) is wrong both ways: calls that started together end together, so the wait
        behind them is a whole service time, not 1 / C of one; and a worker near the end of
        its call frees a waiting place a deadline of 2 service times still holds."""
        if not self._free or self.idle_s is None:
            return None
        now = self._clock.now()
        return max(self._free[0] - now, 0.0) + self.idle_s

    def release(self, place: Place, dropped: bool | None) -> None:
        """Gives the place back; the call's RTT feeds the limit unless `dropped` is None."""
        self.in_flight -= 1
        if self._free:
            self._freed()
        start_s, in_flight = place
        rtt_s = self._clock.now() - start_s
        if dropped is not None and self._limit is not None and round(rtt_s * 1e9) > 0:
            before = self._limit.limit
            self._limit.on_sample(start_s, rtt_s, in_flight, dropped)
            if self._limit.limit != before:
                self._announce()
        if dropped is False:
            self.expected_s = _averaged(self.expected_s, rtt_s)
            if in_flight == 1:  # admitted with nobody ahead
                self.idle_s = _averaged(self.idle_s, rtt_s)
        if self._queue:
            self.hand_over()

    def _take(self) -> Place:
        self.in_flight += 1
        now = self._clock.now()
        if self._free and self.idle_s is not None:
            bisect.insort(self._free, max(self._free.pop(0), now) + self.idle_s)
        return now, self.in_flight

    def _freed(self) -> None:
        """With fewer calls in flight than workers, that many workers are free now, whatever
        `_free` expected (a caller gave up, or a call ended early)."""
        now = self._clock.now()
        for i in range(min(len(self._free) - self.in_flight, len(self._free))):
            self._free[i] = min(self._free[i], now)

    async def _wait(
        self, method: str, criticality: Criticality, wait_s: float, cut: bool = False
    ) -> Place:
        """Queues for a place for at most `wait_s`; `cut`: the call's own deadline set that."""
        if self._queue.full:
            victim = self._queue.evictable(criticality)
            if victim is None:
                raise self._refuse("queue_full", method, criticality)
            self._queue.remove(victim)
            victim.future.set_exception(self._refuse("criticality", victim.method, victim))
        waiter = Waiter(method, criticality, self._clock.now())
        self._queue.push(waiter)
        timer = asyncio.ensure_future(self._clock.sleep(max(wait_s, 0.0)))
        try:
            await asyncio.wait((waiter.future, timer), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if waiter.future.done() and waiter.future.exception() is None:
                self.release(waiter.future.result(), None)  # handed a place while cancelled
            raise
        finally:
            timer.cancel()
            self._queue.remove(waiter)
        if waiter.future.done():
            return waiter.future.result()  # a place, or the eviction's ShedError
        waiter.future.cancel()
        raise self._refuse("queue_timeout", method, waiter, marked=cut)

    def _waiter_may_take(self) -> bool:
        """Whether a queued call may take a free place now (then it goes first); waiters the
        critical reserve keeps out of it do not hold back a call that may take it."""
        return self._queue.pick(lambda w: self.in_flight < self.share(w.criticality)) is not None

    def hand_over(self) -> None:
        """Free places go to waiters: the most critical that may take one, by discipline."""
        while self._queue and (self._limit is None or self.in_flight < self.limit):
            waiter = self._queue.pick(lambda w: self.in_flight < self.share(w.criticality))
            if waiter is None:
                return
            self._queue.remove(waiter)
            waiter.future.set_result(self._take())

    def _refuse(
        self,
        reason: ShedReason,
        method: str,
        who: Criticality | Waiter,
        remaining_s: float = 0.0,
        expected_s: float = 0.0,
        waited_s: float = 0.0,
        marked: bool = False,
    ) -> ShedError:
        """The refusal, announced; `marked`: the call's own deadline was why (unmeetable, or
        spent while it queued), which its trailers say (errors.CALLER_DEADLINE_KEY)."""
        if isinstance(who, Waiter):
            waited_s = self._clock.now() - who.enqueued_s
            who = who.criticality
        self._bus.emit(
            CallShed(
                self._service,
                method,
                self.in_flight,
                self._pushback_s,
                reason,
                self.limit,
                who.name,
                waited_s,
                remaining_s,
                expected_s,
            )
        )
        return ShedError(self._service, self.limit, self._pushback_s, "call", reason, marked)

    def _rejects(self, criticality: Criticality) -> bool:
        """The PID rejector's verdict on this arrival, its ratio first brought up to date."""
        assert self._rejector is not None
        delay_x = queueing_delay_x(self.in_flight, self._concurrency, self.expected_s, self.idle_s)
        if self._rejector.tick(self._clock.now(), delay_x, self.idle_s or 0.0):
            ratio = self._rejector.ratio
            self._bus.emit(RejectionRatioChanged(self._service, ratio, self._rejector.delay_x))
        return self._rejector.refuses(criticality)

    def _announce(self) -> None:
        self._bus.emit(ConcurrencyLimitChanged(self._service, self._algorithm, self.limit))
