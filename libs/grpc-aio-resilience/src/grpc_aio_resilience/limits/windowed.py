"""One aggregated sample per time window for the limit inside (the reference's `WindowedLimit`
with its default average window), so a noisy per-call RTT moves the limit at most once a window."""

from __future__ import annotations

from dataclasses import dataclass

from grpc_aio_resilience.limits.base import Limit, from_ns, to_ns


@dataclass(frozen=True)
class WindowedSettings:
    """`WindowedLimit.Builder`'s settings and defaults."""

    # A window lasts twice its fastest RTT, kept within [min_window_s, max_window_s] (>= 0.1 s).
    min_window_s: float = 1.0
    max_window_s: float = 1.0
    # Samples a window needs before it reaches the limit inside (>= 10).
    window_size: int = 10
    # Faster calls are ignored (cache hits and refusals say nothing about the queue).
    min_rtt_threshold_s: float = 100e-6

    def __post_init__(self) -> None:
        if self.min_window_s < 0.1 or self.max_window_s < 0.1:
            raise ValueError("min_window_s and max_window_s must be >= 0.1")
        if self.window_size < 10:
            raise ValueError(f"window_size must be >= 10, got {self.window_size}")


class _Window:
    def __init__(self) -> None:
        self.min_rtt_ns: int | None = None
        self.sum_ns = 0
        self.max_inflight = 0
        self.count = 0
        self.dropped = False

    def add(self, rtt_ns: int, inflight: int, dropped: bool) -> None:
        self.min_rtt_ns = rtt_ns if self.min_rtt_ns is None else min(self.min_rtt_ns, rtt_ns)
        self.sum_ns += rtt_ns
        self.max_inflight = max(self.max_inflight, inflight)
        self.count += 1
        self.dropped = self.dropped or dropped


class WindowedLimit:
    """Per sample, as `WindowedLimit.onSample` does it: an RTT under the threshold is ignored;
    others join the window (min RTT, sum, max in flight, any drop). When a sample ends after the
    window's deadline, the window closes: the next deadline is that end plus twice the window's
    min RTT (within the bounds), and a window of at least `window_size` samples reaches the
    limit inside as one sample: the start of the closing call, the mean RTT (whole nanoseconds,
    truncated like the Java's long division), the max in flight and whether any call dropped.
    """

    def __init__(self, delegate: Limit, settings: WindowedSettings | None = None) -> None:
        self.settings = settings or WindowedSettings()
        self.delegate = delegate
        self._min_window_ns = to_ns(self.settings.min_window_s)
        self._max_window_ns = to_ns(self.settings.max_window_s)
        self._threshold_ns = to_ns(self.settings.min_rtt_threshold_s)
        self._next_update_ns = 0
        self._window = _Window()

    @property
    def limit(self) -> int:
        return self.delegate.limit

    def on_sample(self, start_s: float, rtt_s: float, inflight: int, dropped: bool) -> None:
        start_ns, rtt_ns = to_ns(start_s), to_ns(rtt_s)
        if rtt_ns < self._threshold_ns:
            return
        self._window.add(rtt_ns, inflight, dropped)
        end_ns = start_ns + rtt_ns
        if end_ns <= self._next_update_ns:
            return
        window, self._window = self._window, _Window()
        assert window.min_rtt_ns is not None  # this sample is in it
        span = min(max(window.min_rtt_ns * 2, self._min_window_ns), self._max_window_ns)
        self._next_update_ns = end_ns + span
        if window.count >= self.settings.window_size:
            mean_ns = window.sum_ns // window.count
            self.delegate.on_sample(start_s, from_ns(mean_ns), window.max_inflight, window.dropped)

    def __repr__(self) -> str:
        return f"WindowedLimit({self.delegate!r})"
