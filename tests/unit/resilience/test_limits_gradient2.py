"""Gradient2Limit on its own, with the reference's defaults: initial and min limit 20, max 200,
smoothing 0.2, queue size 4, long window 600 samples, RTT tolerance 1.5."""

from __future__ import annotations

import itertools

import pytest

from grpc_aio_resilience.limits import Gradient2Limit, Gradient2Settings

MS = 1e-3


def feed(limit: Gradient2Limit, rtt_s: float, count: int, inflight: int = 200) -> list[int]:
    seen = []
    for _ in range(count):
        limit.on_sample(0.0, rtt_s, inflight, False)
        seen.append(limit.limit)
    return seen


def test_steady_latency_grows_the_limit_by_the_smoothed_queue_allowance() -> None:
    gradient = Gradient2Limit()
    # gradient 1: new = L + 4, smoothed L x 0.8 + (L + 4) x 0.2 = L + 0.8 per sample
    assert feed(gradient, 10 * MS, 6) == [20, 21, 22, 23, 24, 24]
    assert feed(gradient, 10 * MS, 300)[-1] == 200  # capped at max_concurrency


def test_latency_rising_over_the_long_average_shrinks_the_limit() -> None:
    gradient = Gradient2Limit(Gradient2Settings(initial_limit=200, min_limit=20))
    feed(gradient, 10 * MS, 10)
    assert gradient.limit == 200
    falling = feed(gradient, 40 * MS, 15)  # gradient clamped to 0.5: L -> 0.9 L + 0.8
    assert falling[0] == 180
    assert all(later < earlier for earlier, later in itertools.pairwise(falling))
    assert feed(gradient, 40 * MS, 100)[-1] == 20  # down to min_limit, no further


def test_a_rise_within_the_tolerance_does_not_shrink_it() -> None:
    unsmoothed = Gradient2Settings(initial_limit=100, smoothing=1.0)
    gradient = Gradient2Limit(unsmoothed)
    assert feed(gradient, 10 * MS, 10)[-1] == 140  # + queue size 4 per sample
    assert feed(gradient, 14 * MS, 1) == [144]  # 1.5 x 10.01 / 14 > 1: gradient 1
    assert feed(gradient, 16 * MS, 1) == [139]  # 1.5 x 10.03 / 16 = 0.94: 144 x 0.94 + 4


def test_app_limited_calls_leave_the_limit_alone() -> None:
    gradient = Gradient2Limit()
    assert feed(gradient, 10 * MS, 20, inflight=9) == [20] * 20  # 9 < 20 / 2


def test_latency_falling_far_below_the_long_average_cuts_it_by_5_percent() -> None:
    gradient = Gradient2Limit()
    feed(gradient, 40 * MS, 10)
    assert gradient.long_rtt_s == pytest.approx(40 * MS)
    feed(gradient, 10 * MS, 1)
    averaged = 40 * MS * (1 - 2 / 601) + 10 * MS * 2 / 601
    assert gradient.long_rtt_s == pytest.approx(averaged * 0.95)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="rtt_tolerance"):
        Gradient2Settings(rtt_tolerance=0.9)
