"""TCP Vegas applied to concurrency (the reference's `VegasLimit`): estimate the queue from how
far the RTT sits above the no-load RTT, and move the limit to keep that queue small."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from grpc_aio_resilience.limits.base import check_positive, log10_root, to_ns


@dataclass(frozen=True)
class VegasSettings:
    """`VegasLimit.Builder`'s settings and defaults (its deprecated tolerance and backoffRatio
    do nothing there and are left out here)."""

    initial_limit: int = 20
    max_concurrency: int = 1000
    # 1.0 takes each new limit whole; below 1 blends it with the old one.
    smoothing: float = 1.0
    # The no-load RTT is re-measured after about jitter x probe_multiplier x limit samples.
    probe_multiplier: int = 30
    # Fixed alpha/beta (the builder's alpha(int)/beta(int)); None: 3 and 6 x log10_root(limit).
    alpha: int | None = None
    beta: int | None = None

    def __post_init__(self) -> None:
        check_positive("initial_limit", self.initial_limit)
        check_positive("max_concurrency", self.max_concurrency)
        check_positive("probe_multiplier", self.probe_multiplier)
        if not 0.0 < self.smoothing <= 1.0:
            raise ValueError(f"smoothing must be in (0, 1], got {self.smoothing}")


def uniform_jitter(rng: random.Random | None = None) -> Callable[[], float]:
    """Draws in [0.5, 1), as the reference's `ThreadLocalRandom.nextDouble(0.5, 1)`."""
    source = rng or random.Random()
    return lambda: 0.5 + 0.5 * source.random()


class VegasLimit:
    """Per sample, as `VegasLimit._update` does it (times in whole nanoseconds like the Java):

    1. Probe: every sample counts; once `jitter x probe_multiplier x estimate <= count`, this
       sample's RTT becomes the no-load RTT, the count restarts and a new jitter is drawn (the
       reference draws it from ThreadLocalRandom; here `jitter` is injectable so tests pin it).
    2. The first sample, and any faster than the no-load RTT, only set the no-load RTT.
    3. queue = ceil(estimate x (1 - rtt_noload / rtt)). A drop: estimate - log10_root.
       App-limited (`inflight * 2 < estimate`): unchanged. queue <= log10_root: + beta
       (no queueing: grow fast); queue < alpha: + log10_root; queue > beta: - log10_root;
       otherwise unchanged.
    4. The new estimate is clamped to [1, max_concurrency], then smoothed:
       `(1 - smoothing) x old + smoothing x new`. The limit is the estimate truncated.

    An RTT <= 0 is an error, as in the reference (ValueError).
    """

    def __init__(
        self, settings: VegasSettings | None = None, jitter: Callable[[], float] | None = None
    ) -> None:
        self.settings = settings or VegasSettings()
        self._jitter = jitter or uniform_jitter()
        self._estimate = float(self.settings.initial_limit)
        self._limit = self.settings.initial_limit
        self._rtt_noload_ns = 0
        self._probe_count = 0
        self._probe_jitter = self._jitter()

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def rtt_noload_s(self) -> float:
        """The no-load RTT the queue is measured against (0 before the first sample)."""
        return self._rtt_noload_ns / 1e9

    def on_sample(self, start_s: float, rtt_s: float, inflight: int, dropped: bool) -> None:
        del start_s
        rtt_ns = to_ns(rtt_s)
        if rtt_ns <= 0:
            raise ValueError(f"rtt must be > 0, got {rtt_s} s")
        self._probe_count += 1
        multiplier = self.settings.probe_multiplier
        if self._probe_jitter * multiplier * self._estimate <= self._probe_count:
            self._probe_jitter = self._jitter()
            self._probe_count = 0
            self._rtt_noload_ns = rtt_ns
        elif self._rtt_noload_ns == 0 or rtt_ns < self._rtt_noload_ns:
            self._rtt_noload_ns = rtt_ns
        else:
            self._estimate = self._next_estimate(rtt_ns, inflight, dropped)
        self._limit = int(self._estimate)

    def _next_estimate(self, rtt_ns: int, inflight: int, dropped: bool) -> float:
        estimate = self._estimate
        current = int(estimate)
        step = log10_root(current)
        queue = math.ceil(estimate * (1 - self._rtt_noload_ns / rtt_ns))
        if dropped:
            target = estimate - step
        elif inflight * 2 < estimate:
            return estimate
        else:
            alpha = self.settings.alpha if self.settings.alpha is not None else 3 * step
            beta = self.settings.beta if self.settings.beta is not None else 6 * step
            if queue <= step:
                target = estimate + beta
            elif queue < alpha:
                target = estimate + step
            elif queue > beta:
                target = estimate - step
            else:
                return estimate
        target = max(1.0, min(float(self.settings.max_concurrency), target))
        smoothing = self.settings.smoothing
        return (1 - smoothing) * estimate + smoothing * target

    def __repr__(self) -> str:
        return f"VegasLimit(limit={self._limit}, rtt_noload_s={self.rtt_noload_s})"
