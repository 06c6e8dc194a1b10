"""The modelled system's numbers: the same fields the experiment file sets on the mesh."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from grpc_resilience_mesh.chaos.metastable.cures import RETRY_ONLY, Cures


@dataclass(frozen=True)
class Trigger:
    """From `start_s` to `stop_s` every service time that starts is `factor` times as long."""

    factor: float = 3.0
    start_s: float = 10.0
    stop_s: float = 15.0

    @property
    def duration_s(self) -> float:
        return self.stop_s - self.start_s


@dataclass(frozen=True)
class System:
    """Open-loop callers, replicas of `workers` with a bounded FIFO queue, and a retry policy.

    Defaults are metastable-retry-storm's retry-only variant: 28 homes/s against 2 x 1 worker
    x 50 ms (40 calls/s declared), 1 s per attempt, 2.5 s per call, 3 attempts, full-jitter
    backoff, a queue of 40 per replica that refuses the next at once and serves the calls
    whose callers have gone."""

    rate_per_s: float = 28.0
    duration_s: float = 40.0
    replicas: int = 2
    workers: int = 1
    service_time_s: float = 0.05
    sigma: float = 0.5
    max_queue: int = 40
    attempt_s: float = 1.0
    total_s: float = 2.5
    max_attempts: int = 3
    base_backoff_s: float = 0.05
    max_backoff_s: float = 0.5
    network_s: float = 0.0
    """Time an attempt spends outside the replica (the hops), counted against its timeout."""
    trigger: Trigger = field(default_factory=Trigger)
    cures: Cures = RETRY_ONLY

    @property
    def capacity_per_s(self) -> float:
        """The declared capacity: replicas x workers / mean service time."""
        return self.replicas * self.workers / self.service_time_s

    def with_cures(self, cures: Cures) -> System:
        return replace(self, cures=cures)

    def at_load(self, fraction_of_capacity: float) -> System:
        return replace(self, rate_per_s=fraction_of_capacity * self.capacity_per_s)

    def with_trigger(self, factor: float, duration_s: float) -> System:
        start = self.trigger.start_s
        return replace(self, trigger=Trigger(factor, start, start + duration_s))
