"""THE place that declares the order of the strategies protecting a dependency edge."""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Iterable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any

from grpc_aio_resilience.attempt import (
    AttemptHook,
    AttemptObserver,
    send_on_wire,
    send_without_wait_header,
)
from grpc_aio_resilience.breaker import BreakerStrategy
from grpc_aio_resilience.bulkhead import Bulkhead
from grpc_aio_resilience.clock import Clock, SystemClock
from grpc_aio_resilience.context import CallContext, Next, Strategy
from grpc_aio_resilience.deadline import AttemptTimeout, TotalDeadline
from grpc_aio_resilience.edge_policy import EdgePolicy, PipelineOrder
from grpc_aio_resilience.errors import ResilienceError
from grpc_aio_resilience.events import CallFinished, EventBus
from grpc_aio_resilience.fused import FusedRun, fusable
from grpc_aio_resilience.hedging import Hedging
from grpc_aio_resilience.outcome import call_outcome
from grpc_aio_resilience.retry import Retry, RetryBudget
from grpc_aio_resilience.throttle import AdaptiveThrottle
from grpc_aio_resilience.traps import PipelineSource, examine

PIPELINE_ORDER: tuple[str, ...] = (
    # Outermost -> innermost; the default (policy `order: retry-outside-breaker`).
    "bulkhead",  # a slot per logical call, so retries never need a second slot
    "total_deadline",  # the call's whole budget (its clock starts once a slot is held)
    "hedging",  # a hedged method's attempts in parallel, each through the layers below (retry
    # lets them through: a method hedges or retries, gRFC A6); inside the deadline, which
    # bounds them all, and the bulkhead, whose one slot they share
    "retry",  # inside the deadline: no attempt or backoff may outlive it; budget per dependency
    "throttle",  # inside retry, beside its budget: every attempt the wire would carry, retries
    # too, counts and may be rejected here; outside the breaker, so a local rejection never
    # counts as the backend's failure and an open breaker's rejections are not requests
    "breaker",  # inside retry: every attempt counts, and an open breaker stops the retries
    "attempt_timeout",  # min(attempt_s, time left) as each attempt's real gRPC deadline
    "attempt_hook",  # AttemptStarted/AttemptFinished events and the observer (tracing span)
)
"""Strategies a policy disables are left out; the rest keep this order (pinned by a test)."""

BREAKER_OUTSIDE_RETRY_ORDER: tuple[str, ...] = (
    # Seed 003's order (policy `order: breaker-outside-retry`), for comparison: the breaker
    # sees one outcome per logical call (all its attempts count once), an open breaker rejects
    # before any attempt, and a call already admitted keeps retrying if the breaker opens
    # meanwhile; a half-open probe is a whole logical call, retries included.
    "bulkhead",
    "total_deadline",
    "breaker",  # outside retry: a logical call, all its attempts, is one outcome
    "hedging",
    "retry",
    "throttle",  # inside retry here too: it judges attempts, not logical calls
    "attempt_timeout",
    "attempt_hook",
)

ORDERS: dict[PipelineOrder, tuple[str, ...]] = {
    "retry-outside-breaker": PIPELINE_ORDER,
    "breaker-outside-retry": BREAKER_OUTSIDE_RETRY_ORDER,
}
"""The policy field `order` selects one of these two declared orders."""

CallObserver = AttemptObserver
"""Wraps each logical call, outside every strategy (a tracing span that strategy events join)."""

_NO_OBSERVATION: AbstractContextManager[None] = nullcontext()


