"""A seeded discrete-event simulation of the retry storm: callers, replicas, a trigger.

Homes arrive on a fixed schedule (open loop, as the mesh's load generator sends them). Each
makes one call of up to `max_attempts` attempts inside the call's total deadline; an attempt
goes round-robin to a replica, waits in its FIFO queue for a worker and is served for a
lognormal service time (the pool's distribution, stretched by the trigger if it starts during
it). An attempt that outlives its timeout fails and, if the policy lets it, is retried after a
full-jitter backoff; its queued work stays and is served for nobody (`abandoned: run`). A full
queue refuses at once with RESOURCE_EXHAUSTED, which nobody retries. That is the whole
sustaining effect: once the queue's wait passes the attempt timeout, every attempt fails,
each home sends `max_attempts` of them, and the replicas work for callers who have gone.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from grpc_resilience_mesh.chaos.metastable.cures import ClientThrottle, RetryBudget
from grpc_resilience_mesh.chaos.metastable.system import System
from grpc_resilience_mesh.chaos.scenarios.goodput import Completions


@dataclass
class _Attempt:
    home: int
    number: int
    timeout_at_s: float
    deadline_s: float
    live: bool = True


@dataclass
class _Replica:
    queue: deque[_Attempt] = field(default_factory=deque)
    busy: int = 0
    est_service_s: float = 0.0


@dataclass
class SimResult:
    """What a run produced: the good completions and the counters that explain them."""

    done: Completions
    attempts: int = 0
    abandoned: int = 0
    refused: int = 0
    throttled: int = 0
    homes: int = 0


class Simulation:
    """One run of `system` with the random streams seeded by `seed`."""

    def __init__(self, system: System, seed: int) -> None:
        self.sys = system
        self._rng = random.Random(seed)
        self._service_rng = random.Random(seed + 1)
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self.now_s = 0.0
        self._replicas = [
            _Replica(est_service_s=system.service_time_s) for _ in range(system.replicas)
        ]
        self._next_replica = 0
        self._budget = RetryBudget() if system.cures.budget else None
        self._throttle = ClientThrottle(self._rng) if system.cures.throttle else None
        self._good: list[float] = []
        self.result = SimResult(Completions((), 0.0))

    def _at(self, when_s: float, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when_s, self._seq, action))

    def run(self) -> SimResult:
        homes = int(self.sys.rate_per_s * self.sys.duration_s)
        for home in range(homes):
            start = home / self.sys.rate_per_s
            self._at(start, partial(self._send, home, 1, start + self.sys.total_s))
        while self._events:
            self.now_s, _, action = heapq.heappop(self._events)
            action()
        last = (homes - 1) / self.sys.rate_per_s if homes else 0.0
        self.result.homes = homes
        self.result.done = Completions(tuple(sorted(self._good)), last, 0.0)
        return self.result

    def _send(self, home: int, number: int, deadline_s: float) -> None:
        if self._throttle is not None and not self._throttle.admits(self.now_s):
            self.result.throttled += 1
            return
        self.result.attempts += 1
        timeout_s = min(self.sys.attempt_s, deadline_s - self.now_s)
        attempt = _Attempt(home, number, self.now_s + timeout_s, deadline_s)
        replica = self._replicas[self._next_replica]
        self._next_replica = (self._next_replica + 1) % len(self._replicas)
        if len(replica.queue) >= self.sys.max_queue:
            self._record(accepted=False)
            self.result.refused += 1
            return
        if self.sys.cures.admission and self._too_late(replica, timeout_s):
            self._record(accepted=False)
            self._failed(attempt)
            return
        self._record(accepted=True)
        replica.queue.append(attempt)
        self._at(self.now_s + timeout_s, lambda: self._timed_out(attempt))
        self._start_work(replica)

    def _too_late(self, replica: _Replica, timeout_s: float) -> bool:
        ahead = len(replica.queue) + replica.busy
        wait_s = ahead / self.sys.workers * replica.est_service_s
        return wait_s + replica.est_service_s + self.sys.network_s > timeout_s

    def _record(self, accepted: bool) -> None:
        if self._throttle is not None:
            self._throttle.record(self.now_s, accepted)

    def _start_work(self, replica: _Replica) -> None:
        while replica.busy < self.sys.workers and replica.queue:
            attempt = replica.queue.popleft()
            replica.busy += 1
            service_s = self._service_s()
            replica.est_service_s += 0.1 * (service_s - replica.est_service_s)
            self._at(self.now_s + service_s, partial(self._served, replica, attempt))

    def _service_s(self) -> float:
        sigma = self.sys.sigma
        mu = math.log(self.sys.service_time_s) - sigma * sigma / 2
        trig = self.sys.trigger
        factor = trig.factor if trig.start_s <= self.now_s < trig.stop_s else 1.0
        return self._service_rng.lognormvariate(mu, sigma) * factor

    def _served(self, replica: _Replica, attempt: _Attempt) -> None:
        replica.busy -= 1
        if not attempt.live:
            self.result.abandoned += 1
        elif self.now_s + self.sys.network_s <= attempt.timeout_at_s:
            attempt.live = False
            self._good.append(self.now_s + self.sys.network_s)
            if self._budget is not None:
                self._budget.succeeded()
        self._start_work(replica)

    def _timed_out(self, attempt: _Attempt) -> None:
        if attempt.live:
            attempt.live = False
            self._failed(attempt)

    def _failed(self, attempt: _Attempt) -> None:
        if self._budget is not None:
            self._budget.failed()
        if attempt.number >= self.sys.max_attempts:
            return
        if self._budget is not None and not self._budget.allows_retry():
            return
        cap = min(self.sys.max_backoff_s, self.sys.base_backoff_s * 2 ** (attempt.number - 1))
        at = self.now_s + self._rng.uniform(0.0, cap)
        if at + 0.005 < attempt.deadline_s:
            self._at(at, lambda: self._send(attempt.home, attempt.number + 1, attempt.deadline_s))


def simulate(system: System, seed: int = 0) -> SimResult:
    """Runs the model once; the same system and seed give the same result."""
    return Simulation(system, seed).run()
