"""A declared backend capacity: N workers and a service time per call, like a database pool.

A call waits (oldest first) for a free worker, then holds it for a service time drawn from the
policy's distribution while sleeping on the injected clock: it uses no CPU, so the pool serves
N / mean service time calls per second whatever the machine does, and an overload experiment
measures the overload pattern rather than the test rig.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from mesh.resilience.admission_policy import PoolPolicy
from mesh.resilience.clock import Clock
from mesh.resilience.events import EventBus, PoolWorkDone


def service_times(policy: PoolPolicy) -> Callable[[], float]:
    """Draws of the service time in seconds, with mean `service_time_s`."""
    rng = random.Random(policy.seed)
    mean_s = policy.service_time_s
    if policy.distribution == "exponential":
        return lambda: rng.expovariate(1.0 / mean_s)
    if policy.distribution == "lognormal":
        sigma = policy.sigma
        mu = math.log(mean_s) - sigma * sigma / 2  # so that the mean is mean_s
        return lambda: rng.lognormvariate(mu, sigma)
    return lambda: mean_s


class WorkerPool:
    """`workers` places; `async with pool.work():` waits for one, then works for a service time.

    Emits PoolWorkDone per call (its wait, its service time, the workers busy and the calls
    waiting as it ends) for the pool's metrics and span events."""

    def __init__(self, service: str, policy: PoolPolicy, clock: Clock, bus: EventBus) -> None:
        self.policy = policy
        self._service = service
        self._clock = clock
        self._bus = bus
        self._draw = service_times(policy)
        self._waiters: deque[asyncio.Future[float]] = deque()
        self.in_use = 0

    @property
    def queued(self) -> int:
        return len(self._waiters)

    @property
    def capacity_per_s(self) -> float:
        return self.policy.workers / self.policy.service_time_s

    @asynccontextmanager
    async def work(self) -> AsyncIterator[float]:
        """Holds a worker for one service time (yielded, in seconds), then frees it.

        A worker's time runs on its own: a call handed a worker starts when the previous call
        was due to end (or when it arrived, if later), not when this process next ran, so a
        busy event loop does not lower the pool's capacity (a database keeps working while
        its client is descheduled)."""
        arrived_s = self._clock.now()
        started_s = max(await self._acquire(), arrived_s)
        service_s = self._draw()
        due_s = started_s + service_s
        try:
            await self._clock.sleep(due_s - self._clock.now())
            yield service_s
        finally:
            self._release(due_s)
            self._bus.emit(
                PoolWorkDone(
                    self._service, started_s - arrived_s, service_s, self.in_use, self.queued
                )
            )

    async def _acquire(self) -> float:
        """A worker, and when it was free (clock seconds)."""
        if self.in_use < self.policy.workers and not self._waiters:
            self.in_use += 1
            return self._clock.now()
        waiter: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter  # _release hands its worker over: in_use already counts this
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release(self._clock.now())  # handed a worker while cancelled: pass it on
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def _release(self, free_s: float) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(free_s)
                return
        self.in_use -= 1
