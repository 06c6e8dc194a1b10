"""A declared backend capacity: N workers and a service time per call, like a database pool.

A call waits (oldest first) for a free worker, then holds it for a service time drawn from the
policy's distribution while sleeping on the injected clock: it uses no CPU, so the pool serves
N / mean service time calls per second whatever the machine does, and an overload experiment
measures the overload pattern rather than the test rig.

What the pool does for a caller who gave up is the policy's `abandoned`: `drop` (a waiter
leaves the queue) or `run`, a backend that never hears of it, like a database running the
query of a client that went away: the call keeps its place in the queue and, in service, its
worker, for the whole of its service time. That work for nobody is the sustaining effect of a
retry storm's metastable state (Bronson et al., HotOS 2021), counted as `abandoned` in
PoolWorkDone. A `slowdown` (the fault table's service_time_factor) stretches every service
time that starts while it is set.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from grpc_aio_resilience import Clock, EventBus, PoolFullError, PoolWorkDone
from grpc_resilience_mesh.services.policy.pool import PoolPolicy


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
    waiting as it ends, whether its caller had gone) for the pool's metrics and span events."""

    def __init__(
        self,
        service: str,
        policy: PoolPolicy,
        clock: Clock,
        bus: EventBus,
        slowdown: Callable[[], float] | None = None,
    ) -> None:
        self.policy = policy
        self._service = service
        self._clock = clock
        self._bus = bus
        self._draw = service_times(policy)
        self._slowdown = slowdown or (lambda: 1.0)
        self._waiters: deque[asyncio.Future[float]] = deque()
        self._orphans: set[asyncio.Task[None]] = set()
        self.in_use = 0

    @property
    def queued(self) -> int:
        return len(self._waiters)

    @property
    def capacity_per_s(self) -> float:
        return self.policy.workers / self.policy.service_time_s

    def _service_s(self) -> float:
        return self._draw() * self._slowdown()

    @asynccontextmanager
    async def work(self) -> AsyncIterator[float]:
        """Holds a worker for one service time (yielded, in seconds), then frees it; raises
        PoolFullError at once when `max_queue` calls already wait.

        A worker's time runs on its own: a call handed a worker starts when the previous call
        was due to end (or when it arrived, if later), not when this process next ran, so a
        busy event loop does not lower the pool's capacity (a database keeps working while
        its client is descheduled)."""
        arrived_s = self._clock.now()
        self.check_room()
        started_s = max(await self._acquire(arrived_s), arrived_s)
        service_s = self._service_s()
        due_s = started_s + service_s
        gone = False
        try:
            await self._clock.sleep(due_s - self._clock.now())
            yield service_s
        except asyncio.CancelledError:
            gone = self.policy.abandoned == "run"
            raise
        finally:
            if gone:
                self._orphan(self._finish(due_s, started_s - arrived_s, service_s, True))
            else:
                self._done(due_s, started_s - arrived_s, service_s, False)

    def check_room(self) -> None:
        """PoolFullError when a call arriving now would be refused (`max_queue` waiting)."""
        limit = self.policy.max_queue
        free = self.in_use < self.policy.workers and not self._waiters
        if limit and not free and len(self._waiters) >= limit:
            raise PoolFullError(self._service, limit)

    async def _acquire(self, arrived_s: float) -> float:
        """A worker, and when it was free (clock seconds)."""
        if self.in_use < self.policy.workers and not self._waiters:
            self.in_use += 1
            return self._clock.now()
        waiter: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter  # _release hands its worker over: in_use already counts this
        except asyncio.CancelledError:
            self._give_up(waiter, arrived_s)
            raise

    def _give_up(self, waiter: asyncio.Future[float], arrived_s: float) -> None:
        """The caller of a waiting call is gone: drop its work, or leave it to run."""
        run = self.policy.abandoned == "run"
        if waiter.done() and not waiter.cancelled():  # handed a worker while cancelled
            if run:
                self._run_abandoned(waiter.result(), arrived_s)
            else:
                self._release(self._clock.now())
        elif waiter in self._waiters:
            if not run:
                self._waiters.remove(waiter)
                return
            ghost: asyncio.Future[float] = asyncio.get_running_loop().create_future()
            self._waiters[self._waiters.index(waiter)] = ghost
            ghost.add_done_callback(
                lambda f: None if f.cancelled() else self._run_abandoned(f.result(), arrived_s)
            )

    def _run_abandoned(self, free_s: float, arrived_s: float) -> None:
        started_s = max(free_s, arrived_s)
        service_s = self._service_s()
        self._orphan(self._finish(started_s + service_s, started_s - arrived_s, service_s, True))

    def _orphan(self, work: object) -> None:
        assert asyncio.iscoroutine(work)
        task = asyncio.ensure_future(work)
        self._orphans.add(task)
        task.add_done_callback(self._orphans.discard)

    async def _finish(self, due_s: float, waited_s: float, service_s: float, gone: bool) -> None:
        """Abandoned work: the worker stays busy until `due_s`, then goes to the next call."""
        try:
            await self._clock.sleep(due_s - self._clock.now())
        finally:
            self._done(due_s, waited_s, service_s, gone)

    def _done(self, due_s: float, waited_s: float, service_s: float, gone: bool) -> None:
        self._release(due_s)
        self._bus.emit(
            PoolWorkDone(self._service, waited_s, service_s, self.in_use, self.queued, gone)
        )

    def _release(self, free_s: float) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(free_s)
                return
        self.in_use -= 1
