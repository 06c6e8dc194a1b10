"""The common composition run as two coroutines, not one layer per strategy.

A pipeline in the default order (bulkhead -> total deadline -> retry -> throttle -> breaker ->
attempt timeout -> attempt hook -> wire), any of them left out, with no hedging and
the unary wire, runs its calls through `FusedRun` in place of its chain of layers: one
coroutine for the call (bulkhead, deadline, the retry loop) and one per attempt (throttle,
breaker, attempt timeout, hook, wire). The strategy objects are the same, with their state and
their events, and each does its part in the same order; what goes is a coroutine, a partial and
a frame per layer on every call. Any other composition (the breaker outside retry, hedging, a
stream's wire, a strategy of the user's own) keeps the layered chain.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc.aio

from grpc_aio_resilience.attempt import (
    AttemptHook,
    attempt_details,
    send_on_wire,
    send_without_wait_header,
)
from grpc_aio_resilience.breaker import BreakerStrategy, record_outcome
from grpc_aio_resilience.bulkhead import Bulkhead
from grpc_aio_resilience.context import CallContext, Next, Strategy
from grpc_aio_resilience.deadline import AttemptTimeout, TotalDeadline
from grpc_aio_resilience.errors import ResilienceError
from grpc_aio_resilience.retry import Retry
from grpc_aio_resilience.throttle import AdaptiveThrottle

FUSED_ORDER: tuple[tuple[str, type], ...] = (
    ("bulkhead", Bulkhead),
    ("total_deadline", TotalDeadline),
    ("retry", Retry),
    ("throttle", AdaptiveThrottle),
    ("breaker", BreakerStrategy),
    ("attempt_timeout", AttemptTimeout),
    ("attempt_hook", AttemptHook),
)
"""What FusedRun runs, outermost first: the default order (pipeline.PIPELINE_ORDER) without
hedging. build_pipeline builds the last two for every edge."""


def fusable(strategies: Sequence[Strategy], wire: Next) -> bool:
    """Whether these strategies over `wire` are a composition FusedRun runs as they would."""
    if wire is not send_on_wire and wire is not send_without_wait_header:
        return False
    names = [name for name, _ in FUSED_ORDER]
    at = -1
    for strategy in strategies:
        if strategy.name not in names or names.index(strategy.name) <= at:
            return False
        at = names.index(strategy.name)
        if type(strategy) is not FUSED_ORDER[at][1]:
            return False  # a subclass may do more than the fused steps know of
    return True


class FusedRun:
    """Runs one logical call through a fusable composition (see the module docstring)."""

    def __init__(self, strategies: Sequence[Strategy], wire: Next) -> None:
        by_name: dict[str, Any] = {s.name: s for s in strategies}
        self._bulkhead: Bulkhead | None = by_name.get("bulkhead")
        self._total_deadline: TotalDeadline | None = by_name.get("total_deadline")
        self._retry: Retry | None = by_name.get("retry")
        self._throttle: AdaptiveThrottle | None = by_name.get("throttle")
        self._breaker: BreakerStrategy | None = by_name.get("breaker")
        self._attempt_timeout: AttemptTimeout | None = by_name.get("attempt_timeout")
        self._hook: AttemptHook | None = by_name.get("attempt_hook")
        self._wire = wire
        self._wait_header = wire is send_on_wire

    async def call(self, ctx: CallContext) -> Any:
        """The call's final call object; a ResilienceError says how many attempts were sent."""
        bulkhead = self._bulkhead
        try:
            if bulkhead is not None and not bulkhead.enter():
                await bulkhead.wait_for_slot(ctx)
            try:
                if self._total_deadline is not None:
                    self._total_deadline.tighten(ctx)
                retry = self._retry
                attempt = 1
                failed: grpc.aio.AioRpcError | None = None
                while True:  # Retry.execute's loop
                    ctx.attempt = attempt
                    try:
                        call = await self.attempt(ctx)
                    except grpc.aio.AioRpcError as err:
                        if retry is None:
                            raise
                        if failed is not None and err.__cause__ is None:
                            err.__cause__ = failed
                        if isinstance(err, ResilienceError):
                            raise
                        failed = err
                        delay_s = retry.after_failure(ctx, err, retry.allows(ctx))
                        if delay_s > 0.0:
                            await retry.clock.sleep(delay_s)
                        attempt += 1
                        continue
                    if retry is not None and retry.budget is not None:
                        retry.budget.record_success()
                    return call
            finally:
                if bulkhead is not None:
                    bulkhead.release()
        except ResilienceError as err:
            err.attempts_sent = ctx.sent
            raise

    async def attempt(self, ctx: CallContext) -> Any:
        """One attempt: throttle, breaker, attempt timeout, hook and wire, innermost last."""
        throttle = self._throttle
        if throttle is not None:
            throttle.admit(ctx)
        sent = ctx.sent
        breaker = None
        generation = 0
        if self._breaker is not None:
            breaker = self._breaker.breaker_for(ctx.method)
            generation = breaker.acquire()
        try:
            timeout, hook = self._attempt_timeout, self._hook
            if timeout is not None and not timeout.fit(ctx):
                raise timeout.refusal(ctx)
            if hook is not None and hook.prepare(ctx):
                call = await hook.observed(ctx, self._wire)
            else:
                details = attempt_details(ctx, self._wait_header)
                start = ctx.start
                if start is not None:
                    call = start(details, ctx.request)
                else:
                    call = await ctx.continuation(details, ctx.request)
                try:
                    await call
                except asyncio.CancelledError:
                    call.cancel()  # as send_on_wire: the server stops working on it
                    raise
        except asyncio.CancelledError:
            if breaker is not None:
                breaker.record_ignored(generation)
            raise
        except grpc.aio.AioRpcError as err:
            if breaker is not None:
                record_outcome(breaker, generation, err, ctx.own_timeout)
            if throttle is not None:
                throttle.record_failure(ctx, sent, err)
            raise
        if breaker is not None:
            breaker.record_success(generation)
        if throttle is not None and ctx.sent > sent:
            throttle.window.record(accepted=True)
        return call
