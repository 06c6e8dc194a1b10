"""Circuit breaker: closed -> open -> half-open -> closed, on consecutive failures or a
failure rate over the last N calls; the strategy holds one breaker per method or dependency."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, ClassVar

import grpc.aio

from grpc_aio_resilience import classify
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Next
from grpc_aio_resilience.edge_policy import BreakerPolicy
from grpc_aio_resilience.errors import BreakerOpenError, ResilienceError
from grpc_aio_resilience.events import BreakerRejected, BreakerState, BreakerStateChanged, EventBus

CLOSED, HALF_OPEN, OPEN = BreakerState.CLOSED, BreakerState.HALF_OPEN, BreakerState.OPEN


def state_at(state: BreakerState, open_until_s: float, now_s: float) -> BreakerState:
    """An open breaker is half-open once its open time has passed, whether or not a call has
    looked since: the breaker itself and the `mesh_breaker_state` gauge both read it this way."""
    return HALF_OPEN if state is OPEN and now_s >= open_until_s else state


class BreakerStateMachine:
    """One breaker's state machine. `acquire()` returns a generation that the outcome is
    reported with, so results of calls admitted before a transition cannot move the new state.
    Both triggers are judged when a failure is recorded (as in Polly): a success never opens it."""

    def __init__(
        self, policy: BreakerPolicy, clock: Clock, bus: EventBus, dependency: str, method: str
    ) -> None:
        self._p = policy
        self._clock = clock
        self._bus = bus
        self.dependency = dependency
        self.method = method
        self._state = CLOSED
        self._generation = 0
        self._consecutive = 0
        self._window: deque[bool] = deque(maxlen=policy.window_size)
        self._window_failures = 0
        self._open_until_s = 0.0
        self._probes_admitted = 0
        self._probe_successes = 0

    @property
    def state(self) -> BreakerState:
        if state_at(self._state, self._open_until_s, self._clock.now()) is not self._state:
            self._move(HALF_OPEN)
        return self._state

    def time_until_probe_s(self) -> float:
        if self.state is OPEN:
            return self._open_until_s - self._clock.now()
        return 0.0 if self._state is CLOSED else self._p.open_s

    def peek(self) -> tuple[BreakerState, float]:
        """(state, seconds until the next probe) without moving the breaker: safe to read from
        a metrics scrape on another thread."""
        now = self._clock.now()
        state = state_at(self._state, self._open_until_s, now)
        return state, max(0.0, self._open_until_s - now) if state is OPEN else 0.0

    def acquire(self) -> int:
        """Admit an attempt (returns its generation) or raise BreakerOpenError."""
        if self._state is CLOSED:  # a closed breaker has no clock to read
            return self._generation
        state = self.state
        if state is CLOSED:
            return self._generation
        if state is HALF_OPEN and self._probes_admitted < self._p.half_open_max_probes:
            self._probes_admitted += 1
            return self._generation
        wait_s = self.time_until_probe_s()
        self._bus.emit(BreakerRejected(self.dependency, self.method, state, wait_s))
        raise BreakerOpenError(self.dependency, self.method, wait_s)

    def record_success(self, generation: int) -> None:
        if generation != self._generation:
            return
        if self._state is HALF_OPEN:
            self._probe_successes += 1
            if self._probe_successes >= self._p.half_open_successes:
                self._move(CLOSED)
            return
        self._consecutive = 0
        window = self._window  # _push(False), inline: every successful attempt comes here
        if len(window) == window.maxlen and window[0]:
            self._window_failures -= 1
        window.append(False)

    def record_failure(self, generation: int) -> None:
        if generation != self._generation:
            return
        if self._state is HALF_OPEN:
            self._move(OPEN)
            return
        self._consecutive += 1
        self._push(True)
        if self._tripped():
            self._move(OPEN)

    def record_ignored(self, generation: int) -> None:
        """The attempt said nothing about health (e.g. the caller cancelled): free its probe."""
        if generation == self._generation and self._state is HALF_OPEN:
            self._probes_admitted = max(0, self._probes_admitted - 1)

    def _push(self, failed: bool) -> None:
        window = self._window
        if len(window) == window.maxlen and window[0]:
            self._window_failures -= 1
        window.append(failed)
        self._window_failures += failed

    def _tripped(self) -> bool:
        p = self._p
        if p.consecutive_failures and self._consecutive >= p.consecutive_failures:
            return True
        calls = len(self._window)
        return (
            p.failure_rate is not None
            and calls >= p.min_calls
            and self._window_failures >= p.failure_rate * calls
        )

    def _move(self, to: BreakerState) -> None:
        from_state, self._state = self._state, to
        self._generation += 1
        self._probes_admitted = self._probe_successes = 0
        if to is OPEN:
            self._open_until_s = self._clock.now() + self._p.open_s
        if to is CLOSED:
            self._consecutive = self._window_failures = 0
            self._window.clear()
        until_s = self._open_until_s - self._clock.now() if to is OPEN else 0.0
        self._bus.emit(BreakerStateChanged(self.dependency, self.method, from_state, to, until_s))


class BreakerStrategy:
    """Pipeline strategy: fails fast while open; counts only health failures of attempts."""

    name: ClassVar[str] = "breaker"

    def __init__(self, policy: BreakerPolicy, clock: Clock, bus: EventBus, dependency: str):
        self._policy = policy
        self._clock = clock
        self._bus = bus
        self._dependency = dependency
        self._per_method = policy.scope == "method"
        self.breakers: dict[str, BreakerStateMachine] = {}

    def breaker_for(self, method: str) -> BreakerStateMachine:
        key = method if self._per_method else "*"
        breaker = self.breakers.get(key)
        if breaker is None:
            breaker = BreakerStateMachine(
                self._policy, self._clock, self._bus, self._dependency, key
            )
            self.breakers[key] = breaker
        return breaker

    async def execute(self, ctx: CallContext, inner: Next) -> Any:
        breaker = self.breaker_for(ctx.method)
        generation = breaker.acquire()
        try:
            call = await inner(ctx)
        except asyncio.CancelledError:
            breaker.record_ignored(generation)
            raise
        except grpc.aio.AioRpcError as err:
            record_outcome(breaker, generation, err, ctx.own_timeout)
            raise
        breaker.record_success(generation)
        return call


def record_outcome(
    breaker: BreakerStateMachine, generation: int, err: grpc.aio.AioRpcError, own_timeout: bool
) -> None:
    """Health failures count; an answer (e.g. NOT_FOUND) shows the dependency alive; our own
    rejections and the caller's own deadline (classify.callers_deadline) say nothing, neither
    failure nor success, so short deadlines can neither open the breaker nor dilute the real
    failures of others. With retry inside this breaker, an end that says nothing about health
    (our deadline budget, the caller's deadline) after a failed attempt carries that attempt's
    failure as its cause (retry chains it): a retried failure, so a health failure."""
    says_nothing = isinstance(err, ResilienceError) or classify.callers_deadline(err, own_timeout)
    if says_nothing and isinstance(err.__cause__, grpc.aio.AioRpcError):
        breaker.record_failure(generation)
    elif says_nothing:
        breaker.record_ignored(generation)
    elif classify.counts_against_health(err.code(), own_timeout):
        breaker.record_failure(generation)
    else:
        breaker.record_success(generation)
