"""AIMDLimit, FixedLimit and WindowedLimit on their own, with the reference's defaults."""

from __future__ import annotations

import pytest

from grpc_aio_resilience.limits import (
    AIMDLimit,
    AIMDSettings,
    FixedLimit,
    Limit,
    WindowedLimit,
    WindowedSettings,
)

MS = 1e-3


def test_aimd_adds_one_while_at_least_half_the_limit_is_in_flight() -> None:
    aimd = AIMDLimit()
    aimd.on_sample(0.0, 10 * MS, 10, False)
    assert aimd.limit == 21
    aimd.on_sample(0.0, 10 * MS, 10, False)  # 10 x 2 < 21: app-limited
    assert aimd.limit == 21


def test_aimd_backs_off_by_0_9_truncated_on_drops() -> None:
    aimd = AIMDLimit(AIMDSettings(min_limit=1))
    seen = []
    for _ in range(4):
        aimd.on_sample(0.0, 10 * MS, 20, True)
        seen.append(aimd.limit)
    assert seen == [18, 16, 14, 12]  # int(20 x 0.9), int(16.2), int(14.4), int(12.6)


def test_aimd_never_goes_below_min_limit_which_defaults_to_the_initial_limit() -> None:
    aimd = AIMDLimit()
    aimd.on_sample(0.0, 10 * MS, 20, True)
    assert aimd.limit == 20


def test_aimd_treats_a_call_slower_than_the_timeout_as_a_drop() -> None:
    aimd = AIMDLimit(AIMDSettings(initial_limit=50, min_limit=1))
    aimd.on_sample(0.0, 5.0, 1, False)  # exactly the 5 s timeout: not a drop
    assert aimd.limit == 50
    aimd.on_sample(0.0, 5.001, 1, False)
    assert aimd.limit == 45


def test_aimd_caps_at_max_limit_and_checks_its_ratio() -> None:
    aimd = AIMDLimit(AIMDSettings(initial_limit=200))
    aimd.on_sample(0.0, 10 * MS, 200, False)
    assert aimd.limit == 200
    with pytest.raises(ValueError, match="backoff_ratio"):
        AIMDSettings(backoff_ratio=0.4)


def test_fixed_limit_ignores_every_sample() -> None:
    fixed = FixedLimit(7)
    fixed.on_sample(0.0, 10.0, 100, True)
    assert fixed.limit == 7
    with pytest.raises(ValueError):
        FixedLimit(0)


class Recorder:
    """A delegate limit that records the samples it is given."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, int, bool]] = []

    @property
    def limit(self) -> int:
        return len(self.samples)

    def on_sample(self, start_s: float, rtt_s: float, inflight: int, dropped: bool) -> None:
        self.samples.append((start_s, rtt_s, inflight, dropped))


def test_windowed_sends_one_averaged_sample_per_full_window() -> None:
    recorder = Recorder()
    windowed: Limit = WindowedLimit(recorder)
    windowed.on_sample(0.0, 10 * MS, 1, False)  # closes the empty first window: too small
    assert recorder.samples == []
    for i in range(10):  # ends within the next second: accumulated
        windowed.on_sample(0.1 + i * 0.05, (10 + 2 * i) * MS, i, i == 3)
    windowed.on_sample(1.2, 30 * MS, 2, False)  # ends after 0.01 + 1 s: the window closes
    assert len(recorder.samples) == 1
    start_s, rtt_s, inflight, dropped = recorder.samples[0]
    assert start_s == 1.2 and inflight == 9 and dropped
    assert rtt_s == pytest.approx((sum(10 + 2 * i for i in range(10)) + 30) / 11 * MS)


def test_windowed_ignores_calls_faster_than_the_threshold() -> None:
    recorder = Recorder()
    windowed = WindowedLimit(recorder, WindowedSettings(min_rtt_threshold_s=1 * MS))
    windowed.on_sample(0.0, 10 * MS, 1, False)
    for i in range(20):
        windowed.on_sample(0.1 + i * 0.1, 0.5 * MS, 1, False)
    assert recorder.samples == []
