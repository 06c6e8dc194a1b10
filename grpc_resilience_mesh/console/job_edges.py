"""The figures of the edges that are no gRPC calls (Redis and SMTP), from the job metrics
(grpc_resilience_mesh.services.telemetry.job_metrics): no `mesh_client_calls_total` counts them, so
read alone they showed 0.0/s while receipts flowed.

    payment_to_redis       jobs the outbox relay handed to Redis (mesh_jobs_enqueued_total)
    notification_to_redis  jobs the worker took from Redis and acknowledged (one per attempt)
    notification_to_smtp   receipt sends, per attempt: errors are the transient and permanent
                           outcomes, latency the attempt's time (mesh_jobs_duration_seconds)
"""

from __future__ import annotations

from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.console.metrics_view import EdgeStats, quantile

JOB_EDGES = frozenset({"payment_to_redis", "notification_to_redis", "notification_to_smtp"})


def job_edge_stats(window: Snapshot, seconds: float, caller: str, dependency: str) -> EdgeStats:
    """One job edge's rates over `seconds` (`window`: counters' growth over them)."""
    per_s = 1.0 / seconds if seconds > 0 else 0.0
    stats = EdgeStats()
    if caller == "payment":
        stats.calls_per_s = window.total("mesh_jobs_enqueued_total", "payment") * per_s
        return stats
    attempts = window.total("mesh_jobs_duration_seconds_count", caller)
    failed = attempts - window.total("mesh_jobs_duration_seconds_count", caller, outcome="ok")
    stats.calls_per_s = attempts * per_s
    if dependency != "smtp":
        return stats
    stats.error_rate = failed / attempts if attempts else 0.0
    stats.retries_per_s = window.total("mesh_jobs_retried_total", caller) * per_s
    buckets: dict[float, float] = {}
    for (service, name, labels), value in window.values.items():
        if service == caller and name == "mesh_jobs_duration_seconds_bucket":
            bound = float(dict(labels)["le"])
            buckets[bound] = buckets.get(bound, 0.0) + value
    p50, p99 = quantile(0.5, list(buckets.items())), quantile(0.99, list(buckets.items()))
    stats.p50_ms = None if p50 is None else p50 * 1000
    stats.p99_ms = None if p99 is None else p99 * 1000
    return stats
