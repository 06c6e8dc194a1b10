"""Circuit breaker transitions: consecutive and rate triggers, half-open probes, a model check."""

from __future__ import annotations

from collections import deque

import grpc
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.breaker import BreakerStateMachine
from grpc_aio_resilience.edge_policy import BreakerPolicy
from grpc_aio_resilience.errors import BreakerOpenError
from grpc_aio_resilience.events import BreakerState, BreakerStateChanged, Event
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import recording_bus

CLOSED, HALF_OPEN, OPEN = BreakerState.CLOSED, BreakerState.HALF_OPEN, BreakerState.OPEN


def make(**fields: object) -> tuple[BreakerStateMachine, FakeClock, list[Event]]:
    clock = FakeClock()
    bus, seen = recording_bus()
    policy = from_dict(BreakerPolicy, fields)
    return BreakerStateMachine(policy, clock, bus, "dep", "/m"), clock, seen


def fail(b: BreakerStateMachine, times: int = 1) -> None:
    for _ in range(times):
        b.record_failure(b.acquire())


def succeed(b: BreakerStateMachine, times: int = 1) -> None:
    for _ in range(times):
        b.record_success(b.acquire())


def test_consecutive_failures_open_it_and_it_fails_fast_with_a_probe_hint() -> None:
    b, clock, seen = make(consecutive_failures=5, failure_rate=None, open_s=2.0)
    fail(b, 4)
    succeed(b)
    fail(b, 4)
    assert b.state is CLOSED
    fail(b)
    assert b.state is OPEN
    clock.advance(0.5)
    with pytest.raises(BreakerOpenError) as caught:
        b.acquire()
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert dict(caught.value.trailing_metadata())["grpc-retry-pushback-ms"] == "1500"
    moves = [(e.from_state, e.to_state) for e in seen if isinstance(e, BreakerStateChanged)]
    assert moves == [(CLOSED, OPEN)]


def test_failure_rate_opens_it_only_once_min_calls_are_in() -> None:
    b, _, _ = make(consecutive_failures=0, failure_rate=0.5, window_size=10, min_calls=6)
    for _ in range(2):
        fail(b)
        succeed(b)
    assert b.state is CLOSED  # 50% of 4 calls: too few to judge
    fail(b)
    succeed(b)
    assert b.state is CLOSED  # 3 of 6 when the 6th was a success: judged on failures only
    fail(b)
    assert b.state is OPEN  # 4 of 7


def test_sliding_window_forgets_old_failures() -> None:
    b, _, _ = make(consecutive_failures=0, failure_rate=0.5, window_size=4, min_calls=4)
    fail(b)
    succeed(b, 3)
    fail(b)  # window: S S S F
    assert b.state is CLOSED


def test_half_open_admits_a_bounded_number_of_probes_and_needs_enough_successes() -> None:
    b, clock, seen = make(
        consecutive_failures=1, open_s=1.0, half_open_max_probes=2, half_open_successes=2
    )
    fail(b)
    clock.advance(1.0)
    assert b.state is HALF_OPEN
    first, second = b.acquire(), b.acquire()
    with pytest.raises(BreakerOpenError):
        b.acquire()
    b.record_success(first)
    assert b.state is HALF_OPEN
    b.record_success(second)
    assert b.state is CLOSED
    moves = [e.to_state for e in seen if isinstance(e, BreakerStateChanged)]
    assert moves == [OPEN, HALF_OPEN, CLOSED]


def test_a_failed_probe_reopens_it() -> None:
    b, clock, _ = make(consecutive_failures=1, open_s=1.0)
    fail(b)
    clock.advance(1.0)
    fail(b)
    assert b.state is OPEN
    assert b.time_until_probe_s() == pytest.approx(1.0)


def test_a_cancelled_probe_frees_its_slot() -> None:
    b, clock, _ = make(consecutive_failures=1, open_s=1.0)
    fail(b)
    clock.advance(1.0)
    b.record_ignored(b.acquire())
    succeed(b)
    assert b.state is CLOSED


def test_results_of_calls_admitted_before_a_transition_are_ignored() -> None:
    b, clock, _ = make(consecutive_failures=1, open_s=1.0)
    stale = b.acquire()
    fail(b)
    clock.advance(1.0)
    b.record_success(stale)
    assert b.state is HALF_OPEN


