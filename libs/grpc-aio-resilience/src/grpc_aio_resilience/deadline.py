"""Deadlines: the inbound deadline carried hop to hop, the call's total budget, each attempt's."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Awaitable
from typing import Any, ClassVar

from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Next
from grpc_aio_resilience.edge_policy import DeadlinePolicy
from grpc_aio_resilience.errors import DeadlineBudgetExhaustedError
from grpc_aio_resilience.events import DeadlineExhausted, EventBus

inbound_deadline_var: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "mesh_inbound_deadline", default=None
)
"""What the functions below read and set; the inbound layer sets it through its own methods
(no Python frame of ours on every call)."""


def inbound_deadline() -> float | None:
    """The absolute `time.monotonic()` deadline of the request being served, if any."""
    return inbound_deadline_var.get()


def time_remaining() -> float | None:
    """Seconds left before the inbound deadline (never negative), or None without one."""
    deadline = inbound_deadline_var.get()
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


def set_inbound_deadline(deadline_s: float | None) -> contextvars.Token[float | None]:
    """Set by the server interceptor for the handler's task; outbound calls read it."""
    return inbound_deadline_var.set(deadline_s)


def reset_inbound_deadline(token: contextvars.Token[float | None]) -> None:
    inbound_deadline_var.reset(token)


served_deadline_var: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "mesh_served_deadline", default=None
)
"""What `mark_served_deadline` sets and `served_deadline` reads."""


def mark_served_deadline(deadline_s: float | None) -> None:
    """The deadline of the call this task serves, never reset: grpc.aio sends the handler's
    answer later in the same task, and what it logs there reads it (`served_deadline`)."""
    served_deadline_var.set(deadline_s)


def served_deadline() -> float | None:
    """The absolute `time.monotonic()` deadline of the call the current task served, if any."""
    return served_deadline_var.get()


class TotalDeadline:
    """Tightens the call's deadline to `total_s` from now (caller and inbound deadlines cap it)."""

    name: ClassVar[str] = "total_deadline"

    def __init__(self, policy: DeadlinePolicy, clock: Clock) -> None:
        self._total_s = policy.total_s
        self._clock = clock

    def execute(self, ctx: CallContext, inner: Next) -> Awaitable[Any]:
        self.tighten(ctx)
        return inner(ctx)  # nothing to do after: no layer of its own

    def tighten(self, ctx: CallContext) -> None:
        own = self._clock.now() + self._total_s
        if own < ctx.deadline_s:
            ctx.deadline_s = own


class AttemptTimeout:
    """Gives each attempt min(attempt_s, time left) as its real gRPC deadline, or refuses to
    start one that could not finish."""

    name: ClassVar[str] = "attempt_timeout"

    def __init__(self, policy: DeadlinePolicy, clock: Clock, bus: EventBus) -> None:
        self._attempt_s = policy.attempt_s
        self._min_attempt_s = policy.min_attempt_s
        self._clock = clock
        self._bus = bus

    def execute(self, ctx: CallContext, inner: Next) -> Awaitable[Any]:
        if self.fit(ctx):
            return inner(ctx)  # nothing to do after: no layer of its own
        return self._refuse(ctx)

    def fit(self, ctx: CallContext) -> bool:
        """Sets the attempt's timeout from the time left; False: too little left to start one."""
        left_s = ctx.deadline_s - self._clock.now()
        if left_s <= self._min_attempt_s:
            return False
        ctx.own_timeout = self._attempt_s <= left_s
        ctx.attempt_timeout_s = self._attempt_s if ctx.own_timeout else left_s
        return True

    def refusal(self, ctx: CallContext) -> DeadlineBudgetExhaustedError:
        """The error of an attempt `fit` refused, its event emitted."""
        self._bus.emit(DeadlineExhausted(ctx.dependency, ctx.method, ctx.attempt, "attempt"))
        return DeadlineBudgetExhaustedError(ctx.dependency, ctx.method, "attempt")

    async def _refuse(self, ctx: CallContext) -> Any:
        """Raised when awaited, as a layer of its own would: a caller that starts attempts as
        tasks (hedging) gets the refusal from the task, not from starting it."""
        raise self.refusal(ctx)
