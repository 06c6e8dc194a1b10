"""Additive increase, multiplicative decrease on drops (the reference's `AIMDLimit`)."""

from __future__ import annotations

from dataclasses import dataclass

from grpc_aio_resilience.limits.base import check_positive, to_ns


@dataclass(frozen=True)
class AIMDSettings:
    """`AIMDLimit.Builder`'s settings and defaults."""

    initial_limit: int = 20
    min_limit: int = 20
    max_limit: int = 200
    # Must lie in [0.5, 1.0), as the reference's builder checks.
    backoff_ratio: float = 0.9
    # A sample slower than this counts as a drop (the reference's 5 s default).
    timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if not 0.5 <= self.backoff_ratio < 1.0:
            raise ValueError(f"backoff_ratio must be in [0.5, 1.0), got {self.backoff_ratio}")
        check_positive("timeout_s", self.timeout_s)
        check_positive("initial_limit", self.initial_limit)


class AIMDLimit:
    """Per sample, as `AIMDLimit._update` does it:

    - dropped, or RTT above `timeout_s` (compared in whole nanoseconds): limit becomes
      `int(limit * backoff_ratio)` (truncated, so 20 -> 18 at 0.9);
    - otherwise, when `inflight * 2 >= limit` (the caller was using at least half of it): +1;
    - otherwise (app-limited) unchanged;

    then clamped to [min_limit, max_limit]. With the defaults min_limit equals initial_limit, so
    the limit never falls below 20 unless `min_limit` is lowered.
    """

    def __init__(self, settings: AIMDSettings | None = None) -> None:
        self.settings = settings or AIMDSettings()
        self._timeout_ns = to_ns(self.settings.timeout_s)
        self._limit = self.settings.initial_limit

    @property
    def limit(self) -> int:
        return self._limit

    def on_sample(self, start_s: float, rtt_s: float, inflight: int, dropped: bool) -> None:
        del start_s
        current = self._limit
        if dropped or to_ns(rtt_s) > self._timeout_ns:
            current = int(current * self.settings.backoff_ratio)
        elif inflight * 2 >= current:
            current += 1
        self._limit = min(self.settings.max_limit, max(self.settings.min_limit, current))

    def __repr__(self) -> str:
        return f"AIMDLimit(limit={self._limit})"
