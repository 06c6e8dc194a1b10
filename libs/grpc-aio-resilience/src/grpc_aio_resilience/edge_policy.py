"""What protects one dependency edge (an EdgePolicy): the settings of each client-side
strategy as plain frozen dataclasses (grpc_aio_resilience.options), with the range of every
number beside its field and the cross-field rules the pipeline needs to work (each class's
`__post_init__`).

    EdgePolicy(retry=RetryPolicy(max_attempts=2), deadline=DeadlinePolicy(total_s=0.5))
    from_dict(EdgePolicy, {"retry": {"max_attempts": 2}})   # from YAML or JSON data
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from grpc_aio_resilience.hedging_options import HedgingOptions
from grpc_aio_resilience.options import OptionError, at_most, check, code_names, option
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.throttle_policy import ThrottlePolicy
from grpc_aio_resilience.xds_policy import XdsPolicy


@dataclass(frozen=True, slots=True)
class DeadlinePolicy:
    """Time limits of one logical call; the inbound deadline and caller's timeout cap both.

    Rule: min_attempt_s < attempt_s <= total_s. An attempt needs more than min_attempt_s left
    to start, so with min_attempt_s >= total_s no call ever starts; and an attempt_s longer than
    the total makes every timeout the caller's deadline rather than the attempt's own, which
    the retry and the breaker then ignore (a hung dependency would never open the breaker).
    """

    total_s: float = option(1.0, ge=0.001, le=300, doc="attempts plus backoff sleeps")
    attempt_s: float = option(0.3, ge=0.001, le=300, doc="one attempt's deadline; at most total_s")
    min_attempt_s: float = option(
        0.005, ge=0, le=10, doc="never start an attempt with less left; below attempt_s"
    )

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "attempt_s", "total_s", why=": an attempt must fit in the call's budget")
        at_most(self, "min_attempt_s", "attempt_s", strict=True)


@dataclass(frozen=True, slots=True)
class RetryBudgetPolicy:
    """gRFC A6 retry throttling: a token bucket per dependency."""

    enabled: bool = option(True, doc="off: retries are limited by max_attempts alone")
    max_tokens: float = option(10.0, gt=0, le=1000, doc="bucket size; retries stop at half")
    token_ratio: float = option(0.1, gt=0, le=1, doc="tokens a success gives back")

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries of transient failures with full-jitter exponential backoff (base <= cap)."""

    max_attempts: int = option(3, ge=1, le=10, doc="attempts per call; 1 = no retries")
    base_backoff_s: float = option(0.05, gt=0, le=60, doc="first backoff cap (doubles)")
    max_backoff_s: float = option(
        0.5, gt=0, le=60, doc="largest backoff cap; at least base_backoff_s"
    )
    budget: RetryBudgetPolicy = option(factory=RetryBudgetPolicy, doc="the retry budget")

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "base_backoff_s", "max_backoff_s")


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """Circuit breaker: consecutive-failure and failure-rate triggers, probes when half-open.

    Rules: min_calls <= window_size (else the rate is never judged) and half_open_successes <=
    half_open_max_probes (else a half-open breaker can never close).
    """

    enabled: bool = option(True, doc="off: no breaker")
    scope: Literal["method", "dependency"] = option(
        "method", doc="one breaker per method, or one for the whole dependency"
    )
    consecutive_failures: int = option(
        5, ge=0, le=1000, doc="opens after N failures in a row; 0 = off"
    )
    failure_rate: float | None = option(0.5, gt=0, le=1, doc="opens at >= rate; null = off")
    window_size: int = option(20, ge=1, le=1000, doc="the rate is over the last N calls")
    min_calls: int = option(
        10, ge=1, le=1000, doc="no rate decision before N calls; at most window_size"
    )
    open_s: float = option(2.0, gt=0, le=300, doc="time open before the first probe")
    half_open_max_probes: int = option(1, ge=1, le=100, doc="probes admitted while half-open")
    half_open_successes: int = option(
        1, ge=1, le=100, doc="successes that close it; at most half_open_max_probes"
    )

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "half_open_successes", "half_open_max_probes", why=", or it never closes")
        at_most(self, "min_calls", "window_size", why=", or the rate is never judged")