class Model:
    """The breaker as the issue states it, for sequential calls (acquire, then the outcome)."""

    def __init__(self, p: BreakerPolicy) -> None:
        self.p = p
        self.state = CLOSED
        self.consecutive = 0
        self.window: deque[bool] = deque(maxlen=p.window_size)
        self.open_until_s = 0.0
        self.successes = 0

    def step(self, now_s: float, outcome: str) -> bool:
        """Returns whether the call was admitted."""
        if self.state is OPEN and now_s >= self.open_until_s:
            self.state, self.successes = HALF_OPEN, 0
        if self.state is OPEN:
            return False
        if outcome == "ignored":
            return True
        failed = outcome == "failure"
        if self.state is HALF_OPEN:
            if failed:
                self.state, self.open_until_s = OPEN, now_s + self.p.open_s
            else:
                self.successes += 1
                if self.successes >= self.p.half_open_successes:
                    self.state, self.consecutive = CLOSED, 0
                    self.window.clear()
            return True
        self.consecutive = self.consecutive + 1 if failed else 0
        self.window.append(failed)
        rate = self.p.failure_rate
        # Like Polly, the breaker only opens on a failure, never on a success.
        tripped = failed and (
            (self.p.consecutive_failures and self.consecutive >= self.p.consecutive_failures)
            or (
                rate is not None
                and len(self.window) >= self.p.min_calls
                and sum(self.window) >= rate * len(self.window)
            )
        )
        if tripped:
            self.state, self.open_until_s = OPEN, now_s + self.p.open_s
        return True


class BreakerMachine(RuleBasedStateMachine):
    """Random call sequences, policies and clock jumps: the breaker always agrees with Model."""

    def __init__(self) -> None:
        super().__init__()
        self.breaker: BreakerStateMachine | None = None
        self.model: Model | None = None
        self.clock = FakeClock()

    @rule(
        consecutive=st.integers(0, 6),
        rate=st.none() | st.sampled_from([0.25, 0.5, 1.0]),
        window=st.integers(1, 8),
        successes=st.integers(1, 3),
    )
    def configure(self, consecutive: int, rate: float | None, window: int, successes: int) -> None:
        if self.breaker is not None:
            return
        policy = BreakerPolicy(
            consecutive_failures=consecutive,
            failure_rate=rate,
            window_size=window,
            min_calls=max(1, window // 2),
            open_s=1.0,
            half_open_max_probes=successes,
            half_open_successes=successes,
        )
        bus, _ = recording_bus()
        self.breaker = BreakerStateMachine(policy, self.clock, bus, "dep", "/m")
        self.model = Model(policy)

    @rule(outcome=st.sampled_from(["success", "failure", "ignored"]))
    def call(self, outcome: str) -> None:
        if self.breaker is None or self.model is None:
            return
        expected = self.model.step(self.clock.now(), outcome)
        try:
            generation = self.breaker.acquire()
        except BreakerOpenError:
            assert not expected
            return
        assert expected
        {
            "success": self.breaker.record_success,
            "failure": self.breaker.record_failure,
            "ignored": self.breaker.record_ignored,
        }[outcome](generation)

    @rule(seconds=st.sampled_from([0.1, 0.5, 1.0, 2.5]))
    def wait(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @invariant()
    def same_state(self) -> None:
        if self.breaker is not None and self.model is not None:
            model_state = self.model.state
            if model_state is OPEN and self.clock.now() >= self.model.open_until_s:
                model_state = HALF_OPEN
            assert self.breaker.state is model_state


TestBreakerAgainstModel = BreakerMachine.TestCase
TestBreakerAgainstModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


def test_its_state_follows_its_clock_without_a_call() -> None:
    from grpc_aio_resilience.breaker import state_at

    b, clock, seen = make(consecutive_failures=1, open_s=2.0)
    fail(b)
    assert state_at(OPEN, 1002.0, clock.now() + 1.99) is OPEN
    assert state_at(OPEN, 1002.0, 1002.0) is HALF_OPEN
    assert state_at(CLOSED, 0.0, 5000.0) is CLOSED
    clock.advance(2.0)
    assert b.state is HALF_OPEN
    assert [e.to_state for e in seen if isinstance(e, BreakerStateChanged)] == [OPEN, HALF_OPEN]
