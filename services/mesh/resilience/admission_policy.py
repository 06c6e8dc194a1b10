"""A server's admission settings: the ServerPolicy, and its `limit:`, `queue:` and `pool:` sections.

`limit.algorithm` picks the concurrency limit: `static` is today's `max_in_flight`, `vegas` and
`gradient2` follow Netflix concurrency-limits 0.5.4 with its builders' defaults. `queue` says
what a call finding the limit reached does (`none`: refused at once, today's); `pool` declares
a bounded backend resource (N workers, a service time per call) for a service that uses one
(recommendation), so its capacity is N / mean service time whatever the CPU does.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _codel_target_below_interval(target_s: float, interval_s: float) -> None:
    """CoDel's M must be shorter than its N (a queue and the intake gate alike)."""
    if target_s >= interval_s:
        raise ValueError(f"codel_target_s ({target_s}) must be < codel_interval_s ({interval_s})")


class VegasPolicy(_Model):
    """`VegasLimit.Builder`'s settings and defaults (alpha 3 and beta 6 x log10 of the limit)."""

    initial_limit: int = Field(default=20, ge=1, le=100_000, description="[1, 100000]")
    max_concurrency: int = Field(default=1000, ge=1, le=100_000, description="[1, 100000]")
    smoothing: float = Field(default=1.0, gt=0, le=1, description="(0, 1]: share of a new limit")
    probe_multiplier: int = Field(
        default=30,
        ge=1,
        le=10_000,
        description="[1, 10000]: no-load RTT re-measured after about jitter x this x limit samples",
    )


class Gradient2Policy(_Model):
    """`Gradient2Limit.Builder`'s settings and defaults."""

    initial_limit: int = Field(default=20, ge=1, le=100_000, description="[1, 100000]")
    min_limit: int = Field(default=20, ge=1, le=100_000, description="[1, 100000]: floor")
    max_concurrency: int = Field(default=200, ge=1, le=100_000, description="[1, 100000]")
    smoothing: float = Field(default=0.2, gt=0, le=1, description="(0, 1]: share of a new limit")
    queue_size: int = Field(default=4, ge=0, le=10_000, description="[0, 10000]: allowance")
    long_window: int = Field(default=600, ge=1, le=100_000, description="[1, 100000]: samples")
    rtt_tolerance: float = Field(default=1.5, ge=1, le=100, description="[1, 100]")

    @model_validator(mode="after")
    def _floor_below_cap(self) -> Gradient2Policy:
        if self.min_limit > self.max_concurrency:
            raise ValueError(
                f"min_limit ({self.min_limit}) must be <= max_concurrency ({self.max_concurrency})"
            )
        return self


class WindowPolicy(_Model):
    """`WindowedLimit.Builder`'s settings and defaults: the adaptive limit gets one sample per
    window (the window's mean RTT), as Netflix's README wires Gradient2 into a gRPC server."""

    enabled: bool = Field(
        default=False,
        description="false: every call's RTT is a sample (the limiter's own default); true: "
        "one aggregated sample per window, so the long average moves per window, not per call",
    )
    min_window_s: float = Field(default=1.0, ge=0.1, le=60, description="[0.1, 60]")
    max_window_s: float = Field(default=1.0, ge=0.1, le=60, description="[0.1, 60]")
    window_size: int = Field(
        default=10, ge=10, le=100_000, description="[10, 100000]: samples a window needs"
    )
    min_rtt_threshold_s: float = Field(
        default=100e-6, ge=0, le=1, description="[0, 1]: faster calls are no sample"
    )

    @model_validator(mode="after")
    def _min_below_max(self) -> WindowPolicy:
        if self.min_window_s > self.max_window_s:
            raise ValueError(
                f"min_window_s ({self.min_window_s}) must be <= max_window_s ({self.max_window_s})"
            )
        return self


class LimitPolicy(_Model):
    """Which concurrency limit admits unary calls (streams keep `max_streams_in_flight`)."""

    algorithm: Literal["static", "vegas", "gradient2"] = Field(
        default="static",
        description="static: max_in_flight (today's); vegas / gradient2: adaptive, from RTTs",
    )
    vegas: VegasPolicy = Field(default_factory=VegasPolicy)
    gradient2: Gradient2Policy = Field(default_factory=Gradient2Policy)
    window: WindowPolicy = Field(default_factory=WindowPolicy)
    critical_reserve: float = Field(
        default=0.1,
        ge=0,
        le=0.9,
        description="[0, 0.9]: share of the limit (rounded up) only CRITICAL and CRITICAL_PLUS "
        "calls may take; SHEDDABLE* calls are refused first",
    )
    deadline_aware: bool = Field(
        default=False,
        description="refuse at once a call whose remaining deadline is shorter than the "
        "time it is expected to take (an average of recent RTTs; with nothing in flight, of "
        "calls admitted with nobody ahead; both first the pool's service time)",
    )


