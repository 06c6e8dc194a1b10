"""A server's admission settings: the ServerPolicy, and its `limit:`, `queue:` and `intake:`
sections, as plain frozen dataclasses (grpc_aio_resilience.options).

`limit.algorithm` picks the concurrency limit: `static` is `max_in_flight`, `vegas`,
`gradient2` and `aimd` follow Netflix concurrency-limits 0.5.4 with its builders' defaults.
`queue` says what a call finding the limit reached does (`none`, the default: refused at once).
`expected_service_s` declares how long a call is expected to take before any has been timed
(a backend bounded by N workers, say), for deadline-aware admission.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, TypeVar

from grpc_aio_resilience.options import at_most, check, option
from grpc_aio_resilience.rejection import PidPolicy


@dataclass(frozen=True, slots=True)
class VegasPolicy:
    """`VegasLimit.Builder`'s settings and defaults (alpha 3 and beta 6 x log10 of the limit)."""

    initial_limit: int = option(20, ge=1, le=100_000, doc="the limit before any sample")
    max_concurrency: int = option(1000, ge=1, le=100_000, doc="the limit's ceiling")
    smoothing: float = option(1.0, gt=0, le=1, doc="share of a new limit")
    probe_multiplier: int = option(
        30,
        ge=1,
        le=10_000,
        doc="no-load RTT re-measured after about jitter x this x limit samples",
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True, slots=True)
class Gradient2Policy:
    """`Gradient2Limit.Builder`'s settings and defaults."""

    initial_limit: int = option(20, ge=1, le=100_000, doc="the limit before any sample")
    min_limit: int = option(20, ge=1, le=100_000, doc="floor; at most max_concurrency")
    max_concurrency: int = option(200, ge=1, le=100_000, doc="the limit's ceiling")
    smoothing: float = option(0.2, gt=0, le=1, doc="share of a new limit")
    queue_size: int = option(4, ge=0, le=10_000, doc="allowance above the gradient's limit")
    long_window: int = option(600, ge=1, le=100_000, doc="samples in the long RTT average")
    rtt_tolerance: float = option(1.5, ge=1, le=100, doc="long/short RTT ratio tolerated")

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "min_limit", "max_concurrency")


@dataclass(frozen=True, slots=True)
class AimdPolicy:
    """`AIMDLimit.Builder`'s settings and defaults: one more place per sample while at least
    half the limit is in use, the limit x backoff_ratio on a drop or a call slower than
    timeout_s (loss-based: it reacts to refusals and timeouts, not to a slower RTT)."""

    initial_limit: int = option(20, ge=1, le=100_000, doc="the limit before any sample")
    min_limit: int = option(20, ge=1, le=100_000, doc="floor; at most max_limit")
    max_limit: int = option(200, ge=1, le=100_000, doc="the limit's ceiling")
    backoff_ratio: float = option(0.9, ge=0.5, lt=1, doc="share of the limit kept on a drop")
    timeout_s: float = option(5.0, gt=0, le=3600, doc="a slower call counts as a drop")

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "min_limit", "max_limit")


@dataclass(frozen=True, slots=True)
class WindowPolicy:
    """`WindowedLimit.Builder`'s settings and defaults: the adaptive limit gets one sample per
    window (the window's mean RTT), as Netflix's README wires Gradient2 into a gRPC server."""

    enabled: bool = option(
        False,
        doc="false: every call's RTT is a sample (the limiter's own default); true: "
        "one aggregated sample per window, so the long average moves per window, not per call",
    )
    min_window_s: float = option(1.0, ge=0.1, le=60, doc="shortest window; at most max_window_s")
    max_window_s: float = option(1.0, ge=0.1, le=60, doc="longest window")
    window_size: int = option(10, ge=10, le=100_000, doc="samples a window needs")
    min_rtt_threshold_s: float = option(100e-6, ge=0, le=1, doc="faster calls are no sample")

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "min_window_s", "max_window_s")


@dataclass(frozen=True, slots=True)
class LimitPolicy:
    """Which concurrency limit admits unary calls (streams keep `max_streams_in_flight`)."""

    algorithm: Literal["static", "vegas", "gradient2", "aimd", "pid"] = option(
        "static",
        doc="static (default): max_in_flight; vegas / gradient2: adaptive, from RTTs; aimd: "
        "adaptive, from drops and timeouts; pid: max_in_flight, and a share of arrivals "
        "refused from the queueing delay (Cinnamon)",
    )
    vegas: VegasPolicy = option(factory=VegasPolicy)
    gradient2: Gradient2Policy = option(factory=Gradient2Policy)
    aimd: AimdPolicy = option(factory=AimdPolicy)
    pid: PidPolicy = option(factory=PidPolicy)
    window: WindowPolicy = option(factory=WindowPolicy)
    critical_reserve: float = option(
        0.1,
        ge=0,
        le=0.9,
        doc="share of the limit (rounded up) only CRITICAL and CRITICAL_PLUS "
        "calls may take; SHEDDABLE* calls are refused first",
    )
    deadline_aware: bool = option(
        False,
        doc="refuse at once a call whose remaining deadline is shorter than the "
        "time it is expected to take (an average of recent RTTs; with nothing in flight, of "
        "calls admitted with nobody ahead; both first the server's expected_service_s)",
    )

    def __post_init__(self) -> None:
        check(self)

    def fitted_to(self, concurrency: int | None) -> LimitPolicy:
        """These settings for a backend that serves `concurrency` calls at once (None: as
        they are). The builders' initial and minimum limits (20) assume a backend that holds
        20 calls; on one that holds fewer, a floor of 20 admits calls that queue in it for
        20 / concurrency service times, past their callers' deadlines, and the limit never
        binds. Left at their defaults, they become the declared concurrency (never more
        than the default); set, they stay. Admission adds waiting places for calls whose
        deadlines hold the wait (Admission.queued_s)."""
        if not concurrency:
            return self
        return dataclasses.replace(
            self,
            vegas=_capped(self.vegas, concurrency, "initial_limit"),
            gradient2=_capped(self.gradient2, concurrency, "initial_limit", "min_limit"),
            aimd=_capped(self.aimd, concurrency, "initial_limit", "min_limit"),
        )


