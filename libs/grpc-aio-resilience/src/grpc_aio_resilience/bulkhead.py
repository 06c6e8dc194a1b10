"""Bulkhead: a concurrency limit per dependency, rejecting at once or queueing briefly."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, ClassVar

from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Next
from grpc_aio_resilience.edge_policy import BulkheadPolicy
from grpc_aio_resilience.errors import BulkheadFullError
from grpc_aio_resilience.events import BulkheadRejected, EventBus


class Bulkhead:
    """At most `max_concurrent` calls in flight. `reject`: the next fails with
    RESOURCE_EXHAUSTED at once; `queue`: it waits FIFO up to min(max_wait_s, time left)."""

    name: ClassVar[str] = "bulkhead"

    def __init__(self, policy: BulkheadPolicy, clock: Clock, bus: EventBus, dependency: str):
        self.limit = policy.max_concurrent
        self._queue = policy.mode == "queue"
        self._max_wait_s = policy.max_wait_s
        self._clock = clock
        self._bus = bus
        self._dependency = dependency
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def execute(self, ctx: CallContext, inner: Next) -> Any:
        if not self.enter():
            await self.wait_for_slot(ctx)
        try:
            return await inner(ctx)
        finally:
            self.release()

    def enter(self) -> bool:
        """Takes a slot if one is free and no call queues ahead; False: `wait_for_slot`."""
        if self.in_flight >= self.limit or self._waiters:
            return False
        self.in_flight += 1
        return True

    async def wait_for_slot(self, ctx: CallContext) -> None:
        """Returns holding a slot (handed over by `release`) or raises BulkheadFullError."""
        started_s = self._clock.now()
        wait_s = min(self._max_wait_s, ctx.deadline_s - started_s) if self._queue else 0.0
        if wait_s <= 0.0:
            self._reject(ctx, 0.0)
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(slot)
        timer = asyncio.ensure_future(self._clock.sleep(wait_s))
        try:
            await asyncio.wait((slot, timer), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._abandon(slot)
            raise
        finally:
            timer.cancel()
        if not slot.done():
            self._abandon(slot)
            self._reject(ctx, self._clock.now() - started_s)

    def _abandon(self, slot: asyncio.Future[None]) -> None:
        if slot.done() and not slot.cancelled():
            # The slot was handed over as we gave up: pass it on.
            self.release()
            return
        slot.cancel()
        self._waiters.remove(slot)

    def release(self) -> None:
        while self._waiters:
            slot = self._waiters.popleft()
            if not slot.done():
                # The slot moves straight to the waiter; in_flight is unchanged.
                slot.set_result(None)
                return
        self.in_flight -= 1

    def _reject(self, ctx: CallContext, waited_s: float) -> None:
        self._bus.emit(BulkheadRejected(ctx.dependency, ctx.method, self.limit, waited_s))
        raise BulkheadFullError(self._dependency, self.limit)
