"""Retries of transient failures: full-jitter backoff, server pushback, a gRFC A6 budget."""

from __future__ import annotations

import random
from typing import Any, ClassVar

import grpc.aio

from grpc_aio_resilience import classify
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Next
from grpc_aio_resilience.edge_policy import RetryBudgetPolicy, RetryPolicy
from grpc_aio_resilience.errors import DeadlineBudgetExhaustedError, ResilienceError
from grpc_aio_resilience.events import DeadlineExhausted, EventBus, RetryScheduled, RetrySkipped
from grpc_aio_resilience.idempotency import may_retry


def full_jitter_s(retry: int, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Backoff before retry number `retry` (0-based): uniform(0, min(cap, base * 2^retry))."""
    return rng.uniform(0.0, min(cap_s, base_s * (2.0 ** min(retry, 62))))


def retry_delay_s(jitter_s: float, pushback_s: float | None) -> float:
    """A pushback of 0 means retry now; a positive one is a floor under the jitter."""
    if pushback_s is None:
        return jitter_s
    if pushback_s == 0.0:
        return 0.0
    return max(jitter_s, pushback_s)


class RetryBudget:
    """gRFC A6 token bucket for one dependency: failures cost 1 token, successes return
    `token_ratio`; retries are allowed only while tokens > max_tokens / 2."""

    def __init__(self, policy: RetryBudgetPolicy) -> None:
        self._max_tokens = policy.max_tokens
        self._ratio = policy.token_ratio
        self._threshold = policy.max_tokens / 2
        self.tokens = policy.max_tokens

    @property
    def max_tokens(self) -> float:
        return self._max_tokens

    def record_success(self) -> None:
        self.tokens = min(self._max_tokens, self.tokens + self._ratio)

    def record_failure(self) -> None:
        self.tokens = max(0.0, self.tokens - 1.0)

    def allows_retry(self) -> bool:
        return self.tokens > self._threshold


class Retry:
    """Re-runs the inner pipeline on transient failures of retry-safe calls, within the
    deadline; our own rejections (breaker open, bulkhead full) are never retried."""

    name: ClassVar[str] = "retry"

    def __init__(
        self,
        policy: RetryPolicy,
        min_attempt_s: float,
        budget: RetryBudget | None,
        clock: Clock,
        bus: EventBus,
        rng: random.Random,
    ) -> None:
        self._max_attempts = policy.max_attempts
        self._base_s = policy.base_backoff_s
        self._cap_s = policy.max_backoff_s
        self._min_attempt_s = min_attempt_s
        self.budget = budget
        self._clock = clock
        self._bus = bus
        self._rng = rng

    @property
    def clock(self) -> Clock:
        return self._clock

    async def execute(self, ctx: CallContext, inner: Next) -> Any:
        if ctx.hedged:
            return await inner(ctx)
        allowed = self.allows(ctx)
        attempt = 1
        failed: grpc.aio.AioRpcError | None = None
        while True:
            ctx.attempt = attempt
            try:
                call = await inner(ctx)
            except grpc.aio.AioRpcError as err:
                if failed is not None and err.__cause__ is None:
                    # What ends a call after a failed attempt carries that failure: a breaker
                    # outside retry judges the call by it when the end says nothing of health.
                    err.__cause__ = failed
                if isinstance(err, ResilienceError):
                    raise
                failed = err
                delay_s = self.after_failure(ctx, err, allowed)
                if delay_s > 0.0:
                    await self._clock.sleep(delay_s)
                attempt += 1
                continue
            if self.budget is not None:
                self.budget.record_success()
            return call

    def allows(self, ctx: CallContext) -> bool:
        """Whether the call may be retried at all (retries on, the method retry-safe)."""
        return self._max_attempts > 1 and may_retry(ctx.method, ctx.request)

    def after_failure(self, ctx: CallContext, err: grpc.aio.AioRpcError, allowed: bool) -> float:
        """The delay before the next attempt, or re-raise `err` (or a deadline error)."""
        code = err.code()
        pushback = classify.pushback_s(err.trailing_metadata())
        if not classify.is_transient(code, pushback, ctx.own_timeout):
            raise err
        if classify.callers_deadline(err, ctx.own_timeout):
            raise err  # a retry would have still less time; and no token: not the dependency
        if self.budget is not None:
            self.budget.record_failure()
        skip = self._skip_reason(ctx.attempt, allowed, pushback)
        if skip:
            self._bus.emit(RetrySkipped(ctx.dependency, ctx.method, ctx.attempt, skip, code.name))
            raise err
        jitter_s = full_jitter_s(ctx.attempt - 1, self._base_s, self._cap_s, self._rng)
        delay_s = retry_delay_s(jitter_s, pushback)
        if self._clock.now() + delay_s + self._min_attempt_s >= ctx.deadline_s:
            self._bus.emit(DeadlineExhausted(ctx.dependency, ctx.method, ctx.attempt, "backoff"))
            raise DeadlineBudgetExhaustedError(
                ctx.dependency, ctx.method, "backoff", code.name
            ) from err
        self._bus.emit(
            RetryScheduled(ctx.dependency, ctx.method, ctx.attempt, code.name, delay_s, pushback)
        )
        return delay_s

    def _skip_reason(self, attempt: int, allowed: bool, pushback: float | None) -> str:
        if not allowed:
            return "not_retryable_method" if self._max_attempts > 1 else "retries_off"
        if pushback is not None and pushback < 0:
            return "pushback"
        if attempt >= self._max_attempts:
            return "attempts"
        if self.budget is not None and not self.budget.allows_retry():
            return "budget"
        return ""