_Options = TypeVar("_Options", VegasPolicy, Gradient2Policy, AimdPolicy)


def _capped(options: _Options, ceiling: int, *names: str) -> _Options:
    """`options` with each of `names` still at its default lowered to `ceiling`."""
    defaults = {f.name: f.default for f in dataclasses.fields(options)}
    lowered = {
        name: ceiling
        for name in names
        if isinstance(default := defaults[name], int)
        and getattr(options, name) == default > ceiling
    }
    return dataclasses.replace(options, **lowered) if lowered else options


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """Where a call waits for a place when the limit is reached, and for how long."""

    discipline: Literal["none", "fifo", "codel", "adaptive_lifo"] = option(
        "none",
        doc="none (default): refuse at once; fifo: oldest first, wait <= max_wait_s; "
        "codel: oldest first, wait <= codel_interval_s, or codel_target_s once the queue has "
        "not been empty for codel_interval_s; adaptive_lifo: newest first while the queue "
        "has not been empty for codel_interval_s, else oldest first, wait <= max_wait_s",
    )
    max_length: int = option(64, ge=1, le=100_000, doc="waiters")
    max_wait_s: float = option(0.1, gt=0, le=60, doc="fifo and lifo: longest wait")
    codel_target_s: float = option(0.005, gt=0, le=10, doc="CoDel's M; below codel_interval_s")
    codel_interval_s: float = option(0.1, gt=0, le=60, doc="CoDel's N")

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "codel_target_s", "codel_interval_s", strict=True)


@dataclass(frozen=True, slots=True)
class IntakePolicy:
    """The wait in front of admission: grpc core queues the calls a server has not taken
    yet (grpc.aio takes them one at a time on the event loop), where no limit inside the
    process sees them. A caller's `resilience-timeout-ms` (its deadline as it sent the call,
    like Envoy's x-envoy-expected-rq-timeout-ms) less what is left of it at admission is that
    wait (plus the hop). CoDel's rule ("Fail at Scale") on it: a call that waited more than N
    is refused, or more than M once every call for the last N has waited more than M."""

    discipline: Literal["none", "codel"] = option(
        "none",
        doc="none (default): the wait is not looked at; codel: a call that waited "
        "longer than codel_interval_s (N) before admission is refused, or longer than "
        "codel_target_s (M) once every call for N has waited longer than M",
    )
    codel_target_s: float = option(0.005, gt=0, le=10, doc="CoDel's M; below codel_interval_s")
    codel_interval_s: float = option(0.1, gt=0, le=60, doc="CoDel's N")

    def __post_init__(self) -> None:
        check(self)
        at_most(self, "codel_target_s", "codel_interval_s", strict=True)


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    """Server-side admission (unary calls and streams have separate limits, so streams can
    never take the places of unary calls; grpc_aio_resilience.admission_policy for the unary
    calls' limit algorithm and queue) and the time limits of server streams."""

    max_in_flight: int = option(64, ge=0, le=100_000, doc="unary calls at once; 0 = no limit")
    max_streams_in_flight: int = option(16, ge=0, le=100_000, doc="streams at once; 0 = no limit")
    stream_write_timeout_s: float = option(
        5.0, ge=0, le=300, doc="a reader must take each message in"
    )
    stream_deadline_s: float = option(30.0, ge=0, le=3600, doc="streams with no client deadline")
    shed_pushback_ms: int = option(200, ge=0, le=60_000, doc="grpc-retry-pushback-ms when shed")
    limit: LimitPolicy = option(factory=LimitPolicy)
    queue: QueuePolicy = option(factory=QueuePolicy)
    intake: IntakePolicy = option(factory=IntakePolicy)
    expected_service_s: float | None = option(
        None,
        gt=0,
        le=60,
        doc="how long a call is expected to take before any has been timed (a backend "
        "bounded by N workers: its mean service time); deadline-aware admission starts from "
        "it. null: from the first calls' times",
    )
    backend_concurrency: int | None = option(
        None,
        ge=1,
        le=100_000,
        doc="how many calls the backend serves at once (N workers, a connection pool's "
        "size): the adaptive limits' default initial and minimum limits become it (never "
        "above 20), and a call whose deadline holds the wait may queue for a worker, in up "
        "to 2 places beyond the workers (with expected_service_s); the pid rejector, too, "
        "refuses a call whose deadline cannot hold the wait. null: not declared",
    )

    def __post_init__(self) -> None:
        check(self)

    def declared_service_s(self) -> float | None:
        """The expected service time admission starts from (a subclass may derive it from
        what it declares, such as a bounded worker pool)."""
        return self.expected_service_s

    def declared_concurrency(self) -> int | None:
        """How many calls the backend behind this server serves at once, if declared
        (`backend_concurrency`; a subclass may derive it from a bounded worker pool): the
        adaptive limits' defaults fit it (`LimitPolicy.fitted_to`) and admission counts the
        calls ahead (grpc_aio_resilience.admission)."""
        return self.backend_concurrency
