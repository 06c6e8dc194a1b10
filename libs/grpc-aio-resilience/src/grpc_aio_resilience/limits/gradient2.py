"""Gradient of a long-run average RTT against the current RTT (the reference's
`Gradient2Limit`): the limit shrinks as latency diverges from its long-run level, and a fixed
queue allowance lets it grow back while latency holds."""

from __future__ import annotations

from dataclasses import dataclass

from grpc_aio_resilience.limits.base import check_positive, to_ns


@dataclass(frozen=True)
class Gradient2Settings:
    """`Gradient2Limit.Builder`'s settings and defaults (its deprecated shortWindow and
    driftMultiplier do nothing there and are left out here)."""

    initial_limit: int = 20
    min_limit: int = 20
    max_concurrency: int = 200
    # How much of each new limit is taken (the rest is the old one).
    smoothing: float = 0.2
    # Calls allowed to queue on top of what the gradient keeps: the builder's constant 4.
    queue_size: int = 4
    # Samples in the long RTT average (an exponential average, factor 2 / (n + 1)).
    long_window: int = 600
    # How far the RTT may exceed the long average before the limit shrinks (>= 1.0).
    rtt_tolerance: float = 1.5

    def __post_init__(self) -> None:
        if self.rtt_tolerance < 1.0:
            raise ValueError(f"rtt_tolerance must be >= 1.0, got {self.rtt_tolerance}")
        if not 0.0 < self.smoothing <= 1.0:
            raise ValueError(f"smoothing must be in (0, 1], got {self.smoothing}")
        check_positive("long_window", self.long_window)
        check_positive("initial_limit", self.initial_limit)


class ExpAverage:
    """The reference's `ExpAvgMeasurement(window, warmup)`: a plain mean of the first `warmup`
    samples, then `value x (1 - f) + sample x f` with f = 2 / (window + 1)."""

    def __init__(self, window: int, warmup: int) -> None:
        self._factor = 2.0 / (window + 1)
        self._warmup = warmup
        self._count = 0
        self._sum = 0.0
        self.value = 0.0

    def add(self, sample: float) -> float:
        if self._count < self._warmup:
            self._count += 1
            self._sum += sample
            self.value = self._sum / self._count
        else:
            self.value = self.value * (1 - self._factor) + sample * self._factor
        return self.value


class Gradient2Limit:
    """Per sample, as `Gradient2Limit._update` in 0.5.4 does it (RTTs as nanoseconds in doubles):

    1. long = the long average with this RTT added (mean of the first 10, then exponential over
       `long_window`); short = this RTT itself (0.5.4 has no short average: its shortWindow is
       deprecated and ignored).
    2. long / short > 2 (latency fell back after a long slow period): the long average is cut
       by 5% at once instead of waiting for the average to decay.
    3. App-limited (`inflight < estimate / 2`): unchanged.
    4. gradient = clamp(rtt_tolerance x long / short, 0.5, 1.0); new = estimate x gradient +
       queue_size, smoothed `estimate x (1 - smoothing) + new x smoothing`, clamped to
       [min_limit, max_concurrency]. The limit is the estimate truncated.
    """

    def __init__(self, settings: Gradient2Settings | None = None) -> None:
        self.settings = settings or Gradient2Settings()
        self._long_rtt = ExpAverage(self.settings.long_window, 10)
        self._estimate = float(self.settings.initial_limit)
        self._limit = self.settings.initial_limit
        self._last_rtt_ns = 0

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def long_rtt_s(self) -> float:
        """The long-run average RTT the gradient compares each sample with."""
        return self._long_rtt.value / 1e9

    def on_sample(self, start_s: float, rtt_s: float, inflight: int, dropped: bool) -> None:
        del start_s, dropped  # the reference ignores drops here too
        self._last_rtt_ns = to_ns(rtt_s)
        short = float(self._last_rtt_ns)
        long = self._long_rtt.add(short)
        if long / short > 2:
            self._long_rtt.value *= 0.95
        if inflight < self._estimate / 2:
            self._limit = int(self._estimate)
            return
        settings = self.settings
        estimate = self._estimate
        gradient = max(0.5, min(1.0, settings.rtt_tolerance * long / short))
        target = estimate * gradient + settings.queue_size
        target = estimate * (1 - settings.smoothing) + target * settings.smoothing
        bounded = min(float(settings.max_concurrency), target)
        self._estimate = max(float(settings.min_limit), bounded)
        self._limit = int(self._estimate)

    def __repr__(self) -> str:
        return f"Gradient2Limit(limit={self._limit}, long_rtt_s={self.long_rtt_s})"
