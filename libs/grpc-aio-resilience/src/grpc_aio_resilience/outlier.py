"""Outlier ejection over a dependency's replicas, after gRFC A50 and Envoy's outlier detection.

    record(replica, failed)   counts the outcome; `consecutive_failures` in a row eject now
    tick()                    once per interval: failure-percentage ejection over the interval
                              that ended, and the ejection multiplier decays for the healthy
    available()               the replicas in rotation (an ejection that ran out returns)
    next_change_s()           until when available() stays as it is, bar a record()

An ejection lasts min(base_ejection_s * ejections, max(base_ejection_s, max_ejection_s)) and is
refused when it would put `max_ejected_percent` or more of the replicas out (A50's check:
ejected * 100 / total < max_ejected_percent before each ejection). Time is the injected clock's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.events import Event, ReplicaEjected, ReplicaReturned
from grpc_aio_resilience.outlier_policy import OutlierPolicy


@dataclass
class _Replica:
    calls: int = 0
    failures: int = 0
    consecutive: int = 0
    ejections: int = 0
    """A50's ejection time multiplier."""
    ejected_at: float | None = None
    ejected_until: float = 0.0


class OutlierDetector:
    """Which replicas of one dependency are in rotation; emits ejections and returns."""

    def __init__(
        self,
        dependency: str,
        replicas: Sequence[str],
        policy: OutlierPolicy,
        clock: Clock,
        emit: Callable[[Event], None],
    ) -> None:
        self.dependency = dependency
        self.policy = policy
        self._clock = clock
        self._emit = emit
        self._replicas = {name: _Replica() for name in replicas}
        self._next_tick = clock.now() + policy.interval_s

    def ejected(self) -> list[str]:
        return [n for n, r in self._replicas.items() if r.ejected_at is not None]

    def out_now(self) -> dict[str, bool]:
        """Each replica: out of rotation now (ejected, its time not yet run out)? Only reads
        (no return is emitted): safe from the metrics thread."""
        now = self._clock.now()
        return {
            n: r.ejected_at is not None and now < r.ejected_until
            for n, r in list(self._replicas.items())
        }

    def available(self) -> list[str]:
        """The replicas in rotation now, after returning those whose ejection ran out."""
        now = self._clock.now()
        if now >= self._next_tick:
            self.tick()
        for name, r in self._replicas.items():
            if r.ejected_at is not None and now >= r.ejected_until:
                self._emit(ReplicaReturned(self.dependency, name, now - r.ejected_at))
                r.ejected_at = None
                r.consecutive = 0
        return [n for n, r in self._replicas.items() if r.ejected_at is None]

    def next_change_s(self) -> float:
        """From when available() may answer otherwise with no record() in between: the end of
        this interval (a tick) or of the first ejection to run out."""
        until = [r.ejected_until for r in self._replicas.values() if r.ejected_at is not None]
        return min([self._next_tick, *until])

    def record(self, name: str, failed: bool) -> None:
        """One outcome of a call to replica `name` (only calls it could have failed count)."""
        r = self._replicas[name]
        r.calls += 1
        if not failed:
            r.consecutive = 0
            return
        r.failures += 1
        r.consecutive += 1
        if r.ejected_at is None and r.consecutive >= self.policy.consecutive_failures:
            self._eject(name, r, "consecutive_failures")

    def tick(self) -> None:
        """End the interval: failure-percentage ejection, multiplier decay, fresh counts."""
        now = self._clock.now()
        p = self.policy
        judged = [(n, r) for n, r in self._replicas.items() if r.calls >= p.request_volume]
        if len(judged) >= p.minimum_hosts:
            for name, r in judged:
                if r.ejected_at is None and r.failures * 100 >= p.failure_percentage * r.calls:
                    self._eject(name, r, "failure_percentage")
        for r in self._replicas.values():
            if r.ejected_at is None and r.ejections > 0:
                r.ejections -= 1
            r.calls = r.failures = 0
        self._next_tick = now + p.interval_s

    def _eject(self, name: str, r: _Replica, reason: str) -> None:
        p = self.policy
        if len(self.ejected()) * 100 >= p.max_ejected_percent * len(self._replicas):
            return
        now = self._clock.now()
        r.ejections += 1
        ejection_s = min(p.base_ejection_s * r.ejections, max(p.base_ejection_s, p.max_ejection_s))
        r.ejected_at, r.ejected_until = now, now + ejection_s
        self._emit(ReplicaEjected(self.dependency, name, reason, ejection_s, r.ejections))