@dataclass(frozen=True, slots=True)
class BulkheadPolicy:
    """A concurrency limit per dependency: reject at once, or queue for a bounded wait."""

    enabled: bool = option(True, doc="off: no limit")
    max_concurrent: int = option(32, ge=1, le=10_000, doc="calls in flight to the dependency")
    mode: Literal["reject", "queue"] = option(
        "reject", doc="reject: refuse at once when full; queue: wait up to max_wait_s"
    )
    max_wait_s: float = option(0.05, ge=0, le=60, doc="queue mode: longest wait for a slot")
    pool: str | None = option(
        None,
        min_length=1,
        max_length=64,
        doc="a name: pipelines built with one bulkhead_pools dict that name the same pool "
        "share one limit (a shared pool lets one slow dependency take every slot: the "
        "anti-pattern bulkheads exist to prevent; use it to show that, or for dependencies "
        "that truly share a resource)",
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True, slots=True)
class NativeRetryPolicy:
    """gRPC's own retryPolicy + retryThrottling (service config) instead of our retry strategy.

    Off by default: the interceptor is the one retry owner. Turn it on to measure gRPC's
    built-in retries beside ours; then our retry strategy must be off. The
    ranges are gRPC's (gRFC A6), tighter where gRPC would reject the whole service config.
    """

    enabled: bool = option(False, doc="on: gRPC retries (then retry.max_attempts must be 1)")
    max_attempts: int = option(3, ge=2, le=5, doc="gRPC caps it at 5")
    initial_backoff_s: float = option(0.05, ge=0.001, le=60, doc="kept to microseconds")
    max_backoff_s: float = option(
        0.5, ge=0.001, le=60, doc="kept to microseconds; at least initial_backoff_s"
    )
    backoff_multiplier: float = option(2.0, gt=0, le=10, doc="each backoff cap is this x the last")
    retryable_codes: tuple[str, ...] = option(
        ("UNAVAILABLE",), min_length=1, max_length=16, doc="gRPC code names"
    )
    max_tokens: int = option(10, gt=0, le=1000, doc="retryThrottling's maxTokens")
    token_ratio: float = option(0.1, gt=0, le=1, doc="retryThrottling's tokenRatio")

    def __post_init__(self) -> None:
        check(self)
        # The service config spells durations "<decimal>s"; 1e-05 or 17 digits would void it.
        object.__setattr__(self, "initial_backoff_s", round(self.initial_backoff_s, 6))
        object.__setattr__(self, "max_backoff_s", round(self.max_backoff_s, 6))
        code_names(self, "retryable_codes")
        at_most(self, "initial_backoff_s", "max_backoff_s")


PipelineOrder = Literal["retry-outside-breaker", "breaker-outside-retry"]
"""Where retry sits relative to the breaker (grpc_aio_resilience.pipeline.ORDERS)."""


@dataclass(frozen=True, slots=True)
class EdgePolicy:
    """Everything that protects one dependency edge."""

    order: PipelineOrder = option(
        "retry-outside-breaker",
        doc="retry-outside-breaker: every attempt counts toward the breaker and an "
        "open breaker stops the retries; breaker-outside-retry: a logical "
        "call counts once, its retries run on even if the breaker opens meanwhile",
    )
    deadline: DeadlinePolicy = option(factory=DeadlinePolicy)
    retry: RetryPolicy = option(factory=RetryPolicy)
    breaker: BreakerPolicy = option(factory=BreakerPolicy)
    bulkhead: BulkheadPolicy = option(factory=BulkheadPolicy)
    native_retry: NativeRetryPolicy = option(factory=NativeRetryPolicy)
    hedging: HedgingOptions = option(
        factory=HedgingOptions,
        doc="gRFC A6 hedging for the methods it names (all, if none): they hedge in "
        "place of retrying (grpc_aio_resilience.hedging_options)",
    )
    throttle: ThrottlePolicy = option(factory=ThrottlePolicy)
    outlier: OutlierPolicy = option(factory=OutlierPolicy)
    xds: XdsPolicy = option(factory=XdsPolicy, doc="what gRPC's xDS client does (mesh up --xds)")

    def __post_init__(self) -> None:
        check(self)
        self._one_retry_owner()

    def _one_retry_owner(self) -> None:
        if self.native_retry.enabled and self.retry.max_attempts > 1:
            raise OptionError(
                "",
                "native_retry.enabled needs retry.max_attempts: 1 (one retry owner, or "
                "attempts multiply unseen)",
            )
        if self.xds.retry is not None and (
            self.retry.max_attempts > 1 or self.native_retry.enabled
        ):
            raise OptionError(
                "",
                "xds.retry needs retry.max_attempts: 1 and native_retry off (one retry owner, "
                "or attempts multiply unseen)",
            )
        if self.hedging.enabled and (self.native_retry.enabled or self.xds.retry is not None):
            raise OptionError(
                "",
                "hedging.enabled needs native_retry off and no xds.retry (gRPC's retries would "
                "multiply each hedge's attempts unseen)",
            )
