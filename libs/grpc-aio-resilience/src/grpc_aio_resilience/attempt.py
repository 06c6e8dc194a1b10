"""The innermost layers: the per-attempt hook (events + an optional observer) and the wire."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, ClassVar

import grpc
import grpc.aio

from grpc_aio_resilience import classify, criticality, intake
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Next
from grpc_aio_resilience.events import AttemptFinished, AttemptStarted, EventBus
from grpc_aio_resilience.outcome import call_outcome

AttemptObserver = Callable[[CallContext], AbstractContextManager[Any]]
"""Wraps each attempt (a tracing span, say). It runs after the per-attempt metadata copy is
made, so it may add to `ctx.attempt_metadata` (e.g. a traceparent) before the call is sent."""

_NO_OBSERVATION: AbstractContextManager[None] = nullcontext()


class AttemptHook:
    """Emits AttemptStarted / AttemptFinished around each wire attempt and runs the observer;
    each attempt carries the current criticality (grpc_aio_resilience.criticality) as metadata,
    and `carry` (the edge's credential), which is set up once, not per call."""

    name: ClassVar[str] = "attempt_hook"

    def __init__(
        self,
        bus: EventBus,
        clock: Clock,
        observer: AttemptObserver | None,
        carry: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._bus = bus
        self._clock = clock
        self._observer = observer
        self._carry = carry

    def execute(self, ctx: CallContext, inner: Next) -> Awaitable[Any]:
        if self.prepare(ctx):
            return self.observed(ctx, inner)
        return inner(ctx)  # nobody observes this attempt: no layer of its own

    def prepare(self, ctx: CallContext) -> bool:
        """Sets the attempt's metadata and criticality; True when someone observes it."""
        metadata = ctx.details.metadata
        if self._carry or metadata or self._observer is not None:
            # grpc.aio shares the caller's metadata object between attempts: copy per attempt.
            ctx.attempt_metadata = grpc.aio.Metadata(*self._carry, *(metadata or ()))
            ctx.criticality = _carry_criticality(ctx.attempt_metadata)
        else:  # nothing to copy and no observer to add to it: a metadata object only if needed
            ctx.criticality = level = criticality.inbound_var.get()
            ctx.attempt_metadata = (
                None if level is None else grpc.aio.Metadata((criticality.METADATA_KEY, level.name))
            )
        heard = self._bus.heard
        return self._observer is not None or AttemptStarted in heard or AttemptFinished in heard

    async def observed(self, ctx: CallContext, inner: Next) -> Any:
        """`inner` with the attempt's events around it, inside the observer."""
        emit = self._bus.emit
        emit(AttemptStarted(ctx.dependency, ctx.method, ctx.attempt, ctx.attempt_timeout_s))
        started_s = self._clock.now()
        pushback: float | None = None
        observation = _NO_OBSERVATION if self._observer is None else self._observer(ctx)
        failure: BaseException | None = None
        try:
            with observation:
                return await inner(ctx)
        except BaseException as err:
            failure = err
            if isinstance(err, grpc.aio.AioRpcError):
                pushback = classify.pushback_s(err.trailing_metadata())
            raise
        finally:
            code = call_outcome(failure)
            failure = None  # the exception's traceback holds this frame: no cycle
            duration_s = self._clock.now() - started_s
            emit(
                AttemptFinished(ctx.dependency, ctx.method, ctx.attempt, code, duration_s, pushback)
            )


def _carry_criticality(metadata: grpc.aio.Metadata) -> criticality.Criticality | None:
    """The criticality this attempt carries: one the caller put in its metadata on purpose,
    else that of the call being served (propagated hop to hop like the deadline)."""
    if criticality.METADATA_KEY in metadata:
        return criticality.from_metadata(metadata)
    value = criticality.current()
    if value is not None:
        metadata.add(criticality.METADATA_KEY, value.name)
    return value


async def send_on_wire(ctx: CallContext, wait_header: bool = True) -> Any:
    """Starts the attempt with its own deadline and metadata (with `wait_header`, the deadline
    also as `resilience-timeout-ms`, grpc_aio_resilience.intake); returns the finished call object
    (awaiting it again yields the response, and its trailing metadata stays readable)."""
    call = await ctx.continuation(attempt_details(ctx, wait_header), ctx.request)
    try:
        await call
    except asyncio.CancelledError:
        # Our caller went away: cancel the attempt so the server stops working on it.
        call.cancel()
        raise
    return call


def attempt_details(ctx: CallContext, wait_header: bool) -> grpc.aio.ClientCallDetails:
    """The details the attempt goes on the wire with (see `send_on_wire`); counts it as sent."""
    details = ctx.details
    timeout_s = ctx.attempt_timeout_s if ctx.attempt_timeout_s != math.inf else None
    if timeout_s is not None and wait_header:  # the server can tell how long it waited
        if ctx.attempt_metadata is None:
            ctx.attempt_metadata = grpc.aio.Metadata(*(details.metadata or ()))
        ctx.attempt_metadata[intake.TIMEOUT_KEY] = intake.timeout_value(timeout_s)
    metadata = ctx.attempt_metadata
    if metadata is None:  # nothing added: the caller's own, which nothing here changes
        metadata = details.metadata if details.metadata is not None else grpc.aio.Metadata()
    ctx.sent += 1
    return grpc.aio.ClientCallDetails(
        details.method, timeout_s, metadata, details.credentials, details.wait_for_ready
    )


send_without_wait_header: Next = partial(send_on_wire, wait_header=False)
"""The wire of an edge whose server has no intake gate: the header would be read by nobody,
and one more metadata entry costs grpc ~30 us of CPU per call, both ends together (measured:
`python -m bench.metadata_cost`)."""
