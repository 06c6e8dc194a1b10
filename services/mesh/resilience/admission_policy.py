"""A server's admission settings (the server policy's `limit:`, `queue:` and `pool:` sections).

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


class LimitPolicy(_Model):
    """Which concurrency limit admits unary calls (streams keep `max_streams_in_flight`)."""

    algorithm: Literal["static", "vegas", "gradient2"] = Field(
        default="static",
        description="static: max_in_flight (today's); vegas / gradient2: adaptive, from RTTs",
    )
    vegas: VegasPolicy = Field(default_factory=VegasPolicy)
    gradient2: Gradient2Policy = Field(default_factory=Gradient2Policy)
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
        "expected service time (an average of recent RTTs, first the pool's service time)",
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
        if self.codel_target_s >= self.codel_interval_s:
            raise ValueError(
                f"codel_target_s ({self.codel_target_s}) must be < codel_interval_s "
                f"({self.codel_interval_s})"
            )
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
