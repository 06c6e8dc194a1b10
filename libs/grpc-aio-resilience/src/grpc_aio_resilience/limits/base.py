"""The `Limit` protocol every algorithm implements, and the helpers they share."""

from __future__ import annotations

import math
from typing import Protocol


class Limit(Protocol):
    """A concurrency limit that learns from samples (the reference's `Limit` interface).

    `on_sample(start_s, rtt_s, inflight, dropped)` is `onSample(startTime, rtt, inflight,
    didDrop)`: when the call started (monotonic seconds, from the admission layer's `Clock`),
    how long it took, how many calls were in flight when it started, and whether it was dropped
    (timed out or refused downstream). `limit` is the whole number of calls to admit at once.
    """

    @property
    def limit(self) -> int: ...

    def on_sample(self, start_s: float, rtt_s: float, inflight: int, dropped: bool) -> None: ...


def to_ns(seconds: float) -> int:
    """Seconds as whole nanoseconds. The reference keeps time as `long` nanoseconds; doing the
    same keeps its integer comparisons and `minRTT / RTT` ratios bit for bit."""
    return round(seconds * 1e9)


def from_ns(nanoseconds: int) -> float:
    return nanoseconds / 1e9


def log10_root(n: int) -> int:
    """`Log10RootIntFunction.create(0)`: max(1, floor(log10(n))) below 1000, floor(log10(n))
    above (so 1 up to 99, 2 from 100, 3 from 1000). Java's log10(0) is -inf, which also gives 1."""
    if n < 1000:
        return 1 if n < 10 else max(1, int(math.log10(n)))
    return int(math.log10(n))


def check_positive(name: str, value: float) -> None:
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
