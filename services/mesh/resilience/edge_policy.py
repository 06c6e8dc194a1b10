"""What protects one dependency edge (an EdgePolicy): the typed, validated settings of each
client-side strategy, with the range of every number written beside its field and the
cross-field rules the pipeline needs to work (see each model's validator).

The mesh's policy file (mesh.policy) holds one EdgePolicy per edge, merged over its defaults.
"""

from __future__ import annotations

from typing import Literal

import grpc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mesh import safe_yaml
from mesh.resilience.hedging_options import HedgingOptions
from mesh.resilience.outlier_policy import OutlierPolicy
from mesh.resilience.throttle_policy import ThrottlePolicy
from mesh.resilience.xds_policy import XdsPolicy


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _at_most(model: BaseModel, low: str, high: str, *, strict: bool = False, why: str = "") -> None:
    """The cross-field rule `low <= high` (`low < high` when strict), naming both fields."""
    lo, hi = getattr(model, low), getattr(model, high)
    if lo > hi or (strict and lo == hi):
        raise ValueError(f"{low} ({lo}) must be {'<' if strict else '<='} {high} ({hi}){why}")


class DeadlinePolicy(_Model):
    """Time limits of one logical call; the inbound deadline and caller's timeout cap both.

    Rule: min_attempt_s < attempt_s <= total_s. An attempt needs more than min_attempt_s left
    to start, so with min_attempt_s >= total_s no call ever starts; and an attempt_s longer than
    the total makes every timeout the caller's deadline rather than the attempt's own, which
    the retry and the breaker then ignore (a hung dependency would never open the breaker).
    """

    total_s: float = Field(
        default=1.0, ge=0.001, le=300, description="[0.001, 300]: attempts plus backoff sleeps"
    )
    attempt_s: float = Field(
        default=0.3,
        ge=0.001,
        le=300,
        description="[0.001, 300], <= total_s: one attempt's deadline",
    )
    min_attempt_s: float = Field(
        default=0.005, ge=0, le=10, description="[0, 10], < attempt_s: never start with less left"
    )

    @model_validator(mode="after")
    def _attempt_fits(self) -> DeadlinePolicy:
        _at_most(self, "attempt_s", "total_s", why=": an attempt must fit in the call's budget")
        _at_most(self, "min_attempt_s", "attempt_s", strict=True)
        return self


class RetryBudgetPolicy(_Model):
    """gRFC A6 retry throttling: a token bucket per dependency."""

    enabled: bool = True
    max_tokens: float = Field(
        default=10.0, gt=0, le=1000, description="(0, 1000]: bucket size; retries stop at half"
    )
    token_ratio: float = Field(
        default=0.1, gt=0, le=1, description="(0, 1]: tokens a success gives back"
    )


class RetryPolicy(_Model):
    """Retries of transient failures with full-jitter exponential backoff (base <= cap)."""

    max_attempts: int = Field(
        default=3, ge=1, le=10, description="[1, 10]: attempts per call; 1 = no retries"
    )
    base_backoff_s: float = Field(
        default=0.05, gt=0, le=60, description="(0, 60]: first backoff cap (doubles)"
    )
    max_backoff_s: float = Field(
        default=0.5, gt=0, le=60, description="(0, 60], >= base_backoff_s: largest backoff cap"
    )
    budget: RetryBudgetPolicy = Field(default_factory=RetryBudgetPolicy)

    @model_validator(mode="after")
    def _caps_ordered(self) -> RetryPolicy:
        _at_most(self, "base_backoff_s", "max_backoff_s")
        return self


class BreakerPolicy(_Model):
    """Circuit breaker: consecutive-failure and failure-rate triggers, probes when half-open.

    Rules: min_calls <= window_size (else the rate is never judged) and half_open_successes <=
    half_open_max_probes (else a half-open breaker can never close).
    """

    enabled: bool = True
    scope: Literal["method", "dependency"] = Field(
        default="method", description="one breaker per ..."
    )
    consecutive_failures: int = Field(
        default=5, ge=0, le=1000, description="[0, 1000]: opens after N in a row; 0 = off"
    )
    failure_rate: float | None = Field(
        default=0.5, gt=0, le=1, description="(0, 1] or null (off): opens at >= rate"
    )
    window_size: int = Field(
        default=20, ge=1, le=1000, description="[1, 1000]: the rate is over the last N calls"
    )
    min_calls: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="[1, 1000], <= window_size: no rate decision before N calls",
    )
    open_s: float = Field(
        default=2.0, gt=0, le=300, description="(0, 300]: time open before the first probe"
    )
    half_open_max_probes: int = Field(
        default=1, ge=1, le=100, description="[1, 100]: probes admitted while half-open"
    )
    half_open_successes: int = Field(
        default=1,
        ge=1,
        le=100,
        description="[1, 100], <= half_open_max_probes: successes that close it",
    )

    @model_validator(mode="after")
    def _probes_can_close(self) -> BreakerPolicy:
        _at_most(self, "half_open_successes", "half_open_max_probes", why=", or it never closes")
        _at_most(self, "min_calls", "window_size", why=", or the rate is never judged")
        return self


