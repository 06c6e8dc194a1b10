"""The mesh's simulated backend (a declared worker pool) and the server policy that holds it.

The pool is the mesh's, not the resilience library's: a recommendation replica that serves its calls
through N workers, so an overload experiment measures overload, not the test rig
(grpc_resilience_mesh.services.runtime.worker_pool). A server's policy is the library's ServerPolicy
plus `pool:`; a declared pool is also admission's first expected service time, unless the policy
sets one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from grpc_aio_resilience import ServerPolicy, check, option


@dataclass(frozen=True, slots=True)
class PoolPolicy:
    """A declared backend resource: calls wait for one of `workers`, then hold it for a service
    time drawn from `distribution` (mean `service_time_s`) without using the CPU."""

    workers: int = option(0, ge=0, le=10_000, doc="0 = no pool")
    service_time_s: float = option(0.02, gt=0, le=60, doc="mean service time per call")
    distribution: Literal["fixed", "exponential", "lognormal"] = option(
        "fixed", doc="how each call's service time is drawn around the mean"
    )
    sigma: float = option(0.5, gt=0, le=5, doc="lognormal: sigma of the log")
    seed: int | None = option(None, ge=0, le=999_999, doc="the draws' seed; null: random")
    max_queue: int = option(
        0,
        ge=0,
        le=100_000,
        doc="0 = unbounded. Calls waiting for a worker at most (abandoned work included): one "
        "more is refused at once, RESOURCE_EXHAUSTED without pushback, as a database at its "
        "connection limit answers",
    )
    abandoned: Literal["drop", "run"] = option(
        "drop",
        doc="drop: a call whose caller gave up (cancelled, past its deadline) leaves "
        "the queue, and its worker is free at once; run: the pool never hears of it, as a "
        "database running a query whose client went away: it still takes a worker for its "
        "service time when its turn comes",
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True, slots=True)
class MeshServerPolicy(ServerPolicy):
    """A mesh server's policy: the library's admission settings and the declared pool."""

    pool: PoolPolicy = option(factory=PoolPolicy, doc="the declared backend (recommendation)")

    def declared_service_s(self) -> float | None:
        """`expected_service_s` if set, else a declared pool's mean service time."""
        if self.expected_service_s is None and self.pool.workers:
            return self.pool.service_time_s
        return self.expected_service_s

    def declared_concurrency(self) -> int | None:
        """`backend_concurrency` if set, else a declared pool's workers (None without)."""
        return self.backend_concurrency or self.pool.workers or None