class Pipeline:
    """The composed strategies of one edge; `run()` executes one logical call through them."""

    def __init__(
        self,
        strategies: list[Strategy],
        bus: EventBus,
        clock: Clock,
        call_observer: CallObserver | None = None,
        wire: Next = send_on_wire,
    ) -> None:
        self.strategies = tuple(strategies)
        self.wire = wire
        """The innermost step, which puts each attempt on the wire."""
        self._call_observer = call_observer
        self._bus = bus
        self._clock = clock
        handler: Next = wire
        for strategy in reversed(self.strategies):
            handler = partial(strategy.execute, inner=handler)
        self._unobserved: Callable[[CallContext], Coroutine[Any, Any, Any]] = self._layered
        self.fused: FusedRun | None = None
        """The common composition's runner (grpc_aio_resilience.fused): two coroutines per
        call in place of one per layer; None: the layers run the calls."""
        if fusable(self.strategies, wire):
            self.fused = FusedRun(self.strategies, wire)
            handler = self._unobserved = self.fused.call
        self._handler = handler
        self.hedges = any(s.name == "hedging" for s in self.strategies)
        """Over replicas, its calls go through the replica router even where gRPC balances:
        each hedged attempt must reach a replica the call's others are not on."""
        self.source: PipelineSource | None = None
        """What build_pipeline built it from (grpc_aio_resilience.description reads it)."""

    def with_wire(self, wire: Next) -> Pipeline:
        """The same strategy objects (the same breakers, budget and bulkhead) over another
        innermost step: how a stream runs through its edge's pipeline."""
        same = Pipeline(list(self.strategies), self._bus, self._clock, self._call_observer, wire)
        same.source = self.source
        return same

    @property
    def bus(self) -> EventBus:
        return self._bus

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.strategies)

    def strategy(self, name: str) -> Strategy:
        for s in self.strategies:
            if s.name == name:
                return s
        raise KeyError(f"no {name!r} strategy in pipeline {self.names}")

    def run(self, ctx: CallContext) -> Coroutine[Any, Any, Any]:
        """A coroutine of the call's final call object."""
        if self._call_observer is None and CallFinished not in self._bus.heard:
            return self._unobserved(ctx)
        return self._observed(ctx)

    async def _layered(self, ctx: CallContext) -> Any:
        try:  # nobody observes the call as a whole: no clock, no event
            return await self._handler(ctx)
        except ResilienceError as err:
            err.attempts_sent = ctx.sent
            raise

    async def _observed(self, ctx: CallContext) -> Any:
        started_s = self._clock.now()
        observer = self._call_observer
        failure: BaseException | None = None
        try:
            with _NO_OBSERVATION if observer is None else observer(ctx):
                return await self._handler(ctx)
        except BaseException as err:
            failure = err
            if isinstance(err, ResilienceError):
                err.attempts_sent = ctx.sent
            raise
        finally:
            outcome = call_outcome(failure)
            failure = None  # the exception's traceback holds this frame: no cycle
            self._bus.emit(
                CallFinished(
                    ctx.dependency, ctx.method, outcome, ctx.attempt, self._clock.now() - started_s
                )
            )


def build_pipeline(
    policy: EdgePolicy,
    *,
    dependency: str,
    bus: EventBus,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    attempt_observer: AttemptObserver | None = None,
    bulkhead_pools: dict[str, Bulkhead] | None = None,
    call_observer: CallObserver | None = None,
    wait_header: bool = True,
    carry: tuple[tuple[str, str], ...] = (),
    services: Iterable[str] = (),
) -> Pipeline:
    """Builds the enabled strategies of `policy` in the order it selects (ORDERS).

    Pipelines whose bulkhead names the same `pool` share one Bulkhead through `bulkhead_pools`.
    `wait_header`: every attempt carries its deadline as `resilience-timeout-ms`, which the server's
    intake gate reads (grpc_aio_resilience.intake); off where the server has none. `carry`: metadata
    every attempt sends (an internal credential, say: the same entries on every attempt).
    `services` (`pkg.Service`): whose methods to check for traps (grpc_aio_resilience.traps).
    """
    clock = clock or SystemClock()
    rng = rng or random.Random()
    budget = RetryBudget(policy.retry.budget) if policy.retry.budget.enabled else None
    factories: dict[str, Callable[[], Strategy | None]] = {
        "bulkhead": lambda: _bulkhead(policy, clock, bus, dependency, bulkhead_pools),
        "total_deadline": lambda: TotalDeadline(policy.deadline, clock),
        "hedging": lambda: (
            Hedging(policy.hedging, budget, clock, bus) if policy.hedging.enabled else None
        ),
        "retry": lambda: (
            Retry(policy.retry, policy.deadline.min_attempt_s, budget, clock, bus, rng)
            if policy.retry.max_attempts > 1
            else None
        ),
        "throttle": lambda: (
            AdaptiveThrottle(policy.throttle, clock, bus, rng) if policy.throttle.enabled else None
        ),
        "breaker": lambda: (
            BreakerStrategy(policy.breaker, clock, bus, dependency)
            if policy.breaker.enabled
            else None
        ),
        "attempt_timeout": lambda: AttemptTimeout(policy.deadline, clock, bus),
        "attempt_hook": lambda: AttemptHook(bus, clock, attempt_observer, carry),
    }
    strategies = [s for s in (factories[name]() for name in ORDERS[policy.order]) if s is not None]
    wire = send_on_wire if wait_header else send_without_wait_header
    pipeline = Pipeline(strategies, bus, clock, call_observer, wire)
    pipeline.source = examine(policy, dependency, pipeline.names, services)
    return pipeline


def _bulkhead(
    policy: EdgePolicy,
    clock: Clock,
    bus: EventBus,
    dependency: str,
    pools: dict[str, Bulkhead] | None,
) -> Bulkhead | None:
    """The edge's own Bulkhead, or its pool's, shared through `pools` (None: not shared)."""
    if not policy.bulkhead.enabled:
        return None
    pool = policy.bulkhead.pool
    if pool is None or pools is None:
        return Bulkhead(policy.bulkhead, clock, bus, dependency)
    if pool not in pools:
        pools[pool] = Bulkhead(policy.bulkhead, clock, bus, f"pool {pool}")
    return pools[pool]