class QueuePolicy(_Model):
    """Where a call waits for a place when the limit is reached, and for how long."""

    discipline: Literal["none", "fifo", "codel", "adaptive_lifo"] = Field(
        default="none",
        description="none: refuse at once (today's); fifo: oldest first, wait <= max_wait_s; "
        "codel: oldest first, wait <= codel_interval_s, or codel_target_s once the queue has "
        "not been empty for codel_interval_s; adaptive_lifo: newest first while the queue "
        "has not been empty for codel_interval_s, else oldest first, wait <= max_wait_s",
    )
    max_length: int = Field(default=64, ge=1, le=100_000, description="[1, 100000]: waiters")
    max_wait_s: float = Field(default=0.1, gt=0, le=60, description="(0, 60]: fifo and lifo")
    codel_target_s: float = Field(default=0.005, gt=0, le=10, description="(0, 10]: M")
    codel_interval_s: float = Field(default=0.1, gt=0, le=60, description="(0, 60]: N")

    @model_validator(mode="after")
    def _target_below_interval(self) -> QueuePolicy:
        _codel_target_below_interval(self.codel_target_s, self.codel_interval_s)
        return self


class IntakePolicy(_Model):
    """The wait in front of admission: grpc core queues the calls a server has not taken
    yet (grpc.aio takes them one at a time on the event loop), where no limit inside the
    process sees them. A caller's `mesh-timeout-ms` (its deadline as it sent the call, like
    Envoy's x-envoy-expected-rq-timeout-ms) less what is left of it at admission is that wait
    (plus the hop). CoDel's rule ("Fail at Scale") on it: a call that waited more than N is
    refused, or more than M once every call for the last N has waited more than M."""

    discipline: Literal["none", "codel"] = Field(
        default="none",
        description="none: the wait is not looked at (today's); codel: a call that waited "
        "longer than codel_interval_s (N) before admission is refused, or longer than "
        "codel_target_s (M) once every call for N has waited longer than M",
    )
    codel_target_s: float = Field(default=0.005, gt=0, le=10, description="(0, 10]: M")
    codel_interval_s: float = Field(default=0.1, gt=0, le=60, description="(0, 60]: N")

    @model_validator(mode="after")
    def _target_below_interval(self) -> IntakePolicy:
        _codel_target_below_interval(self.codel_target_s, self.codel_interval_s)
        return self


class PoolPolicy(_Model):
    """A declared backend resource: calls wait for one of `workers`, then hold it for a service
    time drawn from `distribution` (mean `service_time_s`) without using the CPU."""

    workers: int = Field(default=0, ge=0, le=10_000, description="[0, 10000]; 0 = no pool")
    service_time_s: float = Field(
        default=0.02, gt=0, le=60, description="(0, 60]: mean service time per call"
    )
    distribution: Literal["fixed", "exponential", "lognormal"] = "fixed"
    sigma: float = Field(default=0.5, gt=0, le=5, description="(0, 5]: lognormal: sigma of the log")
    seed: int | None = Field(
        default=None,
        ge=0,
        le=999_999,
        description="[0, 999999]: the draws' seed; null: random",
    )
    max_queue: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="[0, 100000]; 0 = unbounded. Calls waiting for a worker at most (abandoned "
        "work included): one more is refused at once, RESOURCE_EXHAUSTED without pushback, as a "
        "database at its connection limit answers",
    )
    abandoned: Literal["drop", "run"] = Field(
        default="drop",
        description="drop: a call whose caller gave up (cancelled, past its deadline) leaves "
        "the queue, and its worker is free at once; run: the pool never hears of it, as a "
        "database running a query whose client went away: it still takes a worker for its "
        "service time when its turn comes",
    )


class ServerPolicy(_Model):
    """Server-side admission (unary calls and streams have separate limits, so streams can
    never take the places of unary calls; mesh.resilience.admission_policy for the unary
    calls' limit algorithm, queue and declared pool) and the time limits of server streams."""

    max_in_flight: int = Field(
        default=64, ge=0, le=100_000, description="[0, 100000]: unary calls at once; 0 = no limit"
    )
    max_streams_in_flight: int = Field(
        default=16, ge=0, le=100_000, description="[0, 100000]: streams at once; 0 = no limit"
    )
    stream_write_timeout_s: float = Field(
        default=5.0, ge=0, le=300, description="[0, 300]: a reader must take each message in"
    )
    stream_deadline_s: float = Field(
        default=30.0, ge=0, le=3600, description="[0, 3600]: streams with no client deadline"
    )
    shed_pushback_ms: int = Field(
        default=200, ge=0, le=60_000, description="[0, 60000]: grpc-retry-pushback-ms when shed"
    )
    limit: LimitPolicy = Field(default_factory=LimitPolicy)
    queue: QueuePolicy = Field(default_factory=QueuePolicy)
    intake: IntakePolicy = Field(default_factory=IntakePolicy)
    pool: PoolPolicy = Field(default_factory=PoolPolicy)
