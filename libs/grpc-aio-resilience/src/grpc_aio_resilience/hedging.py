"""Hedging (gRFC A6's hedgingPolicy): a call sent again while its first attempt is still in
flight, the first answer kept and the other attempts cancelled.

Each attempt runs in its own task through the strategies inside this one (throttle, breaker,
attempt timeout, attempt hook) as a retry's attempt would, and over replicas each goes to one
the call's other attempts are not on (grpc_aio_resilience.outlier_router.spread_attempts): that
is what wins against one slow replica. Every extra attempt spends a token of the edge's retry
budget when it is sent and a hedge the budget refuses is not sent; each answered call gives
back `token_ratio`. A6 charges only failed attempts, which lets a slow replica that still
answers double the load unbounded; charging each hedge bounds the extra attempts to
max_tokens / 2 + token_ratio per answered call.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, ClassVar

import grpc
import grpc.aio

from grpc_aio_resilience import classify
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Next
from grpc_aio_resilience.errors import DeadlineBudgetExhaustedError, ResilienceError
from grpc_aio_resilience.events import EventBus, HedgeSettled, HedgeSkipped, HedgeStarted
from grpc_aio_resilience.hedging_options import HedgingOptions
from grpc_aio_resilience.idempotency import may_retry
from grpc_aio_resilience.outlier_router import end_spread, spread_attempts
from grpc_aio_resilience.retry import RetryBudget

_ORPHANS: set[asyncio.Future[Any]] = set()
"""Cancelled losers until their cancellation has run (the loop holds tasks weakly)."""


class Hedging:
    """Sends a hedged method's call again each `hedging_delay_s` no attempt has answered, up to
    `max_attempts`; the first answer wins, a fatal code ends the call, a non-fatal one starts
    the next hedge at once (after the server's pushback; a negative pushback stops hedging)."""

    name: ClassVar[str] = "hedging"

    def __init__(
        self, options: HedgingOptions, budget: RetryBudget | None, clock: Clock, bus: EventBus
    ) -> None:
        self.options = options
        self.budget = budget
        self.non_fatal = frozenset(grpc.StatusCode[name] for name in options.non_fatal_codes)
        self.clock = clock
        self.bus = bus
        self._hedges: dict[str, bool] = {}

    async def execute(self, ctx: CallContext, inner: Next) -> Any:
        hedges = self._hedges.get(ctx.method)
        if hedges is None:
            hedges = self._hedges[ctx.method] = self.options.hedges(ctx.method)
        # A stream's context (a subclass) never hedges: its attempts feed one reader's queue.
        if not hedges or type(ctx) is not CallContext or not may_retry(ctx.method, ctx.request):
            return await inner(ctx)
        return await _HedgedCall(self, ctx, inner).run()


class _HedgedCall:
    """One logical call's attempts in flight, and when the next may start."""

    def __init__(self, hedging: Hedging, ctx: CallContext, inner: Next) -> None:
        self.h = hedging
        self.ctx = ctx
        self.inner = inner
        self.pending: dict[asyncio.Future[Any], tuple[CallContext, float]] = {}
        self.attempts: list[CallContext] = []
        self.first_s = self.next_s = hedging.clock.now()
        self.trigger = "delay"
        self.stop = ""
        self.failure: grpc.aio.AioRpcError | None = None

    async def run(self) -> Any:
        token = spread_attempts()
        try:
            call = await self._race()
        finally:
            end_spread(token)
            self._cancel_pending()
            self.ctx.attempt = len(self.attempts)
            self.ctx.sent += sum(a.sent for a in self.attempts)
        if self.h.budget is not None:
            self.h.budget.record_success()
        return call

    async def _race(self) -> Any:
        clock = self.h.clock
        while True:
            if self._may_start() and clock.now() >= self.next_s:
                self._start()
                continue
            if not self.pending and not self._may_start():
                assert self.failure is not None
                raise self.failure
            waits: set[asyncio.Future[Any]] = set(self.pending)
            timer = None
            if self._may_start():
                timer = asyncio.ensure_future(clock.sleep(self.next_s - clock.now()))
                waits.add(timer)
            try:
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if timer is not None and not timer.done():
                    timer.cancel()
            finished = [t for t in done if t is not timer]
            for task in sorted(finished, key=lambda t: t.cancelled() or t.exception() is not None):
                won, call = self._settle(task)
                if won:
                    return call

    def _may_start(self) -> bool:
        return not self.stop and len(self.attempts) < self.h.options.max_attempts

    def _start(self) -> None:
        """Starts the next attempt, unless it is a hedge the budget or the deadline refuses."""
        h, ctx, now = self.h, self.ctx, self.h.clock.now()
        number = len(self.attempts) + 1
        if number > 1:
            refused = ""
            if now >= ctx.deadline_s:
                refused = "deadline"
            elif h.budget is not None and not h.budget.allows_retry():
                refused = "budget"
            if refused:
                self._stop(refused)
                return
            if h.budget is not None:
                h.budget.record_failure()  # a hedge spends a token as a failed attempt does
            if h.bus.wants(HedgeStarted):
                h.bus.emit(
                    HedgeStarted(
                        ctx.dependency, ctx.method, number, self.trigger, now - self.first_s
                    )
                )
        attempt = dataclasses.replace(
            ctx, attempt=number, sent=0, hedged=True, attempt_metadata=None
        )
        self.attempts.append(attempt)
        self.pending[asyncio.ensure_future(self.inner(attempt))] = (attempt, now)
        self.next_s = now + h.options.hedging_delay_s
        self.trigger = "delay"

    def _stop(self, reason: str) -> None:
        if self.stop:
            return  # the first reason stands
        self.stop = reason
        if self.h.bus.wants(HedgeSkipped) and len(self.attempts) < self.h.options.max_attempts:
            ctx = self.ctx
            self.h.bus.emit(
                HedgeSkipped(ctx.dependency, ctx.method, len(self.attempts) + 1, reason)
            )

    def _settle(self, task: asyncio.Future[Any]) -> tuple[bool, Any]:
        """(True, call) for the winner; records a non-fatal failure; raises a fatal one."""
        attempt, started_s = self.pending.pop(task)
        err = asyncio.CancelledError() if task.cancelled() else task.exception()
        if err is None:
            self._emit_settled(attempt, started_s, "won", "OK")
            return True, task.result()
        if not isinstance(err, grpc.aio.AioRpcError):
            raise err
        self._emit_settled(attempt, started_s, "lost", err.code().name)
        self.failure = err
        if isinstance(err, ResilienceError):
            # Our own rejection: the others go on, and no new attempt starts.
            self._stop("deadline" if isinstance(err, DeadlineBudgetExhaustedError) else "local")
            return False, None
        if err.code() not in self.h.non_fatal:
            raise err
        pushback = classify.pushback_s(err.trailing_metadata())
        if pushback is not None and pushback < 0:
            self._stop("pushback")
        elif self._may_start():
            self.next_s = self.h.clock.now() + (pushback or 0.0)
            self.trigger = err.code().name
            if self.next_s >= self.ctx.deadline_s and not self.pending:
                self._stop("deadline")
        return False, None

    def _emit_settled(
        self, attempt: CallContext, started_s: float, outcome: str, code: str
    ) -> None:
        if self.h.bus.wants(HedgeSettled) and len(self.attempts) > 1:
            duration_s = self.h.clock.now() - started_s
            ctx = self.ctx
            self.h.bus.emit(
                HedgeSettled(ctx.dependency, ctx.method, attempt.attempt, outcome, code, duration_s)
            )

    def _cancel_pending(self) -> None:
        """The losers: cancelled at once, so their servers stop work on them."""
        for task, (attempt, started_s) in self.pending.items():
            task.cancel()
            _ORPHANS.add(task)
            task.add_done_callback(_forget)
            self._emit_settled(attempt, started_s, "cancelled", "CANCELLED")
        self.pending.clear()


def _forget(task: asyncio.Future[Any]) -> None:
    _ORPHANS.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: an attempt that ended as it was cancelled logs nothing
