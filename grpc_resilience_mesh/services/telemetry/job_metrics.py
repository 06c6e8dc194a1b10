"""Job counters, named mesh_jobs_*, in a service's Prometheus registry.

| metric                               | type      | labels          | who counts      |
|--------------------------------------|-----------|-----------------|-----------------|
| mesh_jobs_enqueued_total             | counter   | queue           | payment's relay |
| mesh_jobs_outbox_pending             | gauge     | queue           | payment's relay |
| mesh_jobs_completed_total            | counter   | queue           | worker          |
| mesh_jobs_failed_total               | counter   | queue, reason   | worker          |
| mesh_jobs_retried_total              | counter   | queue           | worker          |
| mesh_jobs_stalled_total              | counter   | queue           | worker          |
| mesh_jobs_duplicates_prevented_total | counter   | queue           | worker          |
| mesh_jobs_duration_seconds           | histogram | queue, outcome  | worker          |

`reason` is permanent (a 5xx, an unknown user, a bad payload), exhausted (attempts spent) or
stalled (stalled more than maxStalledCount times: a job that kills its worker);
`outcome` is ok, transient or permanent. `enqueued` counts jobs Redis accepted, duplicates
included (BullMQ keeps the first job of an id, so a re-enqueue after a lost reply is harmless).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class JobMetrics:
    """The mesh_jobs_* metrics of one queue."""

    def __init__(self, registry: CollectorRegistry, queue: str) -> None:
        self.queue = queue
        q = ("queue",)
        self._enqueued = Counter(
            "mesh_jobs_enqueued_total", "Jobs handed to Redis.", q, registry=registry
        )
        self._pending = Gauge(
            "mesh_jobs_outbox_pending", "Outbox rows not yet enqueued.", q, registry=registry
        )
        self._completed = Counter(
            "mesh_jobs_completed_total", "Jobs completed.", q, registry=registry
        )
        self._failed = Counter(
            "mesh_jobs_failed_total", "Jobs failed for good.", (*q, "reason"), registry=registry
        )
        self._retried = Counter(
            "mesh_jobs_retried_total", "Failed attempts to be retried.", q, registry=registry
        )
        self._stalled = Counter(
            "mesh_jobs_stalled_total",
            "Jobs whose worker died, moved back to wait.",
            q,
            registry=registry,
        )
        self._dupes = Counter(
            "mesh_jobs_duplicates_prevented_total",
            "Attempts that found their receipt already sent.",
            q,
            registry=registry,
        )
        self._duration = Histogram(
            "mesh_jobs_duration_seconds",
            "Time per attempt.",
            (*q, "outcome"),
            registry=registry,
            buckets=_BUCKETS,
        )

    def enqueued(self, n: int = 1) -> None:
        self._enqueued.labels(self.queue).inc(n)

    def outbox_pending(self, n: int) -> None:
        self._pending.labels(self.queue).set(n)

    def completed(self) -> None:
        self._completed.labels(self.queue).inc()

    def failed(self, reason: str) -> None:
        self._failed.labels(self.queue, reason).inc()

    def retried(self) -> None:
        self._retried.labels(self.queue).inc()

    def stalled(self) -> None:
        self._stalled.labels(self.queue).inc()

    def duplicate_prevented(self) -> None:
        self._dupes.labels(self.queue).inc()

    def attempt(self, outcome: str, seconds: float) -> None:
        self._duration.labels(self.queue, outcome).observe(seconds)
