"""Per-service admission figures from the services' own /metrics: calls in flight against the
concurrency limit now, and refusals per second (by reason) over the window."""

from __future__ import annotations

from dataclasses import dataclass, field

from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.services.topology import replica_of


@dataclass
class ServerStats:
    """One service (its replicas added up): what its admission layer is doing."""

    in_flight: float | None = None
    concurrency_limit: float | None = None
    shed_per_s: float = 0.0
    shed_by_reason: dict[str, float] = field(default_factory=dict)
    pool_in_use: float | None = None
    pool_queued: float | None = None


def server_stats(now: Snapshot, window: Snapshot, seconds: float, service: str) -> ServerStats:
    """`now`: the latest samples (gauges); `window`: counters' growth over `seconds`. A limit
    of 0 (no limit) on any replica makes the whole service's limit 0."""
    per_s = 1.0 / seconds if seconds > 0 else 0.0
    stats = ServerStats()
    unlimited = False
    for (name_of, name, _labels), value in now.values.items():
        if replica_of(name_of) != service:
            continue
        if name == "mesh_server_in_flight":
            stats.in_flight = (stats.in_flight or 0.0) + value
        elif name == "mesh_server_concurrency_limit":
            unlimited = unlimited or value == 0
            stats.concurrency_limit = (stats.concurrency_limit or 0.0) + value
        elif name == "mesh_pool_in_use":
            stats.pool_in_use = (stats.pool_in_use or 0.0) + value
        elif name == "mesh_pool_queue_length":
            stats.pool_queued = (stats.pool_queued or 0.0) + value
    if unlimited:
        stats.concurrency_limit = 0.0
    for (name_of, name, labels), value in window.values.items():
        if replica_of(name_of) == service and name == "mesh_server_shed_total":
            reason = dict(labels).get("reason", "limit")
            stats.shed_by_reason[reason] = stats.shed_by_reason.get(reason, 0.0) + value * per_s
            stats.shed_per_s += value * per_s
    return stats
