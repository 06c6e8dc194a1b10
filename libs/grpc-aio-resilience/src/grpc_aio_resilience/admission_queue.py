"""The calls waiting for a place under the admission limit, and the order they get one in.

Disciplines (Facebook, "Fail at Scale", 2015): `fifo` serves the oldest first; `codel` too,
but a waiter's longest wait is N (`codel_interval_s`), or M (`codel_target_s`) when it arrives
while the queue has not been empty for the last N: the paper's "if the queue has not been
empty for the last N ms, then the amount of time spent in the queue is limited to M ms";
`adaptive_lifo` serves the newest first once such a standing queue has formed (the oldest
waiters are the likeliest to have given up), the oldest first otherwise. Among the waiters a
place could go to, the most critical comes first.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from grpc_aio_resilience.admission_policy import QueuePolicy
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.criticality import Criticality


class Waiter:
    """One call waiting for a place; its future gets (start_s, in_flight) or an error."""

    __slots__ = ("criticality", "enqueued_s", "future", "method")

    def __init__(self, method: str, criticality: Criticality, enqueued_s: float) -> None:
        self.method = method
        self.criticality = criticality
        self.enqueued_s = enqueued_s
        self.future: asyncio.Future[tuple[float, int]] = asyncio.get_running_loop().create_future()


class WaitQueue:
    """Bounded waiters in arrival order; `pick` chooses by discipline and criticality."""

    def __init__(self, policy: QueuePolicy, clock: Clock) -> None:
        self.policy = policy
        self._clock = clock
        self.waiters: deque[Waiter] = deque()
        """Oldest first; the same object for the queue's life, so a caller may keep it and ask
        whether anyone waits without a call (grpc_aio_resilience.shedding's fixed path)."""
        self._last_empty_s = clock.now()

    def __len__(self) -> int:
        return len(self.waiters)

    @property
    def enabled(self) -> bool:
        return self.policy.discipline != "none"

    @property
    def full(self) -> bool:
        return len(self.waiters) >= self.policy.max_length

    def standing(self) -> bool:
        """Whether the queue has not been empty for the last `codel_interval_s`."""
        if not self.waiters:
            return False
        return self._clock.now() - self._last_empty_s >= self.policy.codel_interval_s

    def timeout_s(self) -> float:
        """The longest a call arriving now may wait for a place."""
        if self.policy.discipline == "codel":
            p = self.policy
            return p.codel_target_s if self.standing() else p.codel_interval_s
        return self.policy.max_wait_s

    def push(self, waiter: Waiter) -> None:
        if not self.waiters:
            self._last_empty_s = self._clock.now()
        self.waiters.append(waiter)

    def remove(self, waiter: Waiter) -> None:
        if waiter in self.waiters:
            self.waiters.remove(waiter)
            if not self.waiters:
                self._last_empty_s = self._clock.now()

    def pick(self, eligible: Callable[[Waiter], bool]) -> Waiter | None:
        """The next waiter to get a place: the most critical eligible one, and among equals
        the discipline's choice (newest first for adaptive LIFO under a standing queue)."""
        lifo = self.policy.discipline == "adaptive_lifo" and self.standing()
        order = reversed(self.waiters) if lifo else iter(self.waiters)
        best: Waiter | None = None
        for waiter in order:
            if eligible(waiter) and (best is None or waiter.criticality > best.criticality):
                best = waiter
        return best

    def evictable(self, criticality: Criticality) -> Waiter | None:
        """The newest of the least critical waiters, if less critical than `criticality`."""
        victim: Waiter | None = None
        for waiter in reversed(self.waiters):
            if victim is None or waiter.criticality < victim.criticality:
                victim = waiter
        if victim is None or victim.criticality >= criticality:
            return None
        return victim