class BulkheadPolicy(_Model):
    """A concurrency limit per dependency: reject at once, or queue for a bounded wait."""

    enabled: bool = True
    max_concurrent: int = Field(
        default=32, ge=1, le=10_000, description="[1, 10000]: calls in flight to the dependency"
    )
    mode: Literal["reject", "queue"] = "reject"
    max_wait_s: float = Field(
        default=0.05, ge=0, le=60, description="[0, 60]: queue mode: longest wait for a slot"
    )
    pool: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="edges of one caller naming the same pool share one limit, so their "
        "bulkhead sections must be equal (the anti-pattern seed 003 warns about; here so an "
        "experiment can show it)",
    )


class NativeRetryPolicy(_Model):
    """gRPC's own retryPolicy + retryThrottling (service config) instead of our retry strategy.

    Off by default: the interceptor is the one retry owner. An experiment turns it on to
    measure gRPC's built-in retries beside ours; then our retry strategy must be off. The
    ranges are gRPC's (gRFC A6), tighter where gRPC would reject the whole service config.
    """

    enabled: bool = False
    max_attempts: int = Field(default=3, ge=2, le=5, description="[2, 5]: gRPC caps it at 5")
    initial_backoff_s: float = Field(
        default=0.05, ge=0.001, le=60, description="[0.001, 60] (kept to microseconds)"
    )
    max_backoff_s: float = Field(
        default=0.5, ge=0.001, le=60, description="[0.001, 60], >= initial_backoff_s"
    )
    backoff_multiplier: float = Field(default=2.0, gt=0, le=10, description="(0, 10]")
    retryable_codes: list[str] = Field(
        default=["UNAVAILABLE"], min_length=1, max_length=16, description="gRPC code names"
    )
    max_tokens: int = Field(default=10, gt=0, le=1000, description="(0, 1000]: retryThrottling")
    token_ratio: float = Field(default=0.1, gt=0, le=1, description="(0, 1]: retryThrottling")

    @field_validator("initial_backoff_s", "max_backoff_s")
    @classmethod
    def _as_duration(cls, value: float) -> float:
        # The service config spells durations "<decimal>s"; 1e-05 or 17 digits would void it.
        return round(value, 6)

    @field_validator("retryable_codes")
    @classmethod
    def _known_codes(cls, codes: list[str]) -> list[str]:
        names = [c.upper() for c in codes]
        for name in names:
            if name not in grpc.StatusCode.__members__ or name == "OK":
                raise ValueError(f"{safe_yaml.short(name)!r} is not a gRPC error code name")
        return names

    @model_validator(mode="after")
    def _caps_ordered(self) -> NativeRetryPolicy:
        _at_most(self, "initial_backoff_s", "max_backoff_s")
        return self


PipelineOrder = Literal["retry-outside-breaker", "breaker-outside-retry"]
"""Where retry sits relative to the breaker (mesh.resilience.pipeline.ORDERS)."""


class EdgePolicy(_Model):
    """Everything that protects one dependency edge."""

    order: PipelineOrder = Field(
        default="retry-outside-breaker",
        description="retry-outside-breaker: every attempt counts toward the breaker and an "
        "open breaker stops the retries; breaker-outside-retry (seed 003's order): a logical "
        "call counts once, its retries run on even if the breaker opens meanwhile",
    )

    deadline: DeadlinePolicy = Field(default_factory=DeadlinePolicy)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    breaker: BreakerPolicy = Field(default_factory=BreakerPolicy)
    bulkhead: BulkheadPolicy = Field(default_factory=BulkheadPolicy)
    native_retry: NativeRetryPolicy = Field(default_factory=NativeRetryPolicy)
    hedging: HedgingOptions = Field(
        default_factory=HedgingOptions,
        description="gRFC A6 hedging for the methods it names (all, if none): they hedge in "
        "place of retrying (mesh.resilience.hedging_options)",
    )
    throttle: ThrottlePolicy = Field(default_factory=ThrottlePolicy)
    outlier: OutlierPolicy = Field(default_factory=OutlierPolicy)
    xds: XdsPolicy = Field(
        default_factory=XdsPolicy, description="what gRPC's xDS client does (mesh up --xds)"
    )

    @model_validator(mode="after")
    def _one_retry_owner(self) -> EdgePolicy:
        if self.native_retry.enabled and self.retry.max_attempts > 1:
            raise ValueError(
                "native_retry.enabled needs retry.max_attempts: 1 (one retry owner, or "
                "attempts multiply unseen)"
            )
        if self.xds.retry is not None and (
            self.retry.max_attempts > 1 or self.native_retry.enabled
        ):
            raise ValueError(
                "xds.retry needs retry.max_attempts: 1 and native_retry off (one retry owner, "
                "or attempts multiply unseen)"
            )
        if self.hedging.enabled and (self.native_retry.enabled or self.xds.retry is not None):
            raise ValueError(
                "hedging.enabled needs native_retry off and no xds.retry (gRPC's retries would "
                "multiply each hedge's attempts unseen)"
            )
        return self
